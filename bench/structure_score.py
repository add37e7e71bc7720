"""Scoring rules of `make eval-structure` (bench/eval_structure.py), pure functions.

heading F1            predicted heading texts against the truth's, whitespace folded
table cell accuracy   per truth table, the predicted table on the same page with the most cells
                      equal at the same row and column; exact cell text (whitespace folded)
reading order         truth body blocks found in the prediction (a predicted block holding the
                      truth block's opening words); the share of consecutive truth pairs that
                      come out in the same order
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass


def fold(text: str) -> str:
    return " ".join(text.replace("**", "").split())


@dataclass
class Prediction:
    """One page as a system gave it: headings, body blocks in order, tables as logical rows."""

    headings: list[str]
    blocks: list[str]
    tables: list[list[list[str]]]


def heading_counts(truth: Sequence[str], predicted: Sequence[str]) -> tuple[int, int, int]:
    """(true positives, predicted, truth) as multisets of folded texts."""
    t, p = Counter(fold(x) for x in truth), Counter(fold(x) for x in predicted)
    return sum((t & p).values()), sum(p.values()), sum(t.values())


def f1(tp: int, predicted: int, truth: int) -> float:
    if not predicted or not truth:
        return 0.0
    precision, recall = tp / predicted, tp / truth
    return 0.0 if not tp else 2 * precision * recall / (precision + recall)


def cells_right(truth: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> int:
    right = 0
    for r, row in enumerate(truth):
        for c, cell in enumerate(row):
            if r < len(predicted) and c < len(predicted[r]) and fold(predicted[r][c]) == fold(cell):
                right += 1
    return right


def table_cells(
    truth: Sequence[Sequence[str]], candidates: Sequence[Sequence[Sequence[str]]]
) -> tuple[int, int]:
    """(cells right in the best candidate, cells in the truth table)."""
    total = sum(len(row) for row in truth)
    best = max((cells_right(truth, cand) for cand in candidates), default=0)
    return best, total


def _position(truth_text: str, blocks: Sequence[str], words: int = 4) -> int | None:
    probe = " ".join(fold(truth_text).split()[:words])
    for i, block in enumerate(blocks):
        if probe and probe in fold(block):
            return i
    return None


def order_pairs(truth_blocks: Sequence[str], predicted: Sequence[str]) -> tuple[int, int]:
    """(consecutive truth pairs in order, pairs whose both blocks were found)."""
    positions = [p for t in truth_blocks if (p := _position(t, predicted)) is not None]
    pairs = list(zip(positions, positions[1:]))
    return sum(1 for a, b in pairs if a <= b), len(pairs)
