"""Page ranges: how a document's rung 1 is divided between tasks (`plan`), how one range's pages
are decided (`decide`) and how the ranges' outcomes are merged (`merge`). Each range's work state
is one storage object (`pagefleet.workers.store.work`).

    pages 1..H        the split task itself (the probe child reads them only when they are the whole
                      document, E = split_range_pages or fewer: a longer one's ranges start at once)
    H+1.., S at a time  `pagefleet.split_range` tasks, a chord, so every core works on one big document
                        (H = E, or down to RANGE_MIN_PAGES where that makes about eight ranges:
                        26–192 pages; S = H, growing so no document needs more than split_max_ranges;
                        cut evenly, and the last two ranges' pages as ranges halving in size)

A document of at most E pages stays one task.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from pagefleet.workers.model import PageRecord, PendingPage
from pagefleet.workers.settings import Settings
from pagefleet.workers.store.work import RangeOutcome

_PIECES = 8  # a document too short for this many ranges of split_range_pages gets shorter ones
_TAPER = 2  # the pages of the last this many equal ranges are cut into ranges halving in size
_TAPER_EXTRA = (
    2  # a tapered tail holds at most this many more ranges than the equal ones it replaces
)
_FLOOR = 3  # pages: no range of the tail shorter (a range task has its fixed cost)
# a document too short for about _PIECES ranges of `advanced.split_range_pages` gets ranges down to
# this size: the last range runs alone while the other cores idle, so a shorter one wastes less
RANGE_MIN_PAGES = 10


def plan(page_count: int, settings: Settings) -> list[tuple[int, int]]:
    """[(first, last)]: the split task's own pages first, then the range tasks' ranges in the order
    they are sent. A document of at most split_range_pages is one range; a longer one is cut into
    ranges of split_range_pages, or fewer pages where that makes about `_PIECES` ranges (never
    fewer than RANGE_MIN_PAGES), and the pages the last `_TAPER` of them would hold are cut
    into ranges halving in size (13, 7, 3, 3 where two of 13 were): workers take ranges in order,
    and the last range a core takes runs alone while the others idle — pages differ several-fold
    in cost, so a 13-page range of heavy pages kept one of two cores idle for 0.12–0.16 s of a
    100-page document's 0.83–0.94 (worker logs, a warm fleet). More pages than split_max_ranges
    ranges hold make the range tasks' ranges longer."""
    if page_count <= settings.advanced.split_range_pages:
        return [(1, page_count)]
    head = min(
        settings.advanced.split_range_pages, max(RANGE_MIN_PAGES, math.ceil(page_count / _PIECES))
    )
    rest = page_count - head
    taper = settings.advanced.split_max_ranges > _TAPER + _TAPER_EXTRA
    size = max(
        head,
        math.ceil(rest / (settings.advanced.split_max_ranges - (_TAPER_EXTRA if taper else 0))),
    )
    sizes = tapered(even(rest, size)) if taper else even(rest, size)
    plan, first = [(1, head)], head + 1
    for n in sizes:
        plan.append((first, first + n - 1))
        first += n
    return plan


def even(pages: int, size: int) -> list[int]:
    """`pages` cut into as few ranges of at most `size` as it takes, of sizes differing by one at most
    (larger first)."""
    if pages <= 0:
        return []
    count = math.ceil(pages / size)
    return [pages // count + (1 if i < pages % count else 0) for i in range(count)]


def tapered(sizes: list[int]) -> list[int]:
    """`sizes` (non-growing) with what the last `_TAPER` hold cut into pieces halving in size,
    none under `_FLOOR` (a tail under 2 × `_FLOOR` is left as it is): the last piece a worker takes
    is short, so no core idles long while another ends a long one. Page ranges (`plan`) and the
    batches of a submission of small documents (`pagefleet.workers.split.submit.batch_plan`)."""
    tail = sum(sizes[-_TAPER:])
    return [*sizes[:-_TAPER], *_halving(tail)] if tail >= 2 * _FLOOR else sizes


def _halving(pages: int) -> list[int]:
    """`pages` as at most _TAPER + _TAPER_EXTRA ranges halving in size, none under _FLOOR pages:
    26 → 13, 7, 3, 3; 50 → 25, 13, 6, 6; 16 → 8, 4, 4."""
    sizes: list[int] = []
    while pages > 0:
        last = pages < 2 * _FLOOR or len(sizes) == _TAPER + _TAPER_EXTRA - 1
        sizes.append(pages if last else math.ceil(pages / 2))
        pages -= sizes[-1]
    return sizes


def decide(
    pages: Iterable[dict[str, Any]],
    first: int,
    last: int,
    *,
    ocr: str,
    judge: Callable[[dict[str, Any]], PageRecord | PendingPage],
    unread: Callable[[PendingPage], PageRecord],
) -> tuple[RangeOutcome, list[PageRecord], list[PendingPage]]:
    """Rung 1 for the pages of one range: records (accepted, or quarantined when OCR is off) and
    the pages that climb, by queue, the pages carrying the most image bytes first (a dense scan
    takes Tesseract longest: sent out last, it would run alone while the other cores idle)."""
    outcome = RangeOutcome(first, last)
    records: list[PageRecord] = []
    pending: list[PendingPage] = []
    cost: dict[int, int] = {}
    for page in pages:
        result = judge(page)
        if isinstance(result, PageRecord):
            records.append(result)
            outcome.accepted += 1
        elif ocr == "off":
            records.append(unread(result))
        else:
            pending.append(result)
            outcome.pending.setdefault(result.queue, []).append(result.number)
            cost[result.number] = int(page.get("image_bytes") or 0)
    for (
        numbers
    ) in outcome.pending.values():  # heaviest first: the longest OCR pages do not start last
        numbers.sort(key=lambda n: -cost[n])
    return outcome, records, pending


def merge(outcomes: Iterable[RangeOutcome]) -> tuple[int, dict[str, list[int]]]:
    accepted, pending = 0, {}
    for o in sorted(outcomes, key=lambda o: o.first):
        accepted += o.accepted
        for queue, numbers in o.pending.items():
            pending.setdefault(queue, []).extend(numbers)
    return accepted, pending
