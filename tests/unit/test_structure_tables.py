"""Tables over plain data: logical column order, GFM, unruled-table evidence, agreement."""

from __future__ import annotations

from pagefleet.routing.structure.tables import (
    aligned_columns,
    cell_agreement,
    gfm,
    is_numeric,
    is_rtl_table,
    layout_rows,
    logical_rows,
    numeric_columns,
)


def test_rtl_table_columns_reversed_cells_untouched() -> None:
    drawn = [["שינוי", "2024", "סעיף"], ["-4.5%", "1,410.9", "הכנסות ABC"]]
    assert is_rtl_table([c for r in drawn for c in r])
    assert logical_rows(drawn, rtl=True) == [
        ["סעיף", "2024", "שינוי"],
        ["הכנסות ABC", "1,410.9", "-4.5%"],
    ]
    assert logical_rows(drawn, rtl=False) == drawn


def test_latin_table_is_not_rtl() -> None:
    assert not is_rtl_table(["Region", "North", "1,200", "מ"])


def test_gfm_escapes_pipes_and_pads_rows() -> None:
    md = gfm([["a", "b|c"], ["1"]])
    assert md.splitlines() == ["| a | b\\|c |", "|---|---|", "| 1 |  |"]


def test_numbers() -> None:
    assert all(is_numeric(x) for x in ("1,234.5", "-56", "12.5%", "(3)", "١٢٣", "7 000"))
    assert not any(is_numeric(x) for x in ("1.", "a1", "", "2024 report"))
    assert numeric_columns([["name", "sum"], ["a", "1"], ["b", "2.5"]]) == [1]


def _row(*cells: tuple[float, float, int]) -> list[tuple[float, float, int]]:
    return list(cells)


def test_aligned_columns_finds_an_unruled_table() -> None:
    rows = [_row((60, 120, 1), (200, 240, 1), (300, 350, 1)) for _ in range(4)]
    found = aligned_columns(rows)
    assert len(found) == 1
    first, last, gutters = found[0]
    assert (first, last) == (0, 3) and len(gutters) == 2


def test_two_column_prose_is_not_a_table() -> None:
    rows = [_row((60, 290, 9), (305, 535, 10)) for _ in range(6)]
    assert aligned_columns(rows) == []


def test_two_columns_need_numbers() -> None:
    rows = [_row((60, 120, 1), (300, 350, 1)) for _ in range(4)]
    assert aligned_columns(rows) == []
    assert len(aligned_columns(rows, [True] * 4)) == 1


def test_sparse_column_is_not_a_table() -> None:
    rows = [_row((60, 70, 1), (300, 500, 3))] * 3 + [
        _row((60, 120, 1), (200, 240, 1), (300, 350, 1))
    ]
    assert aligned_columns(rows) == []


def test_layout_rows_counts_column_aligned_lines() -> None:
    table = "Region     Q1      Q2\nNorth      1,200   1,350\nSouth      980     1,040\n"
    assert layout_rows(table) == 3
    prose = "This is a long line of prose that goes on\nand on without any column structure in it\n"
    assert layout_rows(prose) == 0


def test_cell_agreement_ignores_poppler_word_splits() -> None:
    cells = ["البند", "الإيرادات", "9,420", "صافي الربح"]
    layout = "\u202bاﻟﺒﻨﺪ\u202c\n\u202bاﻹﻳﺮ ادات\u202c    9,420\n\u202bﺻﺎﻓﻲ ا ﻟﺮﺑﺢ\u202c"
    assert cell_agreement(cells, layout) == (1.0, 1.0)
    assert cell_agreement(["-4.5%", "٤٥٪"], "4.5%-   \u202a٪٤٥\u202c") == (
        1.0,
        1.0,
    )  # signs where Poppler puts them
    precision, recall = cell_agreement(["wrong", "cells"], layout)
    assert precision == 0.0 and recall == 0.0


def test_cell_by_cell_agreement_is_order_free_and_checks_the_cells() -> None:
    from pagefleet.routing.structure.tables import cell_box_agreement, poppler_tsv_words, signature

    assert signature("صافي الربح") == signature(
        "ﺢﺑﺮﻟا ﻲﻓﺎﺻ"
    )  # glyphs, presentation forms, any order
    cells = [("שם", (0, 0, 50, 10)), ("12.5", (50, 0, 100, 10)), ("", (100, 0, 150, 10))]
    words = [(10, 1, 20, 9, "ם"), (20, 1, 30, 9, "ש"), (60, 1, 90, 9, "12.5")]
    assert cell_box_agreement(cells, words) == (1.0, 1.0)
    swapped = [("12.5", (0, 0, 50, 10)), ("שם", (50, 0, 100, 10))]
    assert cell_box_agreement(swapped, words) == (0.0, 0.0)  # right words, wrong cells
    tsv = (
        "level\tpage_num\tpar_num\tblock_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n"
        "1\t1\t0\t0\t0\t0\t0\t0\t595\t842\t-1\t###PAGE###\n5\t1\t0\t0\t0\t0\t10.5\t20\t5\t8\t100\tשם\n"
    )
    assert poppler_tsv_words(tsv) == {1: [(10.5, 20.0, 15.5, 28.0, "שם")]}


def test_three_columns_of_prose_are_not_a_table() -> None:
    prose = [_row((60, 200, 4), (228, 368, 4), (395, 535, 5)) for _ in range(8)]
    assert aligned_columns(prose) == []
    labelled = [_row((60, 100, 1), (228, 368, 4), (395, 535, 4)) for _ in range(4)]
    assert len(aligned_columns(labelled)) == 1  # a column of one-word labels: a table


def test_section_label_rows_stay_inside_an_unruled_table() -> None:
    header = _row((100, 130, 1), (200, 230, 1), (300, 340, 1))
    data = _row((100, 130, 1), (200, 230, 1), (300, 340, 1))
    label = _row((300, 380, 2))  # one segment, inside the label column
    prose = _row((60, 500, 12))  # crosses the gutters: the table ends above it
    rows = [header, label, data, data, label, data, data, prose]
    found = aligned_columns(rows, [False, False, True, True, False, True, True, False])
    assert [(a, b) for a, b, _ in found] == [(0, 6)]


def test_cell_box_agreement_equals_its_per_word_definition() -> None:
    """Words outside every cell are skipped before the cell loop: the same result as matching each
    word against every cell, first cell wins (random tables, overlapping and missing boxes)."""
    import random

    from pagefleet.routing.structure.tables import cell_box_agreement, signature

    def reference(cells, words):  # type: ignore[no-untyped-def]
        theirs = [[] for _ in cells]
        for x0, y0, x1, y1, text in words:
            cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
            hit = next(
                (
                    i
                    for i, (_, b) in enumerate(cells)
                    if b and b[0] <= cx <= b[2] and b[1] <= cy <= b[3]
                ),
                None,
            )
            if hit is not None:
                theirs[hit].append(text)
        ours, ref = [signature(t) for t, _ in cells], [signature(" ".join(t)) for t in theirs]
        matched = sum(1 for a, b in zip(ours, ref) if a and a == b)
        mine, other = sum(1 for a in ours if a), sum(1 for b in ref if b)
        return (round(matched / mine, 4) if mine else 0.0), (
            round(matched / other, 4) if other else 0.0
        )

    rng = random.Random(5)
    for _ in range(2000):
        cells = []
        for _ in range(rng.randint(0, 8)):
            x, y = rng.uniform(0, 500), rng.uniform(0, 700)
            box = (
                None
                if rng.random() < 0.2
                else (x, y, x + rng.uniform(0, 80), y + rng.uniform(0, 30))
            )
            cells.append((rng.choice(["a b", "", "12", "שלום", "ab"]), box))
        words = []
        for _ in range(rng.randint(0, 30)):
            x, y = rng.uniform(0, 600), rng.uniform(0, 800)
            words.append(
                (
                    x,
                    y,
                    x + rng.uniform(0, 40),
                    y + rng.uniform(0, 12),
                    rng.choice(["a", "b", "12", "שלום", "ab"]),
                )
            )
        assert cell_box_agreement(cells, words) == reference(cells, words)
