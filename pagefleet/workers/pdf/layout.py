"""Structure evidence from one page, gathered inside the sandbox child (never in a worker).

`gather(page, flags, paths)` walks the same `rawdict` lines, in the same order, as the text layer that
`pagefleet.workers.pdf.mupdf` builds (line i here is line i of the page's raw text) and returns plain JSON:

    lines   per line: bbox, dominant font size, bold (most characters bold), visible characters,
            `n` its length in the page text
    tables  ruled tables (pagefleet.routing.structure.grid on vector paths) and unruled ones (visual rows whose
            gaps line up, pagefleet.routing.structure.tables.aligned_columns): per cell its raw text (the
            cell's characters in extraction order) and box, drawn left to right; the raw lines
            each table covers (`pagefleet.workers.pdf.page_tables` finds them)
    rows    the number of visual rows with aligned gaps that no table explains (a suspicion)

Cell text is raw here; the parent normalizes it like any text and orders columns logically.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pymupdf

from pagefleet.workers.pdf import glyphlines, stext
from pagefleet.workers.pdf.page_tables import Char, ruled_tables, unruled_tables
from pagefleet.workers.pdf.stext import Box

_BOLD = 16
Kept = dict[
    int, tuple[dict[str, Any], list[Box]]
]  # page -> rung 1's rawdict and the boxes of the images it draws


def _line_info(line: dict[str, Any]) -> dict[str, Any]:
    sizes: Counter[float] = Counter()
    bold = total = 0
    for span in line["spans"]:
        n = sum(1 for c in span["chars"] if not c["c"].isspace())
        sizes[round(span["size"], 1)] += n
        total += n
        if span["flags"] & _BOLD or "bold" in span.get("font", "").lower():
            bold += n
    size = sizes.most_common(1)[0][0] if sizes else 0.0
    n = sum(
        len(c["c"]) for span in line["spans"] for c in span["chars"]
    )  # the line's length in the text
    return {
        "bbox": [round(v, 2) for v in line["bbox"]],
        "size": size,
        "bold": total > 0 and bold * 2 > total,
        "chars": total,
        "n": n,
    }


def gather(
    page: pymupdf.Page,
    flags: int,
    paths: list[dict[str, Any]] | None = None,
    raw: dict[str, Any] | None = None,
    images: list[Box] | None = None,
) -> dict[str, Any]:
    """`paths`: the page's vector paths (`get_cdrawings()`) where ruled tables are looked for, None
    where they are not; `raw`: the page's `rawdict` with `flags` when rung 1 already made it;
    `images`: the visible boxes of the images the page draws when rung 1 already read them, None
    to read them here (`stext.image_boxes`)."""
    if raw is None:  # the rows rung 1 reads (`glyphlines`), so line i is line i of its text
        raw = glyphlines.read_rows(page.get_text("rawdict", flags=flags)).raw
    lines: list[dict[str, Any]] = []
    chars: list[Char] = []
    offset = 0
    for block in raw.get("blocks", []):
        for line in block.get("lines", []):
            index = len(lines)
            lines.append(_line_info(line))
            for span in line["spans"]:
                for c in span["chars"]:
                    x0, y0, x1, y1 = c["bbox"]
                    chars.append((x0, y0, x1, y1, c["c"], index, offset))
                    offset += len(c["c"])
            offset += 1  # the newline between lines
    tables, grids = ruled_tables(page, paths, chars) if paths is not None else ([], 0)
    taken = {i for t in tables for i in t["lines"]}
    unruled, suspect = unruled_tables(lines, [c for c in chars if c[5] not in taken])
    if unruled:
        grids = 0  # the aligned rows read what the grid did not
    figures = _figures(page, stext.image_boxes(page, flags) if images is None else images)
    return {
        "lines": lines,
        "tables": tables + unruled,
        "aligned_rows": max(suspect, grids),
        "figures": figures,
    }


def _figures(
    page: pymupdf.Page, images: list[Box], max_share: float = 0.8, min_side: float = 24.0
) -> list[list[float]]:
    """Boxes of the images drawn on the page (`images`: their visible boxes), but a scan's
    full-page background or a tiny icon."""
    area = abs(page.rect) or 1.0
    out = []
    for image in images:
        box = pymupdf.Rect(image) & page.rect
        if box.is_empty or abs(box) > max_share * area or min(box.width, box.height) < min_side:
            continue
        out.append([round(v, 2) for v in box])
    return out


MAX_DRAWINGS = (
    5000  # the table finder on a map or a CAD page costs seconds: such a page gets no ruled tables
)


def vector_paths(page: pymupdf.Page) -> list[dict[str, Any]]:
    return page.get_cdrawings() if hasattr(page, "get_cdrawings") else []


def drawings(page: pymupdf.Page) -> int:
    """How many vector paths the page draws (rung 1: a drawn page vs a blank one; here: ruled tables)."""
    return len(vector_paths(page))


def add_layout(
    doc: pymupdf.Document, pages: list[dict[str, Any]], flags: int, kept: Kept | None = None
) -> None:
    """Attach `layout` to pages extracted by `pagefleet.workers.pdf.mupdf` (same text flags, same lines).
    A page whose structure cannot be read gets none: its blocks are then plain paragraphs. The
    ruled-table finder runs only on pages with vector drawings, and not too many of them (a heavy
    vector page must not push the text layer's batch past the sandbox's time limit). `kept`: per
    page number, rung 1's `rawdict` and the images the page draws (`mupdf._extract_page`)."""
    for page in pages:
        try:
            loaded = doc.load_page(int(page["number"]) - 1)
            counted = bool(
                page.get("drawings")
            )  # rung 1 counts vector paths only where it needs them
            paths = (
                None if counted else vector_paths(loaded)
            )  # read once: the count and the grid finder
            if not counted:
                page["drawings"] = len(paths)
            ruled = 0 < int(page["drawings"]) <= MAX_DRAWINGS
            if ruled and paths is None:
                paths = vector_paths(loaded)
            raw, images = (kept or {}).get(
                int(page["number"]), (None, None)
            )  # rung 1's, not read again
            page["layout"] = gather(
                loaded, flags, paths=paths if ruled else None, raw=raw, images=images
            )
        except Exception as exc:  # noqa: BLE001 - structure is an extra: the page's text stands without it
            page["layout_error"] = f"{type(exc).__name__}: {exc}"[:200]
