"""The evidence of the gate's table detector (`pagefleet.routing.detectors.tables`): independent words for a
recovered table, corroboration for a suspected one, both from Poppler (`pdftotext`, sandboxed like
every parser of the source). The I/O is here; the verdict is the detector's.

    recovered table ─► cell by cell: Poppler's words (`pdftotext -tsv`, one call per 32 pages) in
                       each cell's box, order-free ─► ≥ 0.85 of the cells agree both ways? else
                    ─► pdftotext's words in a crop of the table's box ─► precision and recall ≥ 0.85?
                       no (or no reference at all) ─► table_unrecovered
    rows whose gaps line up but no table explains them (a suspicion)
                    ─► pdftotext -layout holds column-aligned rows? ─► table_unrecovered
                                                                 else ─► warning table_suspected
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache

from pagefleet.routing.detectors import word_agreement
from pagefleet.routing.evidence import Finding, GateThresholds, TableFacts
from pagefleet.routing.quality import assess_tables
from pagefleet.routing.structure.blocks import TableIn
from pagefleet.routing.structure.tables import (
    PopplerWord,
    cell_agreement,
    cell_box_agreement,
    poppler_tsv_words,
)
from pagefleet.routing.structure.tables import layout_rows as layout_rows_of
from pagefleet.workers.errors import PagefleetError
from pagefleet.workers.ladder import fallback

log = logging.getLogger(__name__)
AGREEMENT = GateThresholds().table_agreement  # cell by cell this close: no crop needed
PAD = 2.0


def _pdftotext(pdf: str, page: int, args: tuple[str, ...], timeout_s: float) -> str | None:
    try:
        text, _ = fallback.extract_page(pdf, page, timeout_s=timeout_s, args=args)
        return text
    except PagefleetError as exc:
        log.warning("pdftotext %s on page %d: %s", " ".join(args), page, exc)
        return None


def _crop(box: Sequence[float]) -> tuple[str, ...]:
    x0, y0, x1, y1 = (max(0.0, box[0] - PAD), max(0.0, box[1] - PAD), box[2] + PAD, box[3] + PAD)
    return (
        "-layout",
        "-x",
        str(int(x0)),
        "-y",
        str(int(y0)),
        "-W",
        str(int(x1 - x0 + 1)),
        "-H",
        str(int(y1 - y0 + 1)),
    )


WINDOW = 32  # pages read by one `pdftotext -tsv` call
_EVERY_PAGE = (1, 1 << 30)
_RANGE: ContextVar[tuple[int, int]] = ContextVar("pagefleet_table_pages", default=_EVERY_PAGE)


@contextmanager
def within(first: int, last: int) -> Iterator[None]:
    """Poppler's word windows start at `first` and end by `last` while a task checks the tables of
    that page range: a window reaching into the next range would be read again by its task."""
    token = _RANGE.set((first, last))
    try:
        yield
    finally:
        _RANGE.reset(token)


def _window(page: int) -> tuple[int, int]:
    lo, hi = _RANGE.get()
    if not lo <= page <= hi:
        lo, hi = _EVERY_PAGE
    first = lo + (page - lo) // WINDOW * WINDOW
    return first, min(first + WINDOW - 1, hi)


@lru_cache(maxsize=8)
def _tsv_window(
    pdf: str, first: int, last: int, stamp: tuple[int, int], timeout_s: float
) -> dict[int, list[PopplerWord]] | None:
    try:
        tsv, _ = fallback.extract_page(pdf, first, timeout_s=timeout_s, args=("-tsv",), last=last)
    except PagefleetError as exc:
        log.warning("pdftotext -tsv on pages %d-%d: %s", first, last, exc)
        return None
    return poppler_tsv_words(tsv)


def poppler_words(pdf: str, page: int, timeout_s: float = 30.0) -> list[PopplerWord] | None:
    """Poppler's words with boxes on `page` (one pdftotext call per window of up to 32 pages,
    cached; inside the range set by `within`)."""
    try:
        st = os.stat(pdf)
    except OSError:
        return None
    words = _tsv_window(pdf, *_window(page), (st.st_size, st.st_mtime_ns), timeout_s)
    return None if words is None else words.get(page, [])


def table_agreement(
    pdf: str, page: int, table: TableIn, timeout_s: float = 30.0
) -> tuple[float, float]:
    """Cell by cell against Poppler's words in each cell's box when the table has cell boxes (one
    cached pdftotext call for many pages); else, or when that disagrees, the words in a crop of
    the table's box."""
    if any(box for row in table.cells for box in row):
        words = poppler_words(pdf, page, timeout_s)
        if words:
            cells = [
                (text, box)
                for texts, boxes in zip(table.rows, table.cells)
                for text, box in zip(texts, boxes)
            ]
            by_cell = cell_box_agreement(cells, words)
            if min(by_cell) >= AGREEMENT:
                return by_cell
    reference = _pdftotext(pdf, page, _crop(table.bbox), timeout_s)
    return agreement(table, reference) if reference else (0.0, 0.0)


def agreement(table: TableIn, reference: str) -> tuple[float, float]:
    """The better of word agreement and cell agreement (pagefleet.routing.structure.tables.cell_agreement)."""
    cells = [c for row in table.rows for c in row]
    by_words = word_agreement(" ".join(cells), reference)
    by_cells = cell_agreement(cells, reference)
    return max(by_words, by_cells, key=lambda pr: min(pr))


def table_facts(
    pdf: str, page: int, tables: Sequence[TableIn], aligned_rows: int, *, timeout_s: float = 30.0
) -> TableFacts:
    """How the page's tables agree with Poppler: the worst precision and recall over `tables`, and
    whether `pdftotext -layout` holds the column-aligned rows no table explains."""
    worst = (1.0, 1.0)
    for table in tables:
        precision, recall = table_agreement(pdf, page, table, timeout_s)
        worst = (min(worst[0], precision), min(worst[1], recall))
    layout_rows = 0
    if aligned_rows:
        layout_rows = layout_rows_of(_pdftotext(pdf, page, ("-layout",), timeout_s) or "")
    return TableFacts(
        tables=len(tables), worst=worst, aligned_rows=aligned_rows, layout_rows=layout_rows
    )


def check_tables(
    pdf: str, page: int, tables: Sequence[TableIn], aligned_rows: int, *, timeout_s: float = 30.0
) -> Finding:
    """The gate's table verdict on the page (`pagefleet.routing.quality.assess_tables`)."""
    return assess_tables(table_facts(pdf, page, tables, aligned_rows, timeout_s=timeout_s))
