"""Words of a page with their boxes, style and repaired (logical) text, for the encoder.

One `rawdict` pass with `TEXT_ACCURATE_BBOXES` (x extents stay advance boxes, y extents become ink)
splits every line at whitespace. A word's text goes through the project's own repair
(`pagefleet.routing.normalize.normalize`) with the line's visual-order flag from `pagefleet.routing.visual_order.page_order`
(letters and glyph geometry, as rung 1 decides), so a word stored in visual order is mapped back
as the logical word a reader sees, and presentation forms come back as plain letters.

Geometry is kept along the line's direction: `start`/`end` are baseline points at the word's two
ends (in the line's advance direction), so rotated tables mirror too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import pymupdf

from pagefleet.routing.normalize import normalize
from pagefleet.routing.visual_order import page_order
from pagefleet.routing.wse import needs_token
from pagefleet.workers.pdf.mupdf import _rtl_order

GAP = 0.5  # ems: a wider gap between glyphs (or words) on a line separates words (or units)
FLAGS = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP | pymupdf.TEXT_ACCURATE_BBOXES


@dataclass(frozen=True)
class PageWord:
    text: str  # repaired, logical
    raw: str  # as MuPDF extracted it
    bbox: tuple[float, float, float, float]
    start: tuple[float, float]  # baseline point where the word begins along `direction`
    end: tuple[float, float]  # baseline point where it ends
    direction: tuple[float, float]  # the line's advance direction (cos, sin), y down
    size: float
    bold: bool
    italic: bool
    line: int
    color: int = 0  # sRGB of the word's first span

    @property
    def length(self) -> float:
        return math.dist(self.start, self.end)

    @property
    def ink_height(self) -> float:
        if abs(self.direction[1]) < 1e-3:
            return self.bbox[3] - self.bbox[1]
        return self.size  # rotated: the axis-aligned box says little about the glyphs' height


def _style(span: dict[str, Any]) -> tuple[bool, bool]:
    font = span.get("font", "")
    bold = bool(span["flags"] & pymupdf.TEXT_FONT_BOLD) or "bold" in font.lower()
    italic = bool(span["flags"] & pymupdf.TEXT_FONT_ITALIC) or any(
        k in font.lower() for k in ("italic", "oblique")
    )
    return bold, italic


def _advance(line_dir: tuple[float, float], span: dict[str, Any], char: dict[str, Any]) -> float:
    if abs(line_dir[1]) < 1e-3:
        return char["bbox"][2] - char["bbox"][0]
    quad = pymupdf.recover_char_quad(line_dir, span, char)
    return math.dist(quad.ul, quad.ur)


def _word(
    chars: list[tuple[dict, dict]], line_dir: tuple[float, float], line_no: int, visual: bool
) -> PageWord:
    raw = "".join(c["c"] for c, _ in chars)
    cos, sin = line_dir
    proj = [c["origin"][0] * cos + c["origin"][1] * sin for c, _ in chars]
    first = chars[proj.index(min(proj))][0]
    last_c, last_span = chars[proj.index(max(proj))]
    adv = _advance(line_dir, last_span, last_c)
    end = (last_c["origin"][0] + adv * cos, last_c["origin"][1] + adv * sin)
    x0 = min(c["bbox"][0] for c, _ in chars)
    y0 = min(c["bbox"][1] for c, _ in chars)
    x1 = max(c["bbox"][2] for c, _ in chars)
    y1 = max(c["bbox"][3] for c, _ in chars)
    span = chars[0][1]
    bold, italic = _style(span)
    text = normalize(raw, line_visual=[visual]).text
    return PageWord(
        text=text,
        raw=raw,
        bbox=(x0, y0, x1, y1),
        start=tuple(first["origin"]),
        end=end,
        direction=(cos, sin),
        size=max(s["size"] for _, s in chars),
        bold=bold,
        italic=italic,
        line=line_no,
        color=int(span.get("color", 0)),
    )


def _lines(raw: dict[str, Any]) -> list[tuple[tuple[float, float], list[tuple[dict, dict]]]]:
    out = []
    for block in raw.get("blocks", []):
        for line in block.get("lines", []):
            chars = [(c, span) for span in line["spans"] for c in span["chars"]]
            if chars:
                out.append((tuple(line["dir"]), chars))
    return out


def _interval(
    line_dir: tuple[float, float], span: dict[str, Any], char: dict[str, Any]
) -> tuple[float, float]:
    lo = char["origin"][0] * line_dir[0] + char["origin"][1] * line_dir[1]
    return lo, lo + _advance(line_dir, span, char)


def _split(
    line_dir: tuple[float, float], chars: list[tuple[dict, dict]]
) -> list[list[tuple[dict, dict]]]:
    """Words of one line: split at whitespace and at gaps wider than half the font size (cells
    that a producer drew without a space between them). A gap is measured from the word so far,
    not from the last glyph: a lam-alef ligature's zero-width alef sits at the far end of its lam."""
    words: list[list[tuple[dict, dict]]] = []
    current: list[tuple[dict, dict]] = []
    extent: tuple[float, float] | None = None
    for char, span in chars:
        if char["c"].isspace():
            current, extent = _flush(words, current), None
            continue
        here = _interval(line_dir, span, char)
        if extent and max(extent[0] - here[1], here[0] - extent[1]) > GAP * span["size"]:
            current, extent = _flush(words, current), None
        current.append((char, span))
        extent = (min(extent[0], here[0]), max(extent[1], here[1])) if extent else here
    _flush(words, current)
    return words


def _flush(words: list, current: list) -> list:
    if current:
        words.append(current)
    return []


def merge_ltr_runs(words: list[PageWord]) -> list[PageWord]:
    """Neighbouring words of one line that need no token (numbers, Latin) become one unit, drawn
    left to right as it is: mirroring keeps ``3 001`` or ``GDP per capita`` readable instead of
    swapping its parts. Cells stay apart: a gap wider than `GAP` ems ends a unit."""
    out: list[PageWord] = []
    for w in words:
        prev = out[-1] if out else None
        if (
            prev
            and prev.line == w.line
            and not needs_token(prev.text)
            and not needs_token(w.text)
            and _gap(prev, w) <= GAP * max(prev.size, w.size)
        ):
            out[-1] = _joined(prev, w)
        else:
            out.append(w)
    return out


def _gap(a: PageWord, b: PageWord) -> float:
    cos, sin = a.direction
    pa = sorted(p[0] * cos + p[1] * sin for p in (a.start, a.end))
    pb = sorted(p[0] * cos + p[1] * sin for p in (b.start, b.end))
    return max(pb[0] - pa[1], pa[0] - pb[1])


def _joined(a: PageWord, b: PageWord) -> PageWord:
    cos, sin = a.direction
    first, second = sorted((a, b), key=lambda w: w.start[0] * cos + w.start[1] * sin)
    bbox = (
        min(a.bbox[0], b.bbox[0]),
        min(a.bbox[1], b.bbox[1]),
        max(a.bbox[2], b.bbox[2]),
        max(a.bbox[3], b.bbox[3]),
    )
    return replace(
        first,
        text=f"{first.text} {second.text}",
        raw=f"{first.raw} {second.raw}",
        bbox=bbox,
        end=second.end,
        size=max(a.size, b.size),
    )


def page_words(page: pymupdf.Page) -> list[PageWord]:
    """Every word of the page's text layer, repaired, in extraction order (see `merge_ltr_runs`)."""
    lines = _lines(page.get_text("rawdict", flags=FLAGS))
    texts = ["".join(c["c"] for c, _ in chars) for _, chars in lines]
    geometry = [_rtl_order([c for c, _ in chars]) for _, chars in lines]
    flags = page_order("\n".join(texts), geometry, from_ocr=False).line_visual if texts else []
    words: list[PageWord] = []
    for no, (line_dir, chars) in enumerate(lines):
        visual = flags[no] if no < len(flags) else False
        words += [_word(group, line_dir, no, visual) for group in _split(line_dir, chars)]
    return merge_ltr_runs(words)
