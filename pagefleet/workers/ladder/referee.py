"""Rows that read both ways: an independent reading decides, or the page is not accepted as is.

A row read from its glyphs (`pagefleet.workers.pdf.glyphlines`) whose two directions give two different
texts, with nothing in the glyphs to choose between them (`Hello שלום` drawn as `Hello םולש`: an LTR
paragraph, or an RTL one?), comes with its other reading (`unresolved_rows`). Here, in rung 1 and
before the gate, Poppler's reading of the same page (`pdftotext -tsv`, one call per window of
pages, sandboxed like every parser) is the referee, word by word over the row's box:

    Poppler's words in the row's box ─► closer to the other reading ─► the row reads that way
                                     ─► closer to the chosen one   ─► it stands
                                     ─► no clear answer            ─► line_order_unresolved: the
                                                                      page is not accepted as is;
                                                                      it climbs to OCR, and is
                                                                      refused if no rung settles it

Both readings are the same characters in another order, so the page's text keeps its length and
every later offset; the row's own word-gap repairs and glyph clusters are dropped with it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Any

from pagefleet.workers.ladder.tablecheck import poppler_words

log = logging.getLogger(__name__)
MARGIN = 0.15  # how much closer to Poppler's words one reading must be to win
REASON = "line_order_unresolved"


def settle(page: dict[str, Any], pdf: str, timeout_s: float = 30.0) -> dict[str, Any]:
    """`page` with each row that reads both ways settled by Poppler's words; the page is marked
    `line_order_unresolved` where one could not be (no Poppler, or no clear answer)."""
    rows = page.get("unresolved_rows")
    if not rows:
        return page
    words = poppler_words(pdf, int(page["number"]), timeout_s) if pdf else None
    text, dropped, open_rows = page["text"], [], 0
    for start, end, other, box in rows:
        ours = text[start:end]
        if len(other) != len(ours) or not 0 <= start <= end <= len(text):
            open_rows += 1
            continue
        choice = _closer(ours, other, _inside(words, box)) if words is not None else None
        if choice is None:
            open_rows += 1
        elif choice == other and other != ours:
            text = text[:start] + other + text[end:]
            dropped.append((start, end))
    settled = {**page, "text": text, "unresolved_rows": [], "line_order_unresolved": open_rows}
    for name in ("gap_repairs", "glyph_clusters"):
        if dropped and isinstance(page.get(name), list):
            settled[name] = [e for e in page[name] if not any(a <= e[0] < b for a, b in dropped)]
    if open_rows:
        log.info(
            "page %s: %d row(s) read both ways and Poppler did not settle them",
            page.get("number"),
            open_rows,
        )
    return settled


def _inside(words: Sequence[Any], box: Sequence[float]) -> list[str]:
    x0, y0, x1, y1 = box
    return [
        w[4]
        for w in words
        if x0 - 2 <= (w[0] + w[2]) / 2 <= x1 + 2 and y0 - 2 <= (w[1] + w[3]) / 2 <= y1 + 2
    ]


def _closer(ours: str, other: str, reference: list[str]) -> str | None:
    """The reading whose word sequence is closer to `reference`, by a clear margin, or None."""
    if not reference:
        return None
    a = SequenceMatcher(None, ours.split(), reference, autojunk=False).ratio()
    b = SequenceMatcher(None, other.split(), reference, autojunk=False).ratio()
    if abs(a - b) < MARGIN:
        return None
    return ours if a > b else other
