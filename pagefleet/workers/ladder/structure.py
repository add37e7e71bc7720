"""Blocks for text-layer pages, from the structure evidence the sandbox child gathered.

    all pages' `layout` ─► DocumentLayout: body/heading font styles, running headers/footers
    one page + its edit map ─► lines with display ranges ─► tables (cells normalized, logical
    column order, GFM) ─► pagefleet.routing.structure.blocks.page_blocks

Only plain data comes in (the child's JSON); nothing here opens the PDF. A page whose layout does
not add up to its text (line lengths, `raw_spans`) gets no geometric blocks: one paragraph block
per blank-line-separated run, so `blocks` is never missing on an accepted page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pagefleet.routing.evidence import Finding
from pagefleet.routing.normalize import normalize
from pagefleet.routing.structure.blocks import (
    LineIn,
    TableIn,
    direction,
    page_blocks,
    same_baseline_rows,
)
from pagefleet.routing.structure.furniture import BandLine, running_furniture
from pagefleet.routing.structure.headings import FontStats, font_stats
from pagefleet.routing.structure.markdown import blocks_markdown
from pagefleet.routing.structure.offsets import OffsetMap
from pagefleet.routing.structure.tables import gfm, is_rtl_table, logical_rows, spread_spans
from pagefleet.workers.ladder import recovery
from pagefleet.workers.ladder.tablecheck import check_tables
from pagefleet.workers.model import Block, EditMapInfo, PageRecord, Quality, ReviewPreview


@dataclass
class DocumentLayout:
    stats: FontStats
    furniture: dict[int, dict[int, str]] = field(default_factory=dict)  # page -> line index -> kind

    def as_dict(self, pages: Sequence[int] | None = None) -> dict[str, Any]:
        """Plain JSON (a task argument): the font statistics, and the furniture of `pages` (all
        pages when None)."""
        kept = (
            self.furniture
            if pages is None
            else {n: self.furniture[n] for n in pages if n in self.furniture}
        )
        return {
            "stats": self.stats.as_dict(),
            "furniture": [
                [n, [[i, kind] for i, kind in sorted(lines.items())]]
                for n, lines in sorted(kept.items())
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "DocumentLayout":
        stats = data["stats"]
        levels = {(float(size), bool(bold)): int(level) for size, bold, level in stats["levels"]}
        return cls(
            FontStats((float(stats["body"][0]), bool(stats["body"][1])), levels),
            {int(n): {int(i): str(kind) for i, kind in lines} for n, lines in data["furniture"]},
        )


def raw_spans(page: Mapping[str, Any]) -> list[tuple[int, int]] | None:
    """Each layout line's range in the page's raw text (lines joined by "\\n"; a line may itself
    hold a newline MuPDF kept), or None when the layout does not add up to the text."""
    layout = page.get("layout")
    if not layout or not layout.get("lines"):
        return None
    spans, pos = [], 0
    for line in layout["lines"]:
        n = int(line.get("n", line.get("chars", 0)))
        spans.append((pos, pos + n))
        pos += n + 1
    return spans if pos - 1 == len(page.get("text", "")) else None


def document_layout(pages: Sequence[Mapping[str, Any]]) -> DocumentLayout:
    """Font statistics and running furniture over every page the child read. Furniture is decided
    per row, so a line drawn in pieces (an RTL `- 1 -`: `- `, `1`, ` -`) is one page number."""
    usable = [(p, spans) for p in pages if (spans := raw_spans(p))]
    styles = [
        (ln["size"], ln["bold"], ln["chars"]) for p, _ in usable for ln in p["layout"]["lines"]
    ]
    bands, rows = [], []
    for p, spans in usable:
        rows.append(
            same_baseline_rows(
                [
                    LineIn(i, a, b, tuple(ln["bbox"]), ln["size"], ln["bold"])  # type: ignore[arg-type]
                    for i, ((a, b), ln) in enumerate(zip(spans, p["layout"]["lines"]))
                ]
            )
        )
        bands.append(
            (float(p.get("height") or 0), [_band_line(p["text"], row) for row in rows[-1]])
        )
    marks = running_furniture(bands)
    furniture = {
        int(p["number"]): {
            ln.index: m[row[0].index] for row in page_rows if row[0].index in m for ln in row
        }
        for (p, _), page_rows, m in zip(usable, rows, marks)
    }
    return DocumentLayout(font_stats(styles), furniture)


def _band_line(text: str, row: Sequence[LineIn]) -> BandLine:
    return BandLine(
        row[0].index,
        " ".join(text[ln.start : ln.end] for ln in row),
        min(ln.bbox[1] for ln in row),
        max(ln.bbox[3] for ln in row),
    )


def _inside(box: Sequence[float], outer: Sequence[float]) -> bool:
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return outer[0] <= cx <= outer[2] and outer[1] <= cy <= outer[3]


def table_in(
    raw: Mapping[str, Any],
    lines: Sequence[Mapping[str, Any]] = (),
    display: tuple[str, OffsetMap] | None = None,
) -> TableIn:
    """A gathered or recovered table: columns in logical order, GFM. `raw["rows"]` holds cells as
    drawn, left to right: dicts with "raw" and "spans" (from the child) or strings (from a
    recoverer). With `display` (the page's text and its offset map) a cell is read from the page's
    repaired text through its spans, so it shows the words the page shows; otherwise (or where one
    edit spans two cells) each cell is normalized like page text, turned by its own evidence."""
    visual = _display_cells(raw["rows"], *display) if display is not None else None
    if visual is None:
        visual = [
            [normalize(c["raw"] if isinstance(c, Mapping) else str(c)).text for c in row]
            for row in raw["rows"]
        ]
    boxes = [
        [tuple(c["bbox"]) if isinstance(c, Mapping) and c.get("bbox") else None for c in row]
        for row in raw["rows"]
    ]
    rtl = is_rtl_table([c for row in visual for c in row])
    visual, boxes = spread_spans(
        visual, boxes, rtl
    )  # a spanning header cell at its span's first column
    rows = logical_rows(visual, rtl)
    box = tuple(raw["bbox"])
    covered = (
        set(raw["lines"])
        if "lines" in raw
        else {i for i, ln in enumerate(lines) if _inside(ln["bbox"], box)}
    )
    return TableIn(
        bbox=box,
        rows=rows,
        header_rows=int(raw.get("header_rows", 1)),
        markdown=gfm(rows),  # type: ignore[arg-type]
        lines=covered,
        cells=logical_rows(boxes, rtl),
    )  # type: ignore[arg-type]


def _display_cells(
    rows: Sequence[Sequence[Any]], text: str, omap: OffsetMap
) -> list[list[str]] | None:
    """Each cell's words from the page's display text, or None where a cell has no spans or one
    edit's output reaches into two cells (a line reversed as a whole)."""
    out: list[list[str]] = []
    taken: list[tuple[int, int]] = []
    for row in rows:
        cells = []
        for cell in row:
            spans = cell.get("spans") if isinstance(cell, Mapping) else None
            if not isinstance(spans, list):
                return None
            parts = []
            for a, b in spans:
                start, end = omap.to_display(int(a), "start"), omap.to_display(int(b), "end")
                taken.append((start, end))
                parts.append(text[start:end])
            cells.append(" ".join(" ".join(parts).split()))
        out.append(cells)
    taken.sort()
    if any(nxt[0] < prev[1] for prev, nxt in zip(taken, taken[1:])):
        return None
    return out


def paragraph_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every blank-line-separated run of `text`, its surrounding whitespace left
    out; runs of whitespace only give none."""
    spans, pos = [], 0
    for part in text.split("\n\n"):
        start, end = pos + len(part) - len(part.lstrip()), pos + len(part.rstrip())
        pos += len(part) + 2
        if start < end:
            spans.append((start, end))
    return spans


def plain_blocks(text: str) -> list[dict[str, Any]]:
    """Paragraph blocks from blank-line-separated runs (no geometry: OCR text, a misaligned layer)."""
    blocks = []
    for start, end in paragraph_spans(text):
        body = text[start:end]
        blocks.append(
            {
                "type": "paragraph",
                "text": body,
                "bbox": None,
                "direction": direction(body),
                "start": start,
                "end": end,
            }
        )
    return blocks


def page_structure(
    page: Mapping[str, Any],
    text: str,
    edits: Sequence[Mapping[str, Any]],
    doc: DocumentLayout,
    tables: Sequence[TableIn] | None = None,
) -> tuple[list[dict[str, Any]], list[TableIn]]:
    """Blocks of one text-layer page (its raw text is `page["text"]`, its display text `text`);
    `tables` replaces the tables the child found (structured recovery)."""
    spans = raw_spans(page)
    if spans is None:
        return plain_blocks(text), []
    omap = OffsetMap(edits)
    ranges = [(omap.to_display(a, "start"), omap.to_display(b, "end")) for a, b in spans]
    lines = [
        LineIn(i, s, e, tuple(ln["bbox"]), ln["size"], ln["bold"])  # type: ignore[arg-type]
        for i, ((s, e), ln) in enumerate(zip(ranges, page["layout"]["lines"]))
    ]
    if tables is None:
        tables = [table_in(t, display=(text, omap)) for t in page["layout"].get("tables", [])]
    figures = [tuple(f) for f in page["layout"].get("figures", [])]
    blocks = page_blocks(
        text,
        lines,
        rtl=direction(text) == "rtl",
        stats=doc.stats,
        tables=tables,
        furniture=doc.furniture.get(int(page["number"]), {}),
        figures=figures,  # type: ignore[arg-type]
        height=float(page.get("height") or 0),
    )
    return blocks, tables


def markdown_of(blocks: Sequence[Mapping[str, Any]]) -> str:
    return blocks_markdown(blocks)


def with_blocks(
    record: PageRecord,
    blocks: list[dict[str, Any]],
    warnings: Sequence[str] = (),
    metrics: Mapping[str, float] | None = None,
) -> PageRecord:
    """An accepted page with its blocks; its Markdown is rebuilt from them."""
    quality = record.quality.model_copy(
        update={
            "warnings": [
                *record.quality.warnings,
                *[w for w in warnings if w not in record.quality.warnings],
            ],
            "metrics": {**record.quality.metrics, **(metrics or {})},
        }
    )
    return record.model_copy(
        update={
            "blocks": [Block.model_validate(b) for b in blocks],
            "markdown": markdown_of(blocks),
            "quality": quality,
        }
    )


def refused_for_tables(
    record: PageRecord, blocks: list[dict[str, Any]], verdict: Finding
) -> PageRecord:
    """Fail closed: the page's text becomes a quarantined preview (same edit map, same blocks)."""
    reasons = verdict.reasons
    attempts = [
        a.model_copy(update={"accepted": False, "reasons": [*a.reasons, *reasons]})
        if a.accepted
        else a
        for a in record.attempts
    ]
    preview = ReviewPreview(
        engine=record.engine or "unknown",
        text=record.text,
        markdown=markdown_of(blocks),
        reasons=reasons,
        blocks=[Block.model_validate(b) for b in blocks],
    )
    quality = Quality(
        ok=False,
        reasons=reasons,
        warnings=[*record.quality.warnings, *verdict.warnings],
        metrics={**record.quality.metrics, **verdict.metrics},
    )
    return record.model_copy(
        update={
            "route": "review_required",
            "engine": None,
            "text": "",
            "markdown": "",
            "attempts": attempts,
            "edit_map": EditMapInfo(target="review_preview", complete=False, gap="page_refused"),
            "quality": quality,
            "needs_review": True,
            "review_preview": preview,
            "blocks": [],
        }
    )


def structure_page(
    record: PageRecord,
    page: Mapping[str, Any],
    doc: DocumentLayout,
    pdf: str,
    *,
    recover: str = "off",
    timeout_s: float = 30.0,
) -> PageRecord:
    """Blocks for a page rung 1 accepted; its tables checked against Poppler, failing closed."""
    blocks, tables = page_structure(page, record.text, record.edits, doc)
    aligned = int((page.get("layout") or {}).get("aligned_rows", 0))
    if not tables and not aligned:
        return with_blocks(record, blocks)
    verdict = check_tables(pdf, int(page["number"]), tables, aligned, timeout_s=timeout_s)
    if verdict.reasons and recover != "off":
        recovered = recover_page(recover, pdf, record, page, doc, timeout_s=timeout_s)
        if recovered is not None:
            return with_blocks(
                record,
                recovered.blocks,
                [*verdict.warnings, f"structured_recovery_{recover}"],
                recovered.metrics,
            )
    if verdict.reasons:
        return refused_for_tables(record, blocks, verdict)
    return with_blocks(record, blocks, verdict.warnings, verdict.metrics)


def recover_page(
    name: str, pdf: str, record: Any, page: Mapping[str, Any], doc: Any, *, timeout_s: float = 60.0
) -> recovery.Recovered | None:
    """Blocks with the recoverer's tables if every table passes the word check, else None."""
    from pagefleet.workers.errors import PagefleetError

    found = recovery.recoverer(name)
    if found is None:
        return None
    try:
        raw_tables = [t for t in found(pdf, int(page["number"]), timeout_s) if t.get("bbox")]
    except PagefleetError:
        return None
    if not raw_tables:
        return None
    lines = (page.get("layout") or {}).get("lines", [])
    tables = [table_in(t, lines) for t in raw_tables]
    blocks, _ = page_structure(page, record.text, record.edits, doc, tables=tables)
    verdict = check_tables(pdf, int(page["number"]), tables, 0, timeout_s=timeout_s)
    if verdict.reasons:
        return None
    return recovery.Recovered(blocks, verdict.metrics)
