"""Reading order of boxes on a page: recursive XY-cut, columns right to left on RTL pages.

    region ─► a vertical gutter crossed by no box?  ─► columns (RTL: right first), each recursively
          └─► else horizontal bands, runs of narrow bands kept together between spanning ones
                                                      ─► each run recursively (it may hold columns)
          └─► else                                    ─► band by band, by x (RTL: right first)

A gutter must be at least `min_gutter` wide and leave real text on both sides (each side at least
`min_side` of the region's width), so a column of bullets or a ragged line end never makes one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class OrderRules:
    min_gutter: float = 12.0
    min_side: float = 0.15
    min_items_per_column: int = 2
    spanning: float = 0.55  # a box wider than this share of the region spans the columns


def reading_order(boxes: Sequence[Box], rtl: bool, rules: OrderRules = OrderRules()) -> list[int]:
    """Indices of `boxes` in reading order."""
    return _order(list(range(len(boxes))), boxes, rtl, rules)


def _order(items: list[int], boxes: Sequence[Box], rtl: bool, rules: OrderRules) -> list[int]:
    if len(items) <= 1:
        return items
    columns = _split(items, boxes, axis=0, min_gap=rules.min_gutter)
    if len(columns) > 1 and _real_columns(columns, boxes, rules):
        ordered = list(reversed(columns)) if rtl else columns
        return [i for col in ordered for i in _order(col, boxes, rtl, rules)]
    bands = _split(items, boxes, axis=1, min_gap=0.0)
    segments = _segments(bands, boxes, rules)
    if len(segments) == 1:
        segments = _columns_below(bands, boxes, rules)
    if len(segments) > 1:
        return [i for seg in segments for i in _order(seg, boxes, rtl, rules)]
    return [
        i
        for band in bands
        for i in sorted(band, key=lambda i: -boxes[i][2] if rtl else boxes[i][0])
    ]


def _columns_below(
    bands: list[list[int]], boxes: Sequence[Box], rules: OrderRules
) -> list[list[int]]:
    """[top bands, the rest] for the first cut below which the rest splits into columns (a narrow
    title over two columns); [everything] when there is none."""
    for k in range(1, len(bands) - 1):
        rest = [i for band in bands[k:] for i in band]
        columns = _split(rest, boxes, axis=0, min_gap=rules.min_gutter)
        if len(columns) > 1 and _real_columns(columns, boxes, rules):
            return [[i for band in bands[:k] for i in band], rest]
    return [[i for band in bands for i in band]]


def _segments(bands: list[list[int]], boxes: Sequence[Box], rules: OrderRules) -> list[list[int]]:
    """Consecutive bands merged unless one holds a box spanning most of the width (a title, a
    full-width line): the merged runs may still split into columns."""
    x0 = min(boxes[i][0] for band in bands for i in band)
    x1 = max(boxes[i][2] for band in bands for i in band)
    width = max(x1 - x0, 1.0)
    out: list[list[int]] = []
    open_run = False
    for band in bands:
        spanning = any(boxes[i][2] - boxes[i][0] > rules.spanning * width for i in band)
        if spanning or not open_run:
            out.append(list(band))
        else:
            out[-1].extend(band)
        open_run = not spanning
    return out


def _split(items: list[int], boxes: Sequence[Box], axis: int, min_gap: float) -> list[list[int]]:
    """Groups of items separated by gaps of at least `min_gap` along `axis` (0 = x, 1 = y)."""
    lo, hi = axis, axis + 2
    ranked = sorted(items, key=lambda i: boxes[i][lo])
    groups: list[list[int]] = [[ranked[0]]]
    reach = boxes[ranked[0]][hi]
    for i in ranked[1:]:
        if boxes[i][lo] - reach >= min_gap and (min_gap > 0 or boxes[i][lo] >= reach):
            groups.append([i])
        else:
            groups[-1].append(i)
        reach = max(reach, boxes[i][hi])
    return groups


def _real_columns(columns: list[list[int]], boxes: Sequence[Box], rules: OrderRules) -> bool:
    x0 = min(boxes[i][0] for col in columns for i in col)
    x1 = max(boxes[i][2] for col in columns for i in col)
    width = max(x1 - x0, 1.0)
    for col in columns:
        span = max(boxes[i][2] for i in col) - min(boxes[i][0] for i in col)
        if span < rules.min_side * width or len(col) < rules.min_items_per_column:
            return False
    return True
