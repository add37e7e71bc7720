"""Table metrics of the WSE evaluation: cell accuracy and TEDS."""

from __future__ import annotations

import pytest

from pagefleet.workers.wse.table_scores import best_match, cell_accuracy, normalized, teds

TRUTH = [["פריט", "2012", "2013"], ["סך הכל", "1.5", "-2.0"], ["ייצוא", "12%", "3,400"]]


def test_identical_tables_score_one_whatever_the_markup_and_padding():
    padded = [
        ["", "", "", ""],
        ["**פריט**", "2012", "2013", ""],
        ["סך  הכל", "1.5", "-2.0", ""],
        ["ייצוא", "12%", "3,400<br>", ""],
    ]
    assert normalized(padded) == normalized(TRUTH)
    assert teds(padded, TRUTH) == pytest.approx(1.0) and cell_accuracy(padded, TRUTH) == 1.0


def test_reversed_columns_and_a_wrong_cell_cost():
    reversed_cols = [row[::-1] for row in TRUTH]
    assert cell_accuracy(reversed_cols, TRUTH) == pytest.approx(
        3 / 9
    )  # only the middle column agrees
    assert teds(reversed_cols, TRUTH) < 1.0
    one_wrong = [row[:] for row in TRUTH]
    one_wrong[2][2] = "3,401"
    assert cell_accuracy(one_wrong, TRUTH) == pytest.approx(8 / 9)
    assert teds(reversed_cols, TRUTH) < teds(one_wrong, TRUTH) < 1.0


def test_merged_columns_and_missing_rows():
    merged = [["פריט 2012", "2013"], ["סך הכל 1.5", "-2.0"], ["ייצוא 12%", "3,400"]]
    assert cell_accuracy(merged, TRUTH) == 0.0  # cells shifted one column: nothing in place
    assert 0.0 < teds(merged, TRUTH) < 0.9
    assert cell_accuracy(TRUTH[:2], TRUTH) == pytest.approx(6 / 9)
    assert teds([], TRUTH) == 0.0


def test_best_match_picks_the_closest_table():
    other = [["a", "b"], ["c", "d"]]
    assert best_match([other, TRUTH], TRUTH) == (1, pytest.approx(1.0))
    assert best_match([], TRUTH) == (-1, 0.0)
