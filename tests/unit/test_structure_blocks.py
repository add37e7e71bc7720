"""Lines → blocks (pagefleet.routing.structure.blocks), OCR pages' blocks, and reparse's choice."""

from __future__ import annotations

from pagefleet.routing.structure.blocks import LineIn, TableIn, page_blocks
from pagefleet.routing.structure.headings import font_stats
from pagefleet.workers.cli.reparse import Criteria, options_of, version_key, why_reparse
from pagefleet.workers.ladder.ocr_structure import ensure_blocks
from pagefleet.workers.model import PageRecord, Quality, RouterInfo


def _layout(
    lines: list[tuple[str, tuple[float, float, float, float], float, bool]],
) -> tuple[str, list[LineIn]]:
    text, out, pos = "", [], 0
    for i, (line, box, size, bold) in enumerate(lines):
        out.append(LineIn(i, pos, pos + len(line), box, size, bold))
        text += line + "\n"
        pos += len(line) + 1
    return text, out


STATS = font_stats([(11.0, False, 1000), (16.0, True, 40)])


def test_rtl_two_columns_read_right_column_first() -> None:
    text, lines = _layout(
        [
            ("כותרת הדף", (300, 60, 535, 80), 16.0, True),
            ("עמודה ימנית שורה אחת", (305, 100, 535, 112), 11.0, False),
            ("עמודה ימנית שורה שתיים", (305, 113, 535, 125), 11.0, False),
            ("עמודה שמאלית שורה אחת", (60, 100, 290, 112), 11.0, False),
            ("עמודה שמאלית שורה שתיים", (60, 113, 290, 125), 11.0, False),
        ]
    )
    blocks = page_blocks(text, lines, rtl=True, stats=STATS)
    assert [(b["type"], b["text"]) for b in blocks] == [
        ("heading", "כותרת הדף"),
        ("paragraph", "עמודה ימנית שורה אחת\nעמודה ימנית שורה שתיים"),
        ("paragraph", "עמודה שמאלית שורה אחת\nעמודה שמאלית שורה שתיים"),
    ]
    assert blocks[0]["level"] == 1 and all(b["direction"] == "rtl" for b in blocks)
    assert all(text[b["start"] : b["end"]] == b["text"] for b in blocks)


def test_list_items_tables_and_furniture() -> None:
    text, lines = _layout(
        [
            ("Report 2024", (60, 20, 200, 30), 8.0, False),
            ("1. First item", (60, 100, 300, 112), 11.0, False),
            ("2. Second item", (60, 113, 300, 125), 11.0, False),
            ("North 12", (60, 140, 300, 152), 11.0, False),
            ("South 7", (60, 153, 300, 165), 11.0, False),
            ("Closing words.", (60, 190, 300, 202), 11.0, False),
            ("Page 1", (60, 810, 200, 820), 8.0, False),
        ]
    )
    table = TableIn(
        (60, 140, 300, 165), [["North", "12"], ["South", "7"]], 0, "| North | 12 |", {3, 4}
    )
    blocks = page_blocks(
        text, lines, rtl=False, stats=STATS, tables=[table], furniture={0: "header", 6: "footer"}
    )
    assert [b["type"] for b in blocks] == [
        "header",
        "list_item",
        "list_item",
        "table",
        "paragraph",
        "footer",
    ]
    assert [b.get("marker") for b in blocks[1:3]] == ["1.", "2."]
    assert blocks[3]["table"]["rows"] == [["North", "12"], ["South", "7"]]
    assert blocks[3]["text"] == "North 12\nSouth 7"


def _ocr_page(engine: str, raw: str) -> PageRecord:
    return PageRecord(
        number=1,
        router=RouterInfo(source="osd", script="he"),
        route="ocr",
        engine=engine,
        text=raw,
        raw_text=raw,
        quality=Quality(ok=True),
    )


def test_vlm_markdown_becomes_blocks() -> None:
    page = ensure_blocks(
        _ocr_page("dots", "# כותרת\n\nפסקה אחת.\n\n- פריט\n\n| א | ב |\n|---|---|\n| 1 | 2 |\n")
    )
    assert [b.type for b in page.blocks] == ["heading", "paragraph", "list_item", "table"]
    assert page.blocks[0].text == "כותרת" and page.blocks[3].table.rows == [["א", "ב"], ["1", "2"]]
    assert all(page.text[b.start : b.end] == b.text for b in page.blocks)
    assert page.markdown.startswith("# כותרת")


def test_tesseract_paragraphs_become_blocks() -> None:
    page = ensure_blocks(_ocr_page("tesseract:heb+eng", "# not markdown\n\nsecond paragraph\n"))
    assert [(b.type, b.text) for b in page.blocks] == [
        ("paragraph", "# not markdown"),
        ("paragraph", "second paragraph"),
    ]


def test_reparse_chooses_older_and_weak_documents() -> None:
    doc = {
        "pipeline_version": "0.1.9",
        "options": {"ocr": "off", "gone_option": 1},
        "pages": [
            {"number": 1, "route": "ocr", "ocr_confidence": 41.0},
            {"number": 2, "route": "text_layer"},
        ],
    }
    assert version_key("0.10.0") > version_key("0.9.1")
    assert why_reparse(doc, Criteria(below_version="0.2.0")) == ["pipeline 0.1.9 < 0.2.0"]
    assert why_reparse(doc, Criteria(below_version="0.1.9")) == []
    assert why_reparse(doc, Criteria(route="ocr")) == ["route ocr on pages [1]"]
    assert why_reparse(doc, Criteria(min_confidence=50)) == ["OCR confidence < 50 on pages [1]"]
    assert why_reparse(doc, Criteria(min_confidence=40)) == []
    assert options_of(doc).ocr == "off"


def test_a_figure_is_an_empty_block_in_its_place() -> None:
    text, lines = _layout(
        [
            ("Above the image.", (60, 100, 300, 112), 11.0, False),
            ("Below the image.", (60, 400, 300, 412), 11.0, False),
        ]
    )
    blocks = page_blocks(text, lines, rtl=False, stats=STATS, figures=[(60, 150, 300, 380)])
    assert [b["type"] for b in blocks] == ["paragraph", "figure", "paragraph"]
    figure = blocks[1]
    assert figure["text"] == "" and figure["start"] == figure["end"] == blocks[0]["end"]


def test_small_print_low_on_the_page_is_a_footnote() -> None:
    text, lines = _layout(
        [
            ("Body text with a note.1", (60, 100, 300, 112), 11.0, False),
            ("1 The note itself, in small print.", (60, 760, 300, 768), 8.0, False),
            ("2024 was a good year for small print.", (60, 300, 300, 308), 8.0, False),
        ]
    )
    blocks = page_blocks(text, lines, rtl=False, stats=STATS, height=842.0)
    kinds = {b["text"][:4]: b["type"] for b in blocks}
    assert kinds == {"Body": "paragraph", "1 Th": "footnote", "2024": "paragraph"}


def test_a_table_line_in_the_header_band_stays_in_the_table() -> None:
    text, lines = _layout(
        [
            ("Region Total", (60, 30, 300, 42), 11.0, False),
            ("North 12", (60, 43, 300, 55), 11.0, False),
        ]
    )
    table = TableIn(
        (60, 30, 300, 55), [["Region", "Total"], ["North", "12"]], 1, "| Region | Total |", {0, 1}
    )
    blocks = page_blocks(
        text, lines, rtl=False, stats=STATS, tables=[table], furniture={0: "header"}
    )
    assert [b["type"] for b in blocks] == ["table"]


def test_a_header_cell_that_spans_columns_stands_at_the_first_column_of_its_span() -> None:
    from pagefleet.routing.structure.tables import logical_rows, spread_spans

    # drawn left to right: a header cell over the two left columns, then two single columns
    rows = [["מחיר", "שנה", "פריט"], ["10", "7", "2024", "א"], ["12", "8", "2025", "ב"]]
    boxes = [
        [(0, 0, 100, 10), (100, 0, 150, 10), (150, 0, 200, 10)],
        [(0, 10, 50, 20), (50, 10, 100, 20), (100, 10, 150, 20), (150, 10, 200, 20)],
        [(0, 20, 50, 30), (50, 20, 100, 30), (100, 20, 150, 30), (150, 20, 200, 30)],
    ]
    wide, _ = spread_spans(rows, boxes, rtl=True)
    # read right to left: the spanning cell at the first column of its span, then the rest of it empty
    assert logical_rows(wide, True) == [
        ["פריט", "שנה", "מחיר", ""],
        ["א", "2024", "7", "10"],
        ["ב", "2025", "8", "12"],
    ]
    wide, _ = spread_spans(rows, boxes, rtl=False)
    assert wide[0] == ["מחיר", "", "שנה", "פריט"]
