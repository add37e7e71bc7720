"""Heading-aware chunks of accepted pages, each with its provenance (seed 002).

    blocks of accepted pages, in order ─► a heading closes the chunk and updates the breadcrumb
                                        ─► paragraphs / list items fill a chunk up to `max_chars`
                                        ─► a table is kept whole, or split by rows with its
                                           header rows repeated in every piece
                                        ─► a table opening a page right after one that closed
                                           the previous page (as many columns, no header of its
                                           own) gets that table's header rows
    a refused page closes the chunk: no chunk holds or crosses a page that was not accepted
    headers and footers never reach a chunk

Every element carries a citation {page, start, end} into its page's `text`. Pure functions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pagefleet.routing.structure.tables import gfm

SKIP = frozenset({"header", "footer"})


@dataclass(frozen=True)
class ChunkRules:
    max_chars: int = 1500
    min_chars: int = 0


@dataclass
class PageIn:
    number: int
    accepted: bool
    blocks: Sequence[Mapping[str, Any]]
    route: str = ""
    engine: str | None = None
    ocr_confidence: float | None = None
    warnings: Sequence[str] = ()


@dataclass
class _Piece:
    page: PageIn
    kind: str
    text: str
    start: int
    end: int
    bbox: Sequence[float] | None


@dataclass
class _Open:
    headings: list[str]
    pieces: list[_Piece] = field(default_factory=list)

    def size(self) -> int:
        return sum(len(p.text) + 2 for p in self.pieces)


def _table_pieces(page: PageIn, block: Mapping[str, Any], limit: int) -> Iterator[_Piece]:
    table = block.get("table") or {}
    rows = table.get("rows") or []
    whole = table.get("markdown") or block.get("text", "")
    head = max(1, int(table.get("header_rows") or 0))
    if len(whole) <= limit or len(rows) <= head + 1:
        yield _Piece(page, "table", whole, block["start"], block["end"], block.get("bbox"))
        return
    batch: list[list[str]] = []
    for row in rows[head:]:
        if batch and len(gfm([*rows[:head], *batch, row])) > limit:
            yield _Piece(
                page,
                "table",
                gfm([*rows[:head], *batch]),
                block["start"],
                block["end"],
                block.get("bbox"),
            )
            batch = []
        batch.append(row)
    if batch:
        yield _Piece(
            page,
            "table",
            gfm([*rows[:head], *batch]),
            block["start"],
            block["end"],
            block.get("bbox"),
        )


def _text_pieces(page: PageIn, block: Mapping[str, Any], limit: int) -> Iterator[_Piece]:
    text, start = block.get("text", ""), int(block["start"])
    while len(text) > limit:
        cut = max(text.rfind("\n", 0, limit), text.rfind(" ", 0, limit))
        cut = cut if cut > 0 else limit
        yield _Piece(
            page,
            block["type"],
            text[:cut].rstrip(),
            start,
            start + len(text[:cut].rstrip()),
            block.get("bbox"),
        )
        rest = text[cut:]
        skipped = len(rest) - len(rest.lstrip())
        start, text = start + cut + skipped, rest.lstrip()
    if text:
        yield _Piece(page, block["type"], text, start, start + len(text), block.get("bbox"))


def _header(block: Mapping[str, Any]) -> list[list[str]] | None:
    """A table block's header rows (None for any other block: only a table can be continued)."""
    table = block.get("table") or {}
    rows = (table.get("rows") or []) if block["type"] == "table" else []
    return [list(r) for r in rows[: max(1, int(table.get("header_rows") or 0))]] if rows else None


def continued_table(block: Mapping[str, Any], header: list[list[str]]) -> Mapping[str, Any]:
    """A table that opens a page right after a table that closed the previous one, with as many
    columns and without the header repeated, continues it: its chunks get that header."""
    table = block.get("table") or {}
    rows = [list(r) for r in table.get("rows") or []]
    if not rows or len(rows[0]) != len(header[0]) or rows[: len(header)] == header:
        return block
    joined = [*header, *rows]
    return {
        **block,
        "table": {**table, "rows": joined, "header_rows": len(header), "markdown": gfm(joined)},
    }


def _emit(open_: _Open, ctx: Mapping[str, Any], index: int) -> dict[str, Any]:
    pieces = open_.pieces
    text = "\n\n".join(p.text for p in pieces)
    pages = sorted({p.page.number for p in pieces})
    by_page = {p.page.number: p.page for p in pieces}
    confidences = [pg.ocr_confidence for pg in by_page.values() if pg.ocr_confidence is not None]
    crumb = " > ".join(open_.headings)
    return {
        "chunk_id": f"{ctx['doc_sha256'][:16]}-{index:05d}",
        "doc_sha256": ctx["doc_sha256"],
        "filename": ctx["filename"],
        "pages": pages,
        "bboxes": [{"page": p.page.number, "bbox": p.bbox} for p in pieces if p.bbox],
        "headings": list(open_.headings),
        "element_types": sorted({p.kind for p in pieces}),
        "text": text,
        "text_for_embedding": f"{crumb}\n\n{text}" if crumb else text,
        "routes": sorted({pg.route for pg in by_page.values()}),
        "engines": sorted({pg.engine for pg in by_page.values() if pg.engine}),
        "ocr_confidence": min(confidences) if confidences else None,
        "warnings": sorted({w for pg in by_page.values() for w in pg.warnings}),
        "pipeline_version": ctx["pipeline_version"],
        "content_hash": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "citations": [{"page": p.page.number, "start": p.start, "end": p.end} for p in pieces],
    }


def _pieces(page: PageIn, block: Mapping[str, Any], limit: int) -> Iterator[_Piece]:
    if block["type"] == "table":
        return _table_pieces(page, block, limit)
    return _text_pieces(page, block, limit)


def chunk_document(
    pages: Sequence[PageIn], ctx: Mapping[str, Any], rules: ChunkRules = ChunkRules()
) -> list[dict[str, Any]]:
    """`ctx`: doc_sha256, filename, pipeline_version."""
    return list(iter_chunks(pages, ctx, rules))


def iter_chunks(
    pages: Iterable[PageIn], ctx: Mapping[str, Any], rules: ChunkRules = ChunkRules()
) -> Iterator[dict[str, Any]]:
    """The chunks of `pages` as each one closes: a chunk is out before the pages after it are
    read (the collector feeds pages as it reads them and keeps none it no longer needs)."""
    trail: list[tuple[int, str]] = []
    current = _Open([])
    emitted = 0

    def close() -> Iterator[dict[str, Any]]:
        nonlocal current, emitted
        if current.pieces:
            yield _emit(current, ctx, emitted)
            emitted += 1
        current = _Open([t for _, t in trail])

    carried: list[list[str]] | None = None  # the header rows of a table that ended the last page
    for page in pages:
        if not page.accepted:
            yield from close()
            carried = None
            continue
        first = True
        for block in page.blocks:
            if block["type"] in SKIP or not block.get("text", "").strip():
                continue
            if first and carried is not None and block["type"] == "table":
                block = continued_table(block, carried)
            first = False
            carried = _header(block)
            if block["type"] == "heading":
                yield from close()
                level = int(block.get("level") or 1)
                trail[:] = [t for t in trail if t[0] < level] + [
                    (level, " ".join(block["text"].split()))
                ]
                current = _Open([t for _, t in trail])
            for piece in _pieces(page, block, rules.max_chars):
                if current.pieces and current.size() + len(piece.text) > rules.max_chars:
                    yield from close()
                current.pieces.append(piece)
    yield from close()
