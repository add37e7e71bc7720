"""A page's lines → blocks in reading order: `{type, text, bbox, direction, start, end}`.

    lines ─► furniture (header/footer blocks, listed first / last)
          ─► lines inside a recovered table ─► one `table` block
          ─► same-baseline pieces merged into rows ─► reading order (reading_order.py)
          ─► rows grouped into blocks: a new block at a style change, a list marker, a gap wider
             than `gap_ratio` × line height, or where the text is not contiguous
          ─► caption ("Figure 2.", "טבלה 3") | footnote (small print low on the page) | heading (style has a level, short text; a section
             number is part of it) | list_item (marker) | paragraph

`start/end` index the page's display text, so a block's text is always ``text[start:end]`` and a
block never spans lines that are not next to each other in the text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pagefleet.routing.charclass import classes
from pagefleet.routing.structure.headings import (
    FontStats,
    HeadingRules,
    is_heading_text,
    semantic_heading,
)
from pagefleet.routing.structure.markers import is_caption, list_marker
from pagefleet.routing.structure.reading_order import Box, reading_order


@dataclass
class LineIn:
    index: int  # position in raw_text.split("\n")
    start: int  # display range of the line in the page text
    end: int
    bbox: Box
    size: float = 0.0
    bold: bool = False


@dataclass
class TableIn:
    bbox: Box
    rows: list[list[str]]
    header_rows: int
    markdown: str
    lines: set[int] = field(default_factory=set)  # raw line indices the table covers
    cells: list[list[Box | None]] = field(default_factory=list)  # cell boxes, same order as rows


@dataclass(frozen=True)
class BlockRules:
    gap_ratio: float = 0.4
    same_row: float = 0.5  # y-centres closer than this × height are one row
    row_gap: float = 2.0  # × font size: pieces farther apart horizontally are separate rows


@dataclass
class _Row:
    lines: list[LineIn]
    bbox: Box

    @property
    def first(self) -> int:
        return self.lines[0].index

    @property
    def last(self) -> int:
        return self.lines[-1].index

    @property
    def height(self) -> float:
        return max(self.bbox[3] - self.bbox[1], 1.0)


def direction(text: str) -> str:
    # one translation (pagefleet.routing.charclass): h/r RTL letters, a Latin A-Z a-z
    codes = classes(text)
    rtl = codes.count("h") + codes.count("r")
    return "rtl" if rtl > codes.count("a") else "ltr"


def _union(a: Box, b: Box) -> Box:
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def _rows(lines: Sequence[LineIn], rules: BlockRules) -> list[_Row]:
    rows: list[_Row] = []
    for line in lines:
        if rows:
            row = rows[-1]
            prev = row.lines[-1]
            centre, other = (line.bbox[1] + line.bbox[3]) / 2, (row.bbox[1] + row.bbox[3]) / 2
            near = min(
                abs(line.bbox[0] - row.bbox[2]), abs(row.bbox[0] - line.bbox[2])
            ) <= rules.row_gap * max(line.size, 1.0)
            if (
                line.index == prev.index + 1
                and abs(centre - other) <= rules.same_row * row.height
                and near
            ):
                row.lines.append(line)
                row.bbox = _union(row.bbox, line.bbox)
                continue
        rows.append(_Row([line], line.bbox))
    return rows


def same_baseline_rows(
    lines: Sequence[LineIn], rules: BlockRules = BlockRules()
) -> list[list[LineIn]]:
    """Lines grouped into rows: pieces of one drawn line (consecutive, one baseline, close together).
    MuPDF gives an RTL `- 1 -` as three lines `- `, `1`, ` -`; a header as two bidi runs."""
    return [row.lines for row in _rows(lines, rules)]


def _style(row: _Row, stats: FontStats) -> int | None:
    big = max(row.lines, key=lambda ln: ln.end - ln.start)
    return stats.level(big.size, all(ln.bold for ln in row.lines))


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _block(kind: str, text: str, start: int, end: int, bbox: Box, **extra: Any) -> dict[str, Any]:
    start, end = _trimmed(text, start, end)
    body = text[start:end]
    return {
        "type": kind,
        "text": body,
        "bbox": [round(v, 2) for v in bbox],
        "direction": direction(body),
        "start": start,
        "end": end,
        **extra,
    }


def _starts_new(prev: _Row, row: _Row, text: str, stats: FontStats, rules: BlockRules) -> bool:
    if row.first != prev.last + 1 or _style(row, stats) != _style(prev, stats):
        return True
    if row.bbox[1] - prev.bbox[3] > rules.gap_ratio * prev.height or row.bbox[1] < prev.bbox[1] - 1:
        return True  # a paragraph gap, or back up the page (the next column)
    if row.bbox[0] > prev.bbox[2] or row.bbox[2] < prev.bbox[0]:
        return True
    return list_marker(text[row.lines[0].start : row.lines[-1].end]) is not None


def _group(
    rows: list[_Row], text: str, stats: FontStats, heading_rules: HeadingRules, rules: BlockRules
) -> list[dict[str, Any]]:
    groups: list[list[_Row]] = []
    for row in rows:
        if groups and not _starts_new(groups[-1][-1], row, text, stats, rules):
            groups[-1].append(row)
        else:
            groups.append([row])
    return [_classify(g, text, stats, heading_rules) for g in groups]


def _classify(
    group: list[_Row], text: str, stats: FontStats, heading_rules: HeadingRules
) -> dict[str, Any]:
    start, end = group[0].lines[0].start, group[-1].lines[-1].end
    bbox = group[0].bbox
    for row in group[1:]:
        bbox = _union(bbox, row.bbox)
    body = text[start:end]
    level = _style(group[0], stats)
    marker = list_marker(body.lstrip())
    if is_caption(body):
        return _block("caption", text, start, end, bbox)
    if level is not None and is_heading_text(body, len(group), heading_rules):
        return _block("heading", text, start, end, bbox, level=level)  # "1. Introduction" included
    if level is None and semantic_heading(body):
        return _block(
            "heading",
            text,
            start,
            end,
            bbox,
            level=min(len(stats.levels) + 1, heading_rules.max_levels),
        )
    if marker:
        return _block("list_item", text, start, end, bbox, marker=marker.marker)
    return _block("paragraph", text, start, end, bbox)


def page_blocks(
    text: str,
    lines: Sequence[LineIn],
    *,
    rtl: bool,
    stats: FontStats,
    tables: Sequence[TableIn] = (),
    furniture: dict[int, str] | None = None,
    figures: Sequence[Box] = (),
    height: float = 0.0,
    heading_rules: HeadingRules = HeadingRules(),
    rules: BlockRules = BlockRules(),
) -> list[dict[str, Any]]:
    """Blocks of one page in reading order (furniture first/last by position). A figure (an image's
    box) is an empty block at its place in the order: `start == end`, at the text before it. With
    the page `height`, small-print notes low on the page are footnotes."""
    furniture = furniture or {}
    covered = set().union(*(t.lines for t in tables)) if tables else set()
    body = [
        ln
        for ln in lines
        if text[ln.start : ln.end].strip() and ln.index not in covered and ln.index not in furniture
    ]
    rows = _rows(body, rules)
    units: list[_Row | TableIn | Box] = [*rows, *tables, *figures]
    order = reading_order([u if isinstance(u, tuple) else u.bbox for u in units], rtl)
    blocks: list[dict[str, Any]] = []
    run: list[_Row] = []
    for i in order:
        unit = units[i]
        if isinstance(unit, _Row):
            run.append(unit)
            continue
        blocks += _group(run, text, stats, heading_rules, rules)
        run = []
        if isinstance(unit, TableIn):
            blocks.append(_table_block(text, unit, lines))
        else:
            at = blocks[-1]["end"] if blocks else 0
            blocks.append(
                {
                    "type": "figure",
                    "text": "",
                    "bbox": [round(v, 2) for v in unit],
                    "direction": "ltr",
                    "start": at,
                    "end": at,
                }
            )
    blocks += _group(run, text, stats, heading_rules, rules)
    if height:
        blocks = [_footnote(b, lines, stats, height) for b in blocks]
    return _with_furniture(
        blocks, text, lines, {i: k for i, k in furniture.items() if i not in covered}, rules
    )


_FOOTNOTE = re.compile(r"^\s*(?:\d{1,3}|[*†‡§]+|[¹²³⁴⁵⁶⁷⁸⁹⁰]+)(?:[.)]|\s)")


def _footnote(
    block: dict[str, Any], lines: Sequence[LineIn], stats: FontStats, height: float
) -> dict[str, Any]:
    """A paragraph in the page's lower part, smaller than the body, opening with a note mark."""
    if block["type"] != "paragraph" or not block.get("bbox") or block["bbox"][1] < 0.6 * height:
        return block
    sizes = [ln.size for ln in lines if block["start"] <= ln.start < block["end"] and ln.size]
    if sizes and max(sizes) < stats.body[0] - 1 and _FOOTNOTE.match(block["text"]):
        return {**block, "type": "footnote"}
    return block


def _table_block(text: str, table: TableIn, lines: Sequence[LineIn]) -> dict[str, Any]:
    inside = [ln for ln in lines if ln.index in table.lines]
    start = min((ln.start for ln in inside), default=0)
    end = max((ln.end for ln in inside), default=0)
    payload = {"rows": table.rows, "header_rows": table.header_rows, "markdown": table.markdown}
    return _block("table", text, start, end, table.bbox, table=payload)


def _with_furniture(
    blocks: list[dict[str, Any]],
    text: str,
    lines: Sequence[LineIn],
    furniture: dict[int, str],
    rules: BlockRules,
) -> list[dict[str, Any]]:
    """Header and footer blocks, one per row: a line drawn in pieces is one block."""
    heads, feet = [], []
    marked = [ln for ln in lines if furniture.get(ln.index) and text[ln.start : ln.end].strip()]
    for row in _rows(marked, rules):
        kind = furniture[row.first]
        (heads if kind == "header" else feet).append(
            _block(kind, text, row.lines[0].start, row.lines[-1].end, row.bbox)
        )
    return heads + blocks + feet
