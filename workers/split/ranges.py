"""Page ranges: how a document's rung 1 is divided between tasks, and its work state, one storage
object per range.

    pages 1..H        the split task itself (the probe child reads them only when they are the whole
                      document, E = split_range_pages or fewer: a longer one's ranges start at once)
    H+1.., S at a time  `pagefleet.split_range` tasks, a chord, so every core works on one big document
                        (H = E, or down to split_range_min_pages where that makes about eight ranges:
                        26–192 pages; S = H, growing so no document needs more than split_max_ranges;
                        cut evenly, and the last two ranges' pages as ranges halving in size)

A document of at most E pages stays one task. Every range writes one object,
`.pagefleet/work/<job>/ranges/<first>-<last>.json` = {"records": [accepted or quarantined page
records], "pending": [pages that climb]}, so storage round trips grow with ranges, not pages.
With structure on, a document of several ranges is decided without blocks first; each object also
holds its pages' layout evidence ("layouts"), and once every range is in, the document-wide font
statistics and running furniture are read from all of them (`workers.split.document.structure_plan`)
and a task per range (`structure_range`, a chord) adds the blocks and the table check, rewriting
its object once ("structured").
Pages the OCR stage finishes keep one object each (`pages/<n>.json`): they are few and slow anyway.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from workers.store import keys
from workers.model import PageRecord, PendingPage
from workers.settings import Settings
from workers.store.storage import Storage


@dataclass
class RangeOutcome:
    first: int
    last: int
    accepted: int = 0
    pending: dict[str, list[int]] = field(default_factory=dict)  # queue -> page numbers

    def as_dict(self) -> dict[str, Any]:
        return {"first": self.first, "last": self.last, "accepted": self.accepted, "pending": self.pending}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RangeOutcome":
        return cls(int(data["first"]), int(data["last"]), int(data["accepted"]),
                   {q: list(map(int, ns)) for q, ns in data["pending"].items()})


_PIECES = 8  # a document too short for this many ranges of split_range_pages gets shorter ones
_TAPER = 2  # the pages of the last this many equal ranges are cut into ranges halving in size
_TAPER_EXTRA = 2  # a tapered tail holds at most this many more ranges than the equal ones it replaces
_FLOOR = 3  # pages: no range of the tail shorter (a range task has its fixed cost)


def plan(page_count: int, settings: Settings) -> list[tuple[int, int]]:
    """[(first, last)]: the split task's own pages first, then the range tasks' ranges in the order
    they are sent. A document of at most split_range_pages is one range; a longer one is cut into
    ranges of split_range_pages, or fewer pages where that makes about `_PIECES` ranges (never
    fewer than split_range_min_pages), and the pages the last `_TAPER` of them would hold are cut
    into ranges halving in size (13, 7, 3, 3 where two of 13 were): workers take ranges in order,
    and the last range a core takes runs alone while the others idle — pages differ several-fold
    in cost, so a 13-page range of heavy pages kept one of two cores idle for 0.12–0.16 s of a
    100-page document's 0.83–0.94 (worker logs, a warm fleet). More pages than split_max_ranges
    ranges hold make the range tasks' ranges longer."""
    if page_count <= settings.split_range_pages:
        return [(1, page_count)]
    head = min(settings.split_range_pages, max(settings.split_range_min_pages, math.ceil(page_count / _PIECES)))
    rest = page_count - head
    taper = settings.split_max_ranges > _TAPER + _TAPER_EXTRA
    size = max(head, math.ceil(rest / (settings.split_max_ranges - (_TAPER_EXTRA if taper else 0))))
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
    batches of a submission of small documents (`workers.split.submit.batch_plan`)."""
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


def key(job_id: str, first: int, last: int) -> str:
    return keys.work(job_id, "ranges", f"{first:05d}-{last:05d}.json")


_LAYOUT_FIELDS = ("number", "text", "height", "layout")  # what the document-wide structure pass reads


def store(storage: Storage, job_id: str, outcome: RangeOutcome, records: Sequence[PageRecord],
          pending: Sequence[PendingPage], pages: Sequence[dict[str, Any]] | None = None) -> None:
    """`pages`: the range's extracted pages when their blocks wait for the document-wide structure
    pass (`layouts`: each page's number, raw text, height and layout evidence)."""
    state: dict[str, Any] = {"outcome": outcome.as_dict(), "records": [r.model_dump(mode="json") for r in records],
                             "pending": [p.model_dump(mode="json") for p in pending]}
    if pages is not None:
        state["layouts"] = [{k: page[k] for k in _LAYOUT_FIELDS if k in page} for page in pages]
    storage.put_json(key(job_id, outcome.first, outcome.last), state, compact=True)


def _stored(storage: Storage, name: str) -> bytes | None:
    """A range object's bytes; None while the range is not written."""
    try:
        return storage.get_bytes(name)
    except KeyError:
        return None


def states(storage: Storage, job_id: str, manifest: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(storage key, range object) for every range written so far, in page order."""
    found = []
    for first, last in manifest.get("ranges") or []:
        name = key(job_id, first, last)
        if (data := _stored(storage, name)) is not None:
            found.append((name, json.loads(data.decode("utf-8"))))
    return found


def stored_outcome(storage: Storage, job_id: str, first: int, last: int) -> RangeOutcome | None:
    """A range's outcome as its object recorded it; None while the range is not written yet."""
    try:
        return RangeOutcome.from_dict(storage.get_json(key(job_id, first, last))["outcome"])
    except KeyError:
        return None


def decide(pages: Iterable[dict[str, Any]], first: int, last: int, *, ocr: str,
           judge: Callable[[dict[str, Any]], PageRecord | PendingPage],
           unread: Callable[[PendingPage], PageRecord]) -> tuple[RangeOutcome, list[PageRecord], list[PendingPage]]:
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
    for numbers in outcome.pending.values():  # heaviest first: the longest OCR pages do not start last
        numbers.sort(key=lambda n: -cost[n])
    return outcome, records, pending


def merge(outcomes: Iterable[RangeOutcome]) -> tuple[int, dict[str, list[int]]]:
    accepted, pending = 0, {}
    for o in sorted(outcomes, key=lambda o: o.first):
        accepted += o.accepted
        for queue, numbers in o.pending.items():
            pending.setdefault(queue, []).extend(numbers)
    return accepted, pending


class _Numbered(BaseModel):
    number: int


class _RangeRecords(BaseModel):
    """What the collector reads of a range object: its records, and which pages climbed."""

    records: list[PageRecord]
    pending: list[_Numbered]


def iter_records(storage: Storage, job_id: str, manifest: dict[str, Any],
                 ready: Callable[[int], None] | None = None) -> Iterator[tuple[int, PageRecord | None]]:
    """(number, record) for every page of the job in page order, one range object at a time (the
    range's records, then its pages the OCR stage finished, one object each): the collector never
    holds more than one range. None for a page not recorded yet (its range object, or its OCR
    page's object, is not written). `ready(first)`, when given, is called before a range is read
    (`workers.collect.stream.Waiter`: it returns once that range is stored)."""
    count = int(manifest["page_count"])
    number = 1
    for first, last in sorted((int(f), int(l)) for f, l in manifest.get("ranges") or []):
        for n in range(number, min(first, count + 1)):  # pages no range covers: one object each
            yield n, _page_object(storage, job_id, n)
        if ready is not None:
            ready(first)
        found = _range_records(storage, job_id, first, last)
        for n in range(max(first, number), min(last, count) + 1):
            yield n, found.get(n)
        number = max(number, last + 1)
    for n in range(number, count + 1):
        yield n, _page_object(storage, job_id, n)


def _range_records(storage: Storage, job_id: str, first: int, last: int) -> dict[int, PageRecord]:
    data = _stored(storage, key(job_id, first, last))
    if data is None:
        return {}  # not written yet: its pages are missing
    # parsed and validated in one pass (pydantic's JSON reader: no dict of every page first)
    state = _RangeRecords.model_validate_json(data)
    found = {record.number: record for record in state.records}
    for page in state.pending:
        record = _page_object(storage, job_id, page.number)
        if record is not None:
            found[page.number] = record
    return found


def _page_object(storage: Storage, job_id: str, number: int) -> PageRecord | None:
    try:
        return PageRecord.model_validate(storage.get_json(keys.page(job_id, number)))
    except KeyError:
        return None


def pending_page(storage: Storage, job_id: str, number: int) -> PendingPage:
    """A climbing page's rung-1 state (the OCR stage's input). Raises KeyError."""
    try:
        return PendingPage.model_validate(storage.get_json(keys.pending(job_id, number)))
    except KeyError:
        pass
    manifest = storage.get_json(keys.job_manifest(job_id))
    for first, last in manifest.get("ranges") or []:
        if first <= number <= last:
            state = storage.get_json(key(job_id, first, last))
            for raw in state["pending"]:
                if int(raw["number"]) == number:
                    return PendingPage.model_validate(raw)
    raise KeyError(keys.pending(job_id, number))
