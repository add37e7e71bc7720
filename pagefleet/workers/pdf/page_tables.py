"""The tables of one page, found inside the sandbox child for `pagefleet.workers.pdf.layout`: ruled tables
(pagefleet.routing.structure.grid on the page's vector paths) and unruled ones (visual rows whose gaps line
up, pagefleet.routing.structure.tables.aligned_columns), each cell with its raw text, its runs of offsets in
the page text and its box, and the raw lines each table covers; and the rows of aligned gaps or
grids that no table explains (a suspicion for the checks).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pymupdf

from pagefleet.routing.structure.grid import ruled_grids
from pagefleet.routing.structure.tables import aligned_columns, is_numeric

Char = tuple[
    float, float, float, float, str, int, int
]  # x0, y0, x1, y1, c, line index, offset in the page text


def _inside(c: Char, box: tuple[float, float, float, float]) -> bool:
    cx, cy = (c[0] + c[2]) / 2, (c[1] + c[3]) / 2
    return box[0] <= cx <= box[2] and box[1] <= cy <= box[3]


def cell_spans(chars: list[Char]) -> list[list[int]]:
    """Where a cell's characters stand in the page text: its runs of consecutive offsets, in text
    order, spaces at their ends left out. The parent reads the cell from the page's repaired text
    through these, so a cell shows the words the page's text shows."""
    spans: list[list[int]] = []
    for c in sorted(chars, key=lambda c: c[6]):
        if spans and c[6] == spans[-1][1]:
            spans[-1][1] = c[6] + len(c[4])
        elif not c[4].isspace():
            spans.append([c[6], c[6] + len(c[4])])
    return spans


def _cell_text(chars: list[Char]) -> str:
    """Characters in extraction order; a space where the next MuPDF line starts apart from the last."""
    runs: list[list[Char]] = []
    for c in chars:
        if runs and runs[-1][-1][5] == c[5]:
            runs[-1].append(c)
        else:
            runs.append([c])
    out = ""
    for k, run in enumerate(runs):
        text = "".join(c[4] for c in _numbers_ltr(run))
        if k and out and not out[-1].isspace() and _apart(runs[k - 1], run):
            out += " "
        out += text
    return " ".join(out.split())


_DIGITS = frozenset(
    "0123456789\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669"
    "\u06f0\u06f1\u06f2\u06f3\u06f4\u06f5\u06f6\u06f7\u06f8\u06f9"
)
_INNER = frozenset(".,\u066b\u066c")  # decimal and thousands separators between digits


def _numbers_ltr(run: list[Char]) -> list[Char]:
    """A number reads left to right in any script: a run of digits (with separators between them)
    that MuPDF gave right to left (inside an RTL line) is put back in x order."""
    out = list(run)
    i = 0
    while i < len(out):
        if out[i][4] not in _DIGITS:
            i += 1
            continue
        j = i + 1
        while j < len(out) and (
            out[j][4] in _DIGITS
            or (out[j][4] in _INNER and j + 1 < len(out) and out[j + 1][4] in _DIGITS)
        ):
            j += 1
        out[i:j] = sorted(out[i:j], key=lambda c: c[0])
        i = j
    return out


def _apart(a: list[Char], b: list[Char]) -> bool:
    ax0, ax1 = min(c[0] for c in a), max(c[2] for c in a)
    bx0, bx1 = min(c[0] for c in b), max(c[2] for c in b)
    ay, by = (a[0][1] + a[0][3]) / 2, (b[0][1] + b[0][3]) / 2
    height = max(a[0][3] - a[0][1], 1.0)
    return abs(ay - by) > 0.5 * height or max(bx0 - ax1, ax0 - bx1) > 0.2 * height


def _covered_lines(chars: list[Char], box: tuple[float, float, float, float]) -> list[int]:
    inside: Counter[int] = Counter()
    total: Counter[int] = Counter()
    for c in chars:
        total[c[5]] += 1
        inside[c[5]] += _inside(c, box)
    return sorted(i for i in total if inside[i] * 2 > total[i])


def ruled_tables(
    page: pymupdf.Page, paths: list[dict[str, Any]], chars: list[Char]
) -> tuple[list[dict[str, Any]], int]:
    """Ruled tables (pagefleet.routing.structure.grid on the page's vector paths), and the rows of grids
    that are not a table's (a suspicion)."""
    region = _grid_region(paths, page.rect)
    if region is None:
        return [], 0
    boxes = [c[:4] for c in chars if not c[4].isspace()]
    tables, suspect = [], 0
    for tab in ruled_grids(paths, tuple(region), boxes):
        near = [c for c in chars if _inside(c, tab.bbox)]
        grid = [_row_cells(row, near) for row in tab.rows]
        if not _plausible(grid):
            suspect = max(suspect, len(grid))  # not the table's grid: a suspicion for the checks
            continue
        rows = [
            [
                {
                    "raw": _cell_text(cell_chars),
                    "spans": cell_spans(cell_chars),
                    "bbox": [round(v, 2) for v in cell] if cell else None,
                }
                for cell_chars, cell in zip(chars_row, row.cells)
            ]
            for chars_row, row in zip(grid, tab.rows)
        ]
        tables.append(
            {
                "kind": "ruled",
                "bbox": [round(v, 2) for v in tab.bbox],
                "rows": rows,
                "header_rows": 1,
                "lines": _covered_lines(chars, tab.bbox),
            }
        )
    return tables, suspect


def _edges(item: Any, min_len: float) -> tuple[int, int, tuple[float, float, float, float] | None]:
    """(horizontal, vertical) rulings one drawing item gives, and its box."""
    if item[0] == "l":
        (x0, y0), (x1, y1) = item[1], item[2]
        horizontal = abs(y1 - y0) < 1 and abs(x1 - x0) >= min_len
        vertical = abs(x1 - x0) < 1 and abs(y1 - y0) >= min_len
        box = (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))
        return int(horizontal), int(vertical), box if horizontal or vertical else None
    if item[0] in ("re", "qu"):
        if item[0] == "re":
            x0, y0, x1, y1 = item[1]
            box = (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))
        else:
            xs, ys = [p[0] for p in item[1]], [p[1] for p in item[1]]
            box = (min(xs), min(ys), max(xs), max(ys))
        width, height = box[2] - box[0], box[3] - box[1]
        wide, tall = width >= min_len, height >= min_len
        h, v = (
            (2 if wide and tall else int(wide and height < 2)),
            (2 if wide and tall else int(tall and width < 2)),
        )
        return h, v, box if h or v else None
    return 0, 0, None


def _grid_region(
    paths: list[dict[str, Any]], page_rect: pymupdf.Rect, min_len: float = 12.0
) -> pymupdf.Rect | None:
    """The box around the page's straight rulings and frames, if there are enough of them for a
    grid (two each way); None: no ruled table can be there."""
    h = v = 0
    boxes = []
    for path in paths:
        for item in path.get("items", []):
            dh, dv, box = _edges(item, min_len)
            if box is not None:
                h, v = h + dh, v + dv
                boxes.append(box)
    if h < 2 or v < 2:
        return None
    region = pymupdf.Rect(
        min(b[0] for b in boxes) - 3,
        min(b[1] for b in boxes) - 3,
        max(b[2] for b in boxes) + 3,
        max(b[3] for b in boxes) + 3,
    )
    return None if region.is_empty else region & page_rect


def _row_cells(row: Any, near: list[Char]) -> list[list[Char]]:
    """The characters of each cell of one table row (the row's band first: rows × chars, not cells × chars)."""
    y0, y1 = row.bbox[1], row.bbox[3]
    band = [c for c in near if y0 <= (c[1] + c[3]) / 2 <= y1]
    return [[c for c in band if _inside(c, cell)] if cell else [] for cell in row.cells]


def _row_count(cell: list[Char], digits_only: bool = False) -> int:
    """Visual rows inside one cell (only rows holding a digit, with `digits_only`)."""
    centres = sorted(
        {
            round((c[1] + c[3]) / 2)
            for c in cell
            if not c[4].isspace() and (c[4] in _DIGITS or not digits_only)
        }
    )
    rows, last = 0, None
    for y in centres:
        if last is None or y - last > 3:
            rows += 1
        last = y
    return rows


def _plausible(
    grid: list[list[list[Char]]],
    max_numbered_rows: int = 3,
    max_rows: int = 6,
    min_fill: float = 0.35,
) -> bool:
    """A cell holding numbers from several rows is a collapsed column, a cell of many lines is a
    framed text, a grid mostly empty is not the table's grid."""
    cells = [cell for row in grid for cell in row]
    filled = sum(1 for cell in cells if any(not c[4].isspace() for c in cell))
    if not cells or filled < min_fill * len(cells):
        return False
    return all(
        _row_count(cell, True) <= max_numbered_rows and _row_count(cell) <= max_rows
        for cell in cells
    )


def _visual_rows(lines: list[dict[str, Any]], chars: list[Char]) -> list[list[Char]]:
    """Characters grouped into visual rows (lines whose vertical centres meet), top down."""
    live = sorted(
        {c[5] for c in chars}, key=lambda i: (lines[i]["bbox"][1] + lines[i]["bbox"][3]) / 2
    )
    groups: list[list[int]] = []
    for i in live:
        y0, y1 = lines[i]["bbox"][1], lines[i]["bbox"][3]
        if groups:
            last = lines[groups[-1][0]]["bbox"]
            if abs((y0 + y1) / 2 - (last[1] + last[3]) / 2) <= 0.5 * max(last[3] - last[1], 1.0):
                groups[-1].append(i)
                continue
        groups.append([i])
    by_line: dict[int, list[Char]] = {}
    for c in chars:
        by_line.setdefault(c[5], []).append(c)
    return [[c for i in g for c in by_line.get(i, [])] for g in groups]


def _segments(row: list[Char]) -> tuple[list[tuple[float, float, int]], bool]:
    """Row → segments split at wide gaps (x0, x1, words), and whether one segment is a number."""
    ranked = sorted((c for c in row if not c[4].isspace()), key=lambda c: c[0])
    size = sorted(c[3] - c[1] for c in ranked)[len(ranked) // 2] if ranked else 10.0
    segs: list[list[Char]] = []
    for c in ranked:
        if segs and c[0] - segs[-1][-1][2] < 0.75 * size:
            segs[-1].append(c)
        else:
            segs.append([c])
    out, numeric = [], False
    for seg in segs:
        words = 1 + sum(1 for a, b in zip(seg, seg[1:]) if b[0] - a[2] > 0.2 * size)
        out.append((seg[0][0], max(c[2] for c in seg), words))
        numeric = numeric or is_numeric("".join(c[4] for c in seg))
    return out, numeric


def unruled_tables(
    lines: list[dict[str, Any]], chars: list[Char]
) -> tuple[list[dict[str, Any]], int]:
    from pagefleet.routing.structure.tables import TableRules

    rows = _visual_rows(lines, chars)
    segs = [_segments(r) for r in rows]
    found = aligned_columns([s for s, _ in segs], [n for _, n in segs])
    tables = [_unruled_table(rows[a : b + 1], gutters) for a, b, gutters in found]
    used = {i for a, b, _ in found for i in range(a, b + 1)}
    loose = TableRules(max_cell_share=0.9, max_cell_words=6.0)
    rest = [s if i not in used else [] for i, (s, _) in enumerate(segs)]
    suspect = max((b - a + 1 for a, b, _ in aligned_columns(rest, None, loose)), default=0)
    return tables, suspect


def _unruled_table(rows: list[list[Char]], gutters: list[tuple[float, float]]) -> dict[str, Any]:
    x0 = min(c[0] for r in rows for c in r)
    x1 = max(c[2] for r in rows for c in r)
    edges = [x0 - 1, *[(a + b) / 2 for a, b in gutters], x1 + 1]
    cells_rows = []
    for row in rows:
        ordered = sorted(row, key=lambda c: c[5])  # stable: extraction order inside each line
        cells = []
        for lo, hi in zip(edges, edges[1:]):
            mine = [c for c in ordered if lo <= (c[0] + c[2]) / 2 < hi]
            box = [
                round(lo, 2),
                round(min(c[1] for c in row), 2),
                round(hi, 2),
                round(max(c[3] for c in row), 2),
            ]
            cells.append({"raw": _cell_text(mine), "spans": cell_spans(mine), "bbox": box})
        cells_rows.append(cells)
    y0 = min(c[1] for r in rows for c in r)
    y1 = max(c[3] for r in rows for c in r)
    line_ids = sorted({c[5] for r in rows for c in r})
    return {
        "kind": "unruled",
        "bbox": [round(x0, 2), round(y0, 2), round(x1, 2), round(y1, 2)],
        "rows": cells_rows,
        "header_rows": 1,
        "lines": line_ids,
    }
