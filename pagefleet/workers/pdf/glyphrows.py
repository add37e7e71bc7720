"""A page's MuPDF lines and the rows they join into (`pagefleet.workers.pdf.glyphlines` reads each row from
its glyphs): lines of one block whose baselines agree and whose boxes follow each other with at
most a word gap's room (a list marker's a little more) form one row, where a Hebrew or Arabic
letter is among them or on most of the page.

Runs inside the sandbox child with the rest of the MuPDF reading; plain data in and out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pagefleet.routing.charclass import LazyTable
from pagefleet.routing.scripts import is_latin, is_rtl_letter

_SENTENCE_END = frozenset(".,:;!?\u060c\u061b\u061f")
_MARKER = re.compile(
    r"[\u2022\u25e6\u25aa\u25cf\u2013\-]|\d{1,3}[.)]|[.)]|[\u05d0-\u05ea\u0621-\u064a][.)]"
)
BASELINE_SHARE = 0.35  # of the font size: two lines whose baselines differ by less share a row
JOIN_GAP = 0.6  # font sizes: pieces of one row are at most this far apart
MARKER_GAP = 3.0  # font sizes: a list marker drawn alone stands at most this far from its item


@dataclass
class PageLine:
    """One MuPDF line: its characters in stream order, each with its span's attributes."""

    block: int
    order: int
    chars: list[dict[str, Any]]
    spans: list[dict[str, Any]]  # per character, the span it came from
    bbox: tuple[float, float, float, float]
    baseline: float
    size: float
    rtl: bool
    horizontal: bool
    source: dict[str, Any]
    marker: bool = False  # the line is a list marker alone (`•`, `1.`, `.`)  # the rawdict line, returned as it was where the row is not rebuilt


def page_lines(raw: dict[str, Any]) -> list[PageLine]:
    found: list[PageLine] = []
    for number, block in enumerate(raw.get("blocks", [])):
        for line in block.get("lines", []):
            chars, spans = [], []
            for span in line.get("spans", []):
                for c in span.get("chars", []):
                    chars.append(c)
                    spans.append(span)
            if not chars:
                continue
            horizontal = tuple(round(v, 3) for v in line.get("dir", (1, 0))) == (
                1.0,
                0.0,
            ) and not line.get("wmode")
            sizes = sorted(s["size"] for s in spans)
            baselines = sorted(c["origin"][1] for c in chars)
            found.append(
                PageLine(
                    number,
                    len(found),
                    chars,
                    spans,
                    tuple(line["bbox"]),  # type: ignore[arg-type]
                    baselines[len(baselines) // 2],
                    sizes[len(sizes) // 2] or 1.0,
                    horizontal and any(is_rtl_letter(c["c"]) for c in chars),
                    horizontal,
                    line,
                    _MARKER.fullmatch("".join(c["c"] for c in chars).strip()) is not None,
                )
            )
    return found


def page_is_rtl(lines: list[PageLine]) -> bool:
    """Hebrew and Arabic letters at least as many as Latin ones on the page."""
    scripts = _SCRIPTS.apply("".join([c["c"] for line in lines for c in line.chars]))
    return scripts.count("R") >= scripts.count("L")


def has_letters(row: list[PageLine]) -> bool:
    return any(c["c"].isalpha() for ln in row for c in ln.chars)


def tail_of_rtl(row: list[PageLine]) -> bool:
    """A line with no RTL letter that an RTL paragraph drew: its sentence punctuation stands at
    its left end (`.https://example.com/docs`), where an LTR line never puts it."""
    chars = [c for ln in row for c in ln.chars if not c["c"].isspace()]
    if len(chars) < 2 or not row[0].horizontal:
        return False
    left = min(chars, key=lambda c: c["bbox"][0])
    right = max(chars, key=lambda c: c["bbox"][2])
    return left["c"] in _SENTENCE_END and right["c"] not in _SENTENCE_END


def join_rows(lines: list[PageLine], page_rtl: bool) -> list[list[PageLine]]:
    """Lines joined into rows: one MuPDF block (columns and table cells are blocks of their own),
    same baseline, boxes within a word gap of each other, a Hebrew or Arabic letter among them or
    on most of the page (other lines stand alone)."""
    parent = list(range(len(lines)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    ordered = sorted(range(len(lines)), key=lambda i: lines[i].baseline)
    for k, i in enumerate(ordered):
        a = lines[i]
        for j in ordered[k + 1 :]:
            b = lines[j]
            size = min(a.size, b.size)
            if b.baseline - a.baseline > BASELINE_SHARE * max(a.size, b.size):
                break
            if (
                a.block != b.block
                or not (a.rtl or b.rtl or page_rtl)
                or not (a.horizontal and b.horizontal)
                or abs(a.size - b.size) > 0.25 * max(a.size, b.size)
            ):
                continue
            gap = max(a.bbox[0], b.bbox[0]) - min(a.bbox[2], b.bbox[2])
            room = MARKER_GAP if a.marker or b.marker else JOIN_GAP
            if gap <= room * size and not _overprint(a, b):
                parent[find(j)] = find(i)
    groups: dict[int, list[PageLine]] = {}
    for i in range(len(lines)):
        groups.setdefault(find(i), []).append(lines[i])
    rows = list(groups.values())
    rows.sort(key=lambda row: min(ln.order for ln in row))
    return rows


def _overprint(a: PageLine, b: PageLine) -> bool:
    """The same characters drawn twice, a hair apart (a producer's simulated bold)."""
    return abs(a.bbox[0] - b.bbox[0]) < 0.2 * a.size and [c["c"] for c in a.chars] == [
        c["c"] for c in b.chars
    ]


_SCRIPTS = LazyTable(lambda ch: "R" if is_rtl_letter(ch) else "L" if is_latin(ch) else None)
