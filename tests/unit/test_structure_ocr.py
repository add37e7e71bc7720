"""OCR pages' structure: Tesseract's TSV paragraphs with boxes found in the page text."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from pagefleet.routing.normalize import normalize
from pagefleet.routing.structure.tsv import tsv_paragraphs
from pagefleet.workers.ladder.ocr_structure import paragraph_blocks, with_paragraph_boxes
from pagefleet.workers.model import PageRecord, Quality, RouterInfo


def test_tsv_words_group_into_paragraphs_with_boxes() -> None:
    words = [
        (1, 1, 100, 100, 50, 20, "שלום"),
        (1, 1, 40, 100, 50, 20, "עולם"),
        (1, 2, 100, 200, 80, 20, "פסקה"),
        (2, 1, 10, 400, 30, 20, "end"),
    ]
    paras = tsv_paragraphs(words, scale=0.5)
    assert [(p["first"], p["last"], p["words"]) for p in paras] == [
        ("שלום", "עולם", 2),
        ("פסקה", "פסקה", 1),
        ("end", "end", 1),
    ]
    assert paras[0]["bbox"] == [20.0, 50.0, 75.0, 60.0]


def test_paragraphs_are_found_in_order_in_the_text() -> None:
    text = "שלום עולם\nשורה שנייה\n\nפסקה אחרת"
    paras = [
        {"bbox": [0, 0, 1, 1], "first": "שלום", "last": "שנייה"},
        {"bbox": [0, 2, 1, 3], "first": "פסקה", "last": "אחרת"},
    ]
    blocks = paragraph_blocks(text, paras)
    assert [b["text"] for b in blocks] == ["שלום עולם\nשורה שנייה", "פסקה אחרת"]
    assert paragraph_blocks(text, [{"bbox": [0, 0, 1, 1], "first": "missing", "last": "x"}]) is None


@pytest.mark.slow
def test_tesseract_paragraph_boxes_reach_the_page(fixtures_dir: Path, tmp_path: Path) -> None:
    from pagefleet.workers.engines.base import PageImage
    from pagefleet.workers.engines.tesseract import TesseractEngine

    doc = pymupdf.open(fixtures_dir / "image_only_english_scan.pdf")
    png = tmp_path / "p.png"
    doc[0].get_pixmap(dpi=300, colorspace=pymupdf.csGRAY).save(png)
    out = TesseractEngine("eng").read([PageImage(str(png), 1, 300)], script="latin")[0]
    assert out.details.get("paragraphs")
    fixed = normalize(out.text, from_ocr=True)
    record = PageRecord(
        number=1,
        router=RouterInfo(source="osd", script="latin"),
        route="ocr",
        engine="tesseract:eng",
        text=fixed.text,
        raw_text=out.text,
        edits=[e.to_dict() for e in fixed.edits],
        quality=Quality(ok=True),
    )
    page = with_paragraph_boxes(record, out.details["paragraphs"])
    assert page.blocks and all(b.bbox for b in page.blocks)
    assert all(page.text[b.start : b.end] == b.text for b in page.blocks)
    width, height = doc[0].rect.width, doc[0].rect.height
    assert all(
        0 <= b.bbox[0] < b.bbox[2] <= width and 0 <= b.bbox[1] < b.bbox[3] <= height
        for b in page.blocks
    )
