"""Pure structure decisions: list markers, heading levels, running furniture, reading order."""

from __future__ import annotations

import pytest

from pagefleet.routing.structure.furniture import BandLine, is_page_number, running_furniture
from pagefleet.routing.structure.headings import font_stats, is_heading_text, semantic_heading
from pagefleet.routing.structure.markers import is_caption, list_marker
from pagefleet.routing.structure.reading_order import reading_order


@pytest.mark.parametrize(
    "line, marker",
    [
        ("א. סעיף ראשון", "א."),
        ("(ב) סעיף שני", "(ב)"),
        ("ג) סעיף", "ג)"),
        ("יא. סעיף", "יא."),
        ("ד' סעיף רביעי", "ד'"),
        ("١. بند أول", "١."),
        ("(٢) بند", "(٢)"),
        ("أ. بند", "أ."),
        ("(ب) بند", "(ب)"),
        ("1. First", "1."),
        ("2) Second", "2)"),
        ("(3) Third", "(3)"),
        ("1.2. Nested", "1.2."),
        ("a) item", "a)"),
        ("(iv) roman", "(iv)"),
        ("• bullet", "•"),
        ("- dash", "-"),
        ("– en dash", "–"),
    ],
)
def test_list_markers(line: str, marker: str) -> None:
    found = list_marker(line)
    assert found is not None and found.marker == marker
    assert line[found.length :].strip()  # the item text follows the marker


@pytest.mark.parametrize(
    "line",
    [
        "שלום עולם",
        "הדוח מציג את התוצאות",
        "2024 was a good year",
        "א.",
        "Table 3 shows",
        "אבג. מילה",
        "The end.",
        "",
        "•",
        "1 for (var i = 2; i < 100; ++i) {",
        "2024 was a year",
    ],
)
def test_not_list_markers(line: str) -> None:
    assert list_marker(line) is None


def test_a_number_split_from_its_dot_by_the_text_layer_is_a_marker() -> None:
    found = list_marker("1\n. בקרה רבעונית")
    assert found is not None and found.marker == "1."


def test_captions() -> None:
    assert all(
        is_caption(t)
        for t in ("Figure 1. Sample program", "Table 3: results", "איור 2 מבנה", "جدول ١ النتائج")
    )
    assert not any(is_caption(t) for t in ("Tables are fun", "Figure out the rest", "טבלאות רבות"))


def test_heading_levels_from_document_statistics() -> None:
    styles = [
        (11.0, False, 5000),
        (20.0, True, 40),
        (15.0, True, 120),
        (11.0, True, 60),
        (9.0, False, 300),
    ]
    stats = font_stats(styles)
    assert stats.body == (11.0, False)
    assert stats.level(20.0, True) == 1
    assert stats.level(15.0, True) == 2
    assert stats.level(11.0, True) == 3  # bold at body size, body not bold
    assert stats.level(11.0, False) is None and stats.level(9.0, False) is None


def test_bigger_text_is_not_a_heading_when_it_is_the_body() -> None:
    stats = font_stats([(14.0, False, 9000), (11.0, False, 100)])
    assert stats.levels == {}


def test_heading_text_must_be_short() -> None:
    assert is_heading_text("Financial Results", 1)
    assert not is_heading_text("x" * 400, 1)
    assert not is_heading_text("12.5", 1)
    assert not is_heading_text("A heading that runs on,", 1)


def test_page_numbers() -> None:
    for text in ("7", "- 7 -", "עמוד 7", "صفحة ٧", "Page 7 of 9", "7/9"):
        assert is_page_number(text), text
    for text in ("Chapter 7 results", "2024 annual report", "שלום"):
        assert not is_page_number(text), text


def test_running_header_found_by_repetition() -> None:
    pages = []
    for n in range(1, 5):
        lines = [
            BandLine(0, "Annual Report 2024 - Example Ltd", 20, 30),
            BandLine(1, f"Body text {n}", 300, 312),
            BandLine(2, f"Page {n}", 810, 820),
        ]
        if n == 2:
            lines.append(BandLine(3, "A one-off note at the top", 40, 50))
        pages.append((842.0, lines))
    marks = running_furniture(pages)
    assert all(m.get(0) == "header" and m.get(2) == "footer" for m in marks)
    assert all(1 not in m for m in marks)
    assert 3 not in marks[1]  # in the band once: not running


def test_single_page_keeps_a_lone_title_in_the_band() -> None:
    marks = running_furniture(
        [(842.0, [BandLine(0, "Report title", 20, 40), BandLine(1, "3", 810, 820)])]
    )
    assert marks == [{1: "footer"}]


def _two_columns(rtl: bool) -> list[tuple[float, float, float, float]]:
    title = (60, 60, 535, 80)
    left = [(60, 100 + 14 * i, 290, 112 + 14 * i) for i in range(5)]
    right = [(305, 100 + 14 * i, 535, 112 + 14 * i) for i in range(5)]
    return [title, *left, *right]


def test_reading_order_columns_ltr() -> None:
    order = reading_order(_two_columns(False), rtl=False)
    assert order == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]


def test_reading_order_columns_rtl_right_column_first() -> None:
    order = reading_order(_two_columns(True), rtl=True)
    assert order == [0, 6, 7, 8, 9, 10, 1, 2, 3, 4, 5]


def test_reading_order_narrow_marker_column_is_not_a_column() -> None:
    bullets = [(60, 100 + 14 * i, 70, 112 + 14 * i) for i in range(4)]
    texts = [(80, 100 + 14 * i, 400, 112 + 14 * i) for i in range(4)]
    order = reading_order([*bullets, *texts], rtl=False)
    assert order == [0, 4, 1, 5, 2, 6, 3, 7]


def test_semantic_headings_whatever_the_font() -> None:
    for text in (
        "Chapter 3",
        "Appendix B: Tables",
        "נספח ב': טבלאות",
        "ביאור 4",
        "פרק שני",
        "الفصل الثاني",
        "ملحق ١",
    ):
        assert semantic_heading(text), text
    for text in (
        "Chapter 3 describes the method we used for the survey and why we chose it over the others",
        "ביאור\nשורה שנייה",
        "the chapter 3",
        "חלקים רבים של המסמך",
    ):
        assert not semantic_heading(text), text


def test_a_header_set_low_still_starts_in_the_band() -> None:
    pages = [
        (
            653.0,
            [
                BandLine(0, "الجريدة الرسمية - العدد 9", 44, 64),
                BandLine(1, str(n), 44, 65),
                BandLine(2, f"نص الصفحة {n}", 80, 300),
            ],
        )
        for n in range(2, 6)
    ]
    marks = running_furniture(pages)
    assert all(m == {0: "header", 1: "header"} for m in marks)
