"""Reading order of boxes on a page: recursive XY-cut, columns right to left on RTL pages.

    region ─► a vertical gutter crossed by no box?  ─► columns (RTL: right first), each recursively
          └─► else horizontal gaps?                  ─► bands top to bottom, each recursively
          └─► else                                    ─► top to bottom, then by x (RTL: right first)

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
    if len(bands) > 1:
        return [i for band in bands for i in _order(band, boxes, rtl, rules)]
    return sorted(items, key=lambda i: (round(boxes[i][1]), -boxes[i][2] if rtl else boxes[i][0]))


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
