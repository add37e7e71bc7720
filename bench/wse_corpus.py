"""Cell truth for the corpus tables of `make eval-wse`, built from each page's own text layer.

The corpus has no cell labels. For born-digital pages the text layer is the truth of *what* each
cell says; only the grid is given here, by hand, per page: a clip (the table's body), the column
edges (or "rules": the page's vertical rules inside the clip) and the row edges ("rules": the
horizontal rules and the edges of filled row bands; "lines": one row per baseline). A word belongs
to the cell holding its centre; a cell's words are read line by line, right to left (each number
or Latin run is one word: `pagefleet.workers.wse.words.merge_ltr_runs`). Rows are logical (rightmost first).

Tunisia page 1 keeps its body rows only (its header has cells spanning columns that a flat grid
cannot hold); the rotated pdfcpu table has no flat grid at all and is scored on words only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymupdf

from pagefleet.workers.wse.words import PageWord, page_words

TUNISIA_BODY = [5, 52, 779, 520]
SPECS: list[dict[str, Any]] = [
    {
        "file": "he_macro_table_ghostscript.pdf",
        "page": 1,
        "clip": [120, 212, 470, 632],
        "columns": [120, 157, 190, 221, 252, 283, 315, 470],
        "rows": "lines",
    },
    {
        "file": "ar_tunisia_stats_table.pdf",
        "page": 1,
        "clip": [5, 186, 779, 520],
        "columns": "rules",
        "rows": "rules",
    },
    *(
        {
            "file": "ar_tunisia_stats_table.pdf",
            "page": n,
            "clip": TUNISIA_BODY,
            "columns": "rules",
            "rows": "rules",
        }
        for n in (2, 3, 4)
    ),
]
WORDS_ONLY = [("he_pdfcpu_table_rtl_niqqud.pdf", 1)]


def _rules(page: pymupdf.Page, clip: pymupdf.Rect) -> tuple[list[float], list[float]]:
    """x of vertical rules and y of horizontal rules / filled bands inside `clip`."""
    xs, ys = [], []
    for drawing in page.get_drawings():
        for item in drawing["items"]:
            if item[0] == "l":
                a, b = item[1], item[2]
                if abs(a.x - b.x) < 0.5:
                    xs.append(a.x)
                elif abs(a.y - b.y) < 0.5:
                    ys.append(a.y)
            elif item[0] == "re":
                r = item[1]
                if r.width < 1.5:
                    xs.append(r.x0)
                elif r.height < 1.5:
                    ys.append(r.y0)
                else:
                    ys += [r.y0, r.y1]
    inside_x = [x for x in xs if clip.x0 <= x <= clip.x1]
    inside_y = [y for y in ys if clip.y0 <= y <= clip.y1]
    return _dedupe(inside_x + [clip.x0, clip.x1]), _dedupe(inside_y + [clip.y0, clip.y1])


def _dedupe(values: list[float], tolerance: float = 4.0) -> list[float]:
    out: list[float] = []
    for v in sorted(values):
        if not out or v - out[-1] > tolerance:
            out.append(v)
    return out


def _baselines(words: list[PageWord], tolerance: float = 3.0) -> list[float]:
    """Row edges between baseline clusters."""
    lines = _dedupe([w.end[1] for w in words], tolerance)
    return [lines[0] - 20] + [(a + b) / 2 for a, b in zip(lines, lines[1:])] + [lines[-1] + 20]


def _band(value: float, edges: list[float]) -> int:
    for i, (lo, hi) in enumerate(zip(edges, edges[1:])):
        if lo <= value < hi:
            return i
    return -1


def truth_table(corpus: Path, spec: dict[str, Any]) -> list[list[str]]:
    with pymupdf.open(corpus / spec["file"]) as doc:
        page = doc[spec["page"] - 1]
        clip = pymupdf.Rect(spec["clip"])
        words = [
            w
            for w in page_words(page)
            if clip.contains(
                pymupdf.Point((w.bbox[0] + w.bbox[2]) / 2, (w.bbox[1] + w.bbox[3]) / 2)
            )
        ]
        rule_x, rule_y = _rules(page, clip)
    cols = rule_x if spec["columns"] == "rules" else list(spec["columns"])
    rows = rule_y if spec["rows"] == "rules" else _baselines(words)
    grid: dict[tuple[int, int], list[PageWord]] = {}
    for w in words:
        r = _band((w.bbox[1] + w.bbox[3]) / 2, rows)
        c = _band((w.bbox[0] + w.bbox[2]) / 2, cols)
        if r >= 0 and c >= 0:
            grid.setdefault((r, c), []).append(w)
    table = []
    for r in range(len(rows) - 1):
        cells = []
        for c in range(len(cols) - 2, -1, -1):  # logical order: the rightmost column first
            cell = sorted(grid.get((r, c), []), key=lambda w: (round(w.end[1]), -w.bbox[2]))
            cells.append(" ".join(w.text for w in cell))
        if any(cells):
            table.append(cells)
    return table
