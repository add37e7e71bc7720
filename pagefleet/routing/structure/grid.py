"""Ruled tables from a page's vector paths: rulings → snapped and joined edges → intersections →
the smallest cells → tables of cells that share corners.

The rules are those of PyMuPDF's `find_tables` (strategy "lines", itself pdfplumber's): a path's
axis-parallel lines and the sides of its rectangles (a rectangle thinner than `MIN_LENGTH` is one
line through its middle) are edges; edges within `SNAP` of one another snap to their mean
position and join when their gaps are at most `SNAP`; a box of touching paths that holds text
adds its frame; a point where a vertical and a horizontal edge meet (within `SNAP`) is a corner;
each corner's smallest rectangle whose four sides are drawn is a cell; cells sharing a corner
form a table, kept when it has two columns and some text. What differs: plain tuples instead of a
dictionary per character and per edge, the characters rung 1 already read instead of a second
text page, corners indexed by row and column instead of a scan of every later corner, a line is
horizontal (or vertical) when its ends differ by at most `FLAT` across it (PyMuPDF demands an
exact match, and takes a nearly flat line for a vertical one), a frame's text is tested in page
coordinates (PyMuPDF mirrors the characters' y), and there is no header heuristic here (the
caller takes the first row as the header).

Pure geometry over plain data (`get_cdrawings()` paths, character boxes): no PDF library here.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

SNAP = 3.0  # snap, join and intersection tolerance (PyMuPDF's defaults)
MIN_LENGTH = 3.0  # shorter edges are dropped; a thinner rectangle is a line
FLAT = 1.0  # a line whose ends differ by this much across it is still axis-parallel
MAX_CLUSTERED = (
    1000  # joining touching paths is quadratic: a page drawing more (a chart, a map) gets no frames
)

Box = tuple[float, float, float, float]
Edge = tuple[float, float, float]  # position across, start, end along


@dataclass(frozen=True)
class Row:
    bbox: Box
    cells: list[Box | None]  # one slot per column of the table; None where a cell spans it


@dataclass(frozen=True)
class Grid:
    bbox: Box
    rows: list[Row]


def _clipped(a: float, b: float, lo: float, hi: float) -> tuple[float, float] | None:
    a, b = min(a, b), max(a, b)
    if a > hi or b < lo:
        return None
    return max(a, lo), min(b, hi)


class _Edges:
    """Horizontal edges (y, x0, x1) and vertical ones (x, y0, y1) inside a clip."""

    def __init__(self, clip: Box) -> None:
        self.clip = clip
        self.h: list[Edge] = []
        self.v: list[Edge] = []

    def line(self, p: Sequence[float], q: Sequence[float]) -> None:
        (x0, y0), (x1, y1) = p, q
        cx0, cy0, cx1, cy1 = self.clip
        if abs(y1 - y0) <= FLAT:
            span = _clipped(x0, x1, cx0, cx1)
            y = (y0 + y1) / 2
            if span and cy0 <= y <= cy1:
                self.h.append((y, *span))
        elif abs(x1 - x0) <= FLAT:
            span = _clipped(y0, y1, cy0, cy1)
            x = (x0 + x1) / 2
            if span and cx0 <= x <= cx1:
                self.v.append((x, *span))

    def rect(self, box: Sequence[float]) -> None:
        x0, y0, x1, y1 = (
            min(box[0], box[2]),
            min(box[1], box[3]),
            max(box[0], box[2]),
            max(box[1], box[3]),
        )
        width, height = x1 - x0, y1 - y0
        if width <= MIN_LENGTH and width < height:
            self.line(((x0 + x1) / 2, y0), ((x0 + x1) / 2, y1))
        elif height <= MIN_LENGTH and height < width:
            self.line((x0, (y0 + y1) / 2), (x1, (y0 + y1) / 2))
        else:
            self.frame((x0, y0, x1, y1))

    def frame(self, box: Box) -> None:
        x0, y0, x1, y1 = box
        self.line((x0, y0), (x1, y0))
        self.line((x0, y1), (x1, y1))
        self.line((x0, y0), (x0, y1))
        self.line((x1, y0), (x1, y1))

    def quad(self, corners: Sequence[Sequence[float]]) -> None:
        ul, ur, ll, lr = corners
        for p, q in ((ul, ll), (ll, lr), (lr, ur), (ur, ul)):
            self.line(p, q)


def edges_from_paths(paths: Iterable[dict[str, Any]], clip: Box) -> tuple[list[Edge], list[Edge]]:
    """The raw (unsnapped) horizontal and vertical edges of `get_cdrawings()` paths inside `clip`."""
    edges = _Edges(clip)
    for path in paths:
        items = path.get("items") or []
        if path.get("closePath") and items and items[0][0] == "l" and items[-1][0] == "l":
            items = [*items, ("l", items[-1][2], items[0][1])]
        for item in items:
            kind = item[0]
            if kind == "l":
                edges.line(item[1], item[2])
            elif kind == "re":
                edges.rect(item[1])
            elif kind == "qu":
                edges.quad(item[1])
    return edges.h, edges.v


def _near(a: Box, b: Box) -> bool:
    """An x end of `a` within `b`'s x range and a y end within its y range (each within `SNAP`)."""
    return (b[0] - SNAP <= a[0] <= b[2] + SNAP or b[0] - SNAP <= a[2] <= b[2] + SNAP) and (
        b[1] - SNAP <= a[1] <= b[3] + SNAP or b[1] - SNAP <= a[3] <= b[3] + SNAP
    )


def _touch(a: Box, b: Box) -> bool:
    """PyMuPDF's neighbours: one box reaches into the other at an end (a cross of two lines that
    meet only in their middles does not touch)."""
    return _near(a, b) or _near(b, a)


def path_clusters(boxes: Iterable[Sequence[float]]) -> list[Box]:
    """Boxes of paths that touch (within `SNAP`), joined until none touches another."""
    todo: list[Box] = sorted({(b[0], b[1], b[2], b[3]) for b in boxes}, key=lambda b: (b[3], b[0]))
    out: list[Box] = []
    while todo:
        box, rest = todo[0], todo[1:]
        grown = True
        while grown:
            grown, keep = False, []
            for other in rest:
                if _touch(box, other):
                    box = (
                        min(box[0], other[0]),
                        min(box[1], other[1]),
                        max(box[2], other[2]),
                        max(box[3], other[3]),
                    )
                    grown = True
                else:
                    keep.append(other)
            rest = keep
        out.append(box)
        todo = rest
    return out


def _snap(edges: list[Edge]) -> list[Edge]:
    """Edges whose positions lie within `SNAP` of the previous one (sorted) move to their mean;
    collinear edges whose gap is at most `SNAP` join. The result is sorted (position, then start)."""
    if not edges:
        return []
    positions = sorted({e[0] for e in edges})
    groups: list[list[float]] = [[positions[0]]]
    for p in positions[1:]:
        if p <= groups[-1][-1] + SNAP:
            groups[-1].append(p)
        else:
            groups.append([p])
    member = {p: i for i, g in enumerate(groups) for p in g}
    by_group: dict[int, list[Edge]] = defaultdict(list)
    for e in edges:
        by_group[member[e[0]]].append(e)
    out: list[Edge] = []
    for i in sorted(by_group):
        group = by_group[i]
        mean = sum(e[0] for e in group) / len(group)
        joined: list[list[float]] = []
        for _, a, b in sorted(group, key=lambda e: e[1]):
            if joined and a <= joined[-1][1] + SNAP:
                joined[-1][1] = max(joined[-1][1], b)
            else:
                joined.append([a, b])
        out += [(mean, a, b) for a, b in joined if b - a >= MIN_LENGTH]
    return out


def _has_text(box: Box, chars: Sequence[Box]) -> bool:
    x0, y0, x1, y1 = box
    return any(c[0] < x1 and c[2] > x0 and c[1] < y1 and c[3] > y0 for c in chars)


def find_grids(h_raw: list[Edge], v_raw: list[Edge], chars: Sequence[Box]) -> list[Grid]:
    """Tables from raw edges; `chars`: boxes of the page's visible characters (a table without
    any is dropped)."""
    h, v = _snap(h_raw), _snap(v_raw)
    ys = [e[0] for e in h]  # sorted, for bisection
    corners: dict[tuple[float, float], tuple[set[int], set[int]]] = {}
    for vi, (x, top, bottom) in enumerate(v):
        # only the horizontal edges whose y lies along this vertical one (a dense page has thousands)
        for hi in range(bisect_left(ys, top - SNAP), bisect_right(ys, bottom + SNAP)):
            y, left, right = h[hi]
            if left - SNAP <= x <= right + SNAP:
                vs, hs = corners.setdefault((x, y), (set(), set()))
                vs.add(vi)
                hs.add(hi)
    cells = _cells(corners)
    return [
        g for g in (_grid(t) for t in _tables(cells)) if g is not None and _has_text(g.bbox, chars)
    ]


def _cells(corners: dict[tuple[float, float], tuple[set[int], set[int]]]) -> list[Box]:
    """Each corner's smallest drawn rectangle to its right and below (pdfplumber's rule)."""
    column: dict[float, list[float]] = defaultdict(list)
    row: dict[float, list[float]] = defaultdict(list)
    for x, y in sorted(corners):
        column[x].append(y)
        row[y].append(x)
    cells = []
    for (x, y), (vs, hs) in sorted(corners.items()):
        below = [b for b in column[x] if b > y and corners[(x, b)][0] & vs]
        right = [r for r in row[y] if r > x and corners[(r, y)][1] & hs]
        cell = next(
            (
                (x, y, r, b)
                for b in below
                for r in right
                if (r, b) in corners
                and corners[(r, b)][0] & corners[(r, y)][0]
                and corners[(r, b)][1] & corners[(x, b)][1]
            ),
            None,
        )
        if cell is not None:
            cells.append(cell)
    return cells


def _tables(cells: list[Box]) -> list[list[Box]]:
    """Cells grouped by shared corners (connected components), top-most then left-most first."""
    by_corner: dict[tuple[float, float], list[int]] = defaultdict(list)
    for i, (x0, y0, x1, y1) in enumerate(cells):
        for corner in ((x0, y0), (x0, y1), (x1, y0), (x1, y1)):
            by_corner[corner].append(i)
    seen: set[int] = set()
    tables = []
    for start in range(len(cells)):
        if start in seen:
            continue
        todo, members = [start], []
        seen.add(start)
        while todo:
            i = todo.pop()
            members.append(cells[i])
            x0, y0, x1, y1 = cells[i]
            for corner in ((x0, y0), (x0, y1), (x1, y0), (x1, y1)):
                for j in by_corner[corner]:
                    if j not in seen:
                        seen.add(j)
                        todo.append(j)
        tables.append(members)
    return sorted(tables, key=lambda t: min((c[1], c[0]) for c in t))


def _grid(cells: list[Box]) -> Grid | None:
    """Rows by top edge, one slot per distinct left edge; None for fewer than two columns."""
    if len({c[0] for c in cells}) < 2 or len({c[2] for c in cells}) < 2:
        return None
    xs = sorted({c[0] for c in cells})
    by_top: dict[float, dict[float, Box]] = defaultdict(dict)
    for c in sorted(cells, key=lambda c: (c[1], c[0])):
        by_top[c[1]].setdefault(c[0], c)
    rows = []
    for top in sorted(by_top):
        slots = [by_top[top].get(x) for x in xs]
        present = [c for c in slots if c is not None]
        rows.append(
            Row(
                (
                    min(c[0] for c in present),
                    min(c[1] for c in present),
                    max(c[2] for c in present),
                    max(c[3] for c in present),
                ),
                slots,
            )
        )
    bbox = (
        min(c[0] for c in cells),
        min(c[1] for c in cells),
        max(c[2] for c in cells),
        max(c[3] for c in cells),
    )
    return Grid(bbox, rows)


def ruled_grids(paths: Sequence[dict[str, Any]], clip: Box, chars: Sequence[Box]) -> list[Grid]:
    """The ruled tables inside `clip`: path edges plus the frames of touching-path clusters that
    hold a character."""
    h, v = edges_from_paths(paths, clip)
    frames = _Edges(clip)
    boxes = [p["rect"] for p in paths if p.get("rect")]
    for box in path_clusters(boxes) if len(boxes) <= MAX_CLUSTERED else []:
        if any(
            box[0] <= c[0] and c[2] <= box[2] and box[1] <= c[1] and c[3] <= box[3] for c in chars
        ):
            frames.frame(box)
    return find_grids(h + _missing(frames.h, h), v + _missing(frames.v, v), chars)


def _missing(sides: list[Edge], drawn: list[Edge]) -> list[Edge]:
    """A frame's sides where no drawn edge runs (within `SNAP`): a ruled table's frame is its own
    outer rulings and must not pull them toward the paths' outer bounds."""
    return [
        s
        for s in sides
        if not any(abs(d[0] - s[0]) <= SNAP and d[1] <= s[2] and s[1] <= d[2] for d in drawn)
    ]
