"""Structure extraction on generated PDFs: the child's gathering (in-process here), blocks from
it, and the table check against real Poppler (fail closed)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pymupdf
import pytest

from pagefleet.routing.normalize import normalize
from pagefleet.routing.structure.blocks import TableIn
from pagefleet.workers.ladder.structure import document_layout, page_structure, structure_page
from pagefleet.workers.ladder.tablecheck import check_tables
from pagefleet.workers.model import Attempt, PageRecord, Quality, RouterInfo
from pagefleet.workers.pdf import layout, page_tables
from pagefleet.workers.pdf.mupdf import _TEXT_FLAGS, _extract_page


def _pages(pdf: Path) -> list[dict]:
    doc = pymupdf.open(pdf)
    pages = [_extract_page(doc, n) for n in range(1, doc.page_count + 1)]
    layout.add_layout(doc, pages, _TEXT_FLAGS)
    return pages


def _record(page: dict) -> PageRecord:
    fixed = normalize(page["text"])
    return PageRecord(
        number=page["number"],
        router=RouterInfo(source="text_layer", script="he"),
        route="text_layer",
        engine="pymupdf",
        attempts=[Attempt(engine="pymupdf", accepted=True, rung="text_layer")],
        text=fixed.text,
        raw_text=page["text"],
        edits=[e.to_dict() for e in fixed.edits],
        quality=Quality(ok=True),
    )


@pytest.mark.parametrize(
    "name",
    [
        "he_report_tables",
        "ar_report_tables",
        "en_report_tables",
        "he_two_columns",
        "en_two_columns",
        "ar_two_columns",
        "mix_he_en_table",
        "he_title_over_columns",
        "ar_indic_digits_table",
        "en_long_report",
        "en_three_columns",
        "he_three_columns",
    ],
)
def test_blocks_match_the_truth(structure_dir: Path, name: str) -> None:
    truth = json.loads((structure_dir / f"{name}.truth.json").read_text(encoding="utf-8"))
    pages = _pages(structure_dir / f"{name}.pdf")
    doc = document_layout(pages)
    for page, want in zip(pages, truth["pages"]):
        fixed = normalize(page["text"])
        blocks, tables = page_structure(page, fixed.text, [e.to_dict() for e in fixed.edits], doc)
        body = [b for b in blocks if b["type"] not in ("header", "footer")]
        assert [" ".join(b["text"].split()) for b in body if b["type"] == "heading"] == [
            b["text"] for b in want["blocks"] if b["type"] == "heading"
        ]
        assert [t.rows for t in tables] == [
            b["rows"] for b in want["blocks"] if b["type"] == "table"
        ]
        texts = [set(re.findall(r"\w+", b["text"])) for b in body]
        wanted = [re.findall(r"\w+", b["text"]) for b in want["blocks"] if b["type"] != "table"]
        found = [next(i for i, t in enumerate(texts) if set(w[1:] or w) <= t) for w in wanted]
        assert found == sorted(found), "reading order"


def test_a_table_that_disagrees_with_poppler_is_refused(structure_dir: Path) -> None:
    pdf = structure_dir / "he_report_tables.pdf"
    page = _pages(pdf)[0]
    real = page["layout"]["tables"][0]
    good = TableIn(
        tuple(real["bbox"]),
        [["סעיף", "2023"], ["הכנסות", "1,250.4", "1,410.9", "12.8%"]],
        1,
        "",
        set(),
    )
    wrong = TableIn(
        tuple(real["bbox"]),
        [["שגוי", "לגמרי", "999"], ["עוד", "תאים", "שלא", "קיימים"]],
        1,
        "",
        set(),
    )
    assert check_tables(str(pdf), 1, [wrong], 0).reasons == ["table_unrecovered"]
    assert check_tables(str(pdf), 1, [good], 0).metrics["table_precision"] >= 0.85


def test_a_corroborated_table_suspicion_quarantines_the_page(structure_dir: Path) -> None:
    pdf = structure_dir / "he_report_tables.pdf"
    pages = _pages(pdf)
    doc = document_layout(pages)
    page = dict(pages[0])
    page["layout"] = {
        **page["layout"],
        "tables": [],
        "aligned_rows": 5,
    }  # the table finder saw nothing
    record = structure_page(_record(page), page, doc, str(pdf))
    assert record.route == "review_required" and record.quality.reasons == ["table_unrecovered"]
    assert record.text == "" and record.markdown == "" and record.review_preview is not None
    assert record.review_preview.text and record.edit_map.target == "review_preview"
    assert not record.attempts[0].accepted


def test_an_uncorroborated_suspicion_is_a_warning(structure_dir: Path) -> None:
    pdf = structure_dir / "he_two_columns.pdf"
    pages = _pages(pdf)
    page = dict(pages[0])
    page["layout"] = {**page["layout"], "aligned_rows": 3}
    record = structure_page(_record(page), page, document_layout(pages), str(pdf))
    assert record.route == "text_layer" and "table_suspected" in record.quality.warnings
    assert record.blocks and record.markdown


def test_numbers_read_left_to_right_inside_rtl_cells() -> None:
    def char(c: str, x: float, line: int = 0) -> tuple:
        return (x, 0.0, x + 5, 10.0, c, line)

    given = [
        char("٥", 20),
        char("٤", 15),
        char("٪", 10),
    ]  # MuPDF gave the RTL line's digits right to left
    assert "".join(c[4] for c in page_tables._numbers_ltr(given)) == "٤٥٪"
    run = [char("ש", 60), char(" ", 55), char("0", 40), char(",", 35), char("5", 30), char("2", 25)]
    assert (
        "".join(c[4] for c in page_tables._numbers_ltr(run)) == "ש 25,0"
    )  # letters stay; the number is put in x order
    assert "".join(c[4] for c in page_tables._numbers_ltr([char("1", 0), char("2", 5)])) == "12"


@pytest.mark.slow
def test_structured_recovery_pymupdf4llm_gives_logical_tables_that_pass_the_check(
    structure_dir: Path,
) -> None:
    from pagefleet.workers.ladder import structure

    pdf = structure_dir / "he_report_tables.pdf"
    pages = _pages(pdf)
    recovered = structure.recover_page(
        "pymupdf4llm", str(pdf), _record(pages[0]), pages[0], document_layout(pages)
    )
    assert recovered is not None and recovered.metrics["table_precision"] >= 0.85
    table = next(b for b in recovered.blocks if b["type"] == "table")["table"]
    assert table["rows"][0] == [
        "סעיף",
        "2023",
        "2024",
        "שינוי",
    ]  # pymupdf4llm draws it left to right
    assert (
        structure.recover_page(
            "no-such-recoverer", str(pdf), _record(pages[0]), pages[0], document_layout(pages)
        )
        is None
    )


def test_a_page_reports_the_compressed_size_of_its_images(tmp_path: Path) -> None:
    """`image_bytes` (the OCR stage sends the heaviest scans first) is the image streams' length."""
    import numpy as np

    doc = pymupdf.open()
    page = doc.new_page()
    noise = np.random.default_rng(1).integers(0, 256, (120, 160), dtype=np.uint8)
    pix = pymupdf.Pixmap(pymupdf.csGRAY, 160, 120, noise.tobytes(), False)
    page.insert_image(pymupdf.Rect(50, 50, 370, 290), pixmap=pix)
    doc.new_page().insert_text((72, 72), "text only")
    doc.save(tmp_path / "img.pdf")
    doc = pymupdf.open(tmp_path / "img.pdf")
    xref = doc[0].get_images()[0][0]
    stored = int(doc.xref_get_key(xref, "Length")[1])
    assert _extract_page(doc, 1)["image_bytes"] == stored > 10_000  # noise does not compress
    assert _extract_page(doc, 2)["image_bytes"] == 0


def test_a_document_layout_travels_as_json(structure_dir: Path) -> None:
    """split_done sends each structure_range task the font statistics and its pages' furniture as
    JSON: read back, they are the same layout, and a page's blocks come out the same."""
    from pagefleet.workers.ladder.structure import DocumentLayout

    pages = _pages(structure_dir / "en_long_report.pdf")
    doc = document_layout(pages)
    assert doc.furniture and doc.stats.levels  # running headers and heading levels to carry
    assert DocumentLayout.from_dict(json.loads(json.dumps(doc.as_dict()))) == doc
    some = [int(p["number"]) for p in pages[1:3]]
    part = DocumentLayout.from_dict(
        json.loads(json.dumps(doc.as_dict(range(some[0], some[-1] + 1))))
    )
    assert part.stats == doc.stats and part.furniture == {
        n: doc.furniture[n] for n in some if n in doc.furniture
    }
    for page in pages[1:3]:
        fixed = normalize(page["text"])
        edits = [e.to_dict() for e in fixed.edits]
        assert (
            page_structure(page, fixed.text, edits, part)[0]
            == page_structure(page, fixed.text, edits, doc)[0]
        )


def test_poppler_windows_stay_inside_the_range_a_task_checks(
    structure_dir: Path, tmp_path: Path
) -> None:
    """A structure task checks the tables of its page range: Poppler's word windows (≤ 32 pages)
    start at the range's first page and end by its last, so no two tasks read the same pages; the
    words a page gets are the same as from the document-wide windows."""
    from tests.support.pdfs import joined
    from pagefleet.workers.ladder import tablecheck

    assert tablecheck._window(40) == (33, 64)
    with tablecheck.within(26, 50):
        assert tablecheck._window(26) == (26, 50) and tablecheck._window(50) == (26, 50)
        assert tablecheck._window(60) == (33, 64)  # not this range's page: the document-wide window
    with tablecheck.within(26, 200):
        assert tablecheck._window(60) == (58, 89) and tablecheck._window(199) == (186, 200)
    pdf = joined(
        structure_dir,
        ("he_report_tables", "ar_report_tables", "en_report_tables", "mix_he_en_table"),
        tmp_path / "long.pdf",
    )
    with pymupdf.open(pdf) as doc:
        count = doc.page_count
    everywhere = {n: tablecheck.poppler_words(str(pdf), n) for n in range(1, count + 1)}
    assert sum(bool(words) for words in everywhere.values()) == count
    tablecheck._tsv_window.cache_clear()
    with tablecheck.within(2, count):
        inside = {n: tablecheck.poppler_words(str(pdf), n) for n in range(2, count + 1)}
    assert inside == {n: everywhere[n] for n in range(2, count + 1)}
    assert tablecheck._tsv_window.cache_info().misses == 1  # one pdftotext call for the range
