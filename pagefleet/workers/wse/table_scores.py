"""Table metrics for the WSE evaluation: cell accuracy and TEDS (tree-edit-distance similarity).

Both compare rows of cells in logical order after the same normalisation: inline HTML and
Markdown emphasis dropped, whitespace removed from cells (spacing is layout), rows and columns
that are empty in every cell dropped (parsers pad tables with them).

    cell_accuracy(pred, truth)   share of truth cells equal to the predicted cell at the same
                                 column, truth rows matched in order to the predicted row with
                                 the most equal cells (each predicted row used once)
    teds(pred, truth)            1 − TED / max(|nodes|) over ``table → tr → td(text)`` trees
                                 (Zhong et al., 2020), a renamed cell costing the normalised
                                 Levenshtein distance of the two texts; tree edit distance by APTED
    best_match(tables, truth)    the predicted table with the highest TEDS (a parser may split one
                                 table or find others on the page)
    crop_to_truth(pred, truth)   the predicted rows spanning the matched ones (body-only truth)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rapidfuzz.distance import Levenshtein

from pagefleet.workers.wse.decode import strip_tags

Table = Sequence[Sequence[str]]


def norm_cell(cell: str) -> str:
    return "".join(strip_tags(cell).replace("**", "").replace("__", "").split())


def normalized(table: Table) -> list[list[str]]:
    rows = [[norm_cell(c) for c in row] for row in table]
    rows = [r for r in rows if any(r)]
    width = max((len(r) for r in rows), default=0)
    rows = [r + [""] * (width - len(r)) for r in rows]
    keep = [c for c in range(width) if any(r[c] for r in rows)]
    return [[r[c] for c in keep] for r in rows]


def _matches(p: list[list[str]], t: list[list[str]]) -> list[tuple[int, int, int]]:
    """(truth row, predicted row, equal cells): truth rows in order, each to the later predicted
    row with the most cells equal at the same column."""
    out, start = [], 0
    for i, row in enumerate(t):
        scores = [
            (sum(a == b for a, b in zip(row, cand)), j) for j, cand in enumerate(p) if j >= start
        ]
        if not scores:
            break
        best, j = max(scores, key=lambda s: (s[0], -s[1]))
        if best:
            out.append((i, j, best))
            start = j + 1
    return out


def cell_accuracy(pred: Table, truth: Table) -> float:
    p, t = normalized(pred), normalized(truth)
    total = sum(len(r) for r in t)
    if not total:
        return 1.0
    return sum(equal for _, _, equal in _matches(p, t)) / total


def crop_to_truth(pred: Table, truth: Table) -> list[list[str]]:
    """The predicted rows from the first to the last one matching a truth row (normalised): for a
    truth that holds a table's body only, so the header a parser also found is not counted."""
    p = normalized(pred)
    found = _matches(p, normalized(truth))
    return p[found[0][1] : found[-1][1] + 1] if found else []


@dataclass
class _Node:
    name: str
    text: str = ""
    children: list[_Node] = field(default_factory=list)


def _tree(table: list[list[str]]) -> _Node:
    return _Node(
        "table", children=[_Node("tr", children=[_Node("td", c) for c in row]) for row in table]
    )


def _size(node: _Node) -> int:
    return 1 + sum(_size(c) for c in node.children)


def teds(pred: Table, truth: Table) -> float:
    from apted import APTED, Config

    class _Cost(Config):
        def rename(self, a: _Node, b: _Node) -> float:
            if a.name != b.name:
                return 1.0
            if a.name != "td" or a.text == b.text:
                return 0.0
            return Levenshtein.normalized_distance(a.text, b.text)

        def children(self, node: _Node) -> list[_Node]:
            return node.children

    pn, tn = normalized(pred), normalized(truth)
    if not pn or not tn:
        return float(pn == tn)  # no table at all: nothing recovered (not the shared root's 1/n)
    p, t = _tree(pn), _tree(tn)
    distance = APTED(p, t, _Cost()).compute_edit_distance()
    return max(0.0, 1.0 - distance / max(_size(p), _size(t)))


def best_match(tables: Sequence[Table], truth: Table) -> tuple[int, float]:
    """(index, TEDS) of the predicted table closest to `truth`; (-1, 0.0) when there is none."""
    best = (-1, 0.0)
    for i, table in enumerate(tables):
        score = teds(table, truth)
        if score > best[1]:
            best = (i, score)
    return best
