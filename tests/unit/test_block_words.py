"""Repairs reach every artifact: on every fixture and corpus page rung 1 accepts, the blocks hold
the words of the page's text and nothing else, and every table cell's words are words of the text
(a cell is read from the page's repaired text, never from the layer again)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pymupdf
import pytest

from pagefleet.workers.ladder.structure import document_layout, structure_page
from pagefleet.workers.ladder.textlayer import decide_page
from pagefleet.workers.model import PageRecord
from pagefleet.workers.pdf.mupdf import extract_range

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
_WORD = re.compile(r"[^\W_]+")


def _words(text: str) -> Counter[str]:
    return Counter(_WORD.findall(text))


def _accepted_pages(pdf: Path) -> list[PageRecord]:
    try:
        with pymupdf.open(pdf) as doc:
            count = 0 if doc.needs_pass else doc.page_count
        pages = (
            extract_range(str(pdf), 1, count, structure=True)["pages"] if 0 < count <= 40 else []
        )
    except Exception:  # noqa: BLE001 - a broken or encrypted input has no pages to compare
        return []
    layout = document_layout(pages)
    found = []
    for page in pages:
        record = decide_page(page, ocr="auto", gpu=False)
        if isinstance(record, PageRecord) and record.text:
            found.append(structure_page(record, page, layout, str(pdf)))
    return [r for r in found if r.route.startswith("text_layer")]


def _documents(*folders: Path) -> list[Path]:
    return sorted(p for folder in folders if folder.is_dir() for p in folder.glob("*.pdf"))


def test_blocks_and_cells_hold_the_words_of_the_text(
    fixtures_dir: Path, structure_dir: Path
) -> None:
    pages = checked = 0
    for pdf in _documents(fixtures_dir, structure_dir, CORPUS):
        for record in _accepted_pages(pdf):
            pages += 1
            text = _words(record.text)
            blocks = _words(" ".join(b.text for b in record.blocks))
            assert blocks == text, (pdf.name, record.number, (blocks - text), (text - blocks))
            for block in record.blocks:
                if block.type != "table" or block.table is None:
                    continue
                cells = _words(" ".join(cell for row in block.table.rows for cell in row))
                assert not cells - text, (pdf.name, record.number, cells - text)
                checked += 1
    assert pages > 20 and checked > 3


@pytest.mark.skipif(
    not (CORPUS / "ar_tunisia_stats_table.pdf").exists(),
    reason="the shared corpus is not beside the checkout",
)
def test_a_repaired_word_is_the_same_word_in_its_table_cell() -> None:
    # the layer gives `الانتخابات التشريعية 2014` as `الانتخاابت الترشيعية2014` and `المترشحة` as
    # `املترشحة`: ligature glyphs whose letters MuPDF gives out of order, a space never drawn
    records = _accepted_pages(CORPUS / "ar_tunisia_stats_table.pdf")
    text = " ".join(" ".join(r.text.split()) for r in records)
    assert "الانتخابات" in text and "2014" in text and "القائمات المترشحة" in text
    cells = {
        cell for r in records for b in r.blocks if b.table for row in b.table.rows for cell in row
    }
    assert "المترشحة" in " ".join(cells) and "املترشحة" not in " ".join(cells)
