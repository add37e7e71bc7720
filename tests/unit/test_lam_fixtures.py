"""Lam ligatures on real PDFs (issue 12): the generated fixtures whose ToUnicode map gives the
lam-alef glyph its code points swapped, or whose lines are drawn left to right (InDesign's
zero-width alef), and the corpus file that showed the defect."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from pagefleet.routing.edits import Edit, apply_edits
from pagefleet.workers.ladder.accept import repair
from pagefleet.routing.lam import lam_signals, lam_violations
from pagefleet.routing.normalize import normalize
from pagefleet.routing.evidence import GlyphFacts
from pagefleet.routing.quality import GateInput, assess, canonical_violations
from pagefleet.workers.pdf.mupdf import extract_range

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "fixtures"))
from make_arabic_fixtures import LAM_FIXTURES  # noqa: E402

CORPUS_FILE = ROOT.parent / "shared" / "corpus" / "ar_egypt_gazette_law_indesign.pdf"


def _page(path: Path, number: int = 1) -> dict:
    return extract_range(str(path), number, number)["pages"][0]


def _repair(page: dict) -> tuple[str, list]:
    """What rung 1 does with a page: gate with the layer's geometry, then repair."""
    verdict = assess(
        GateInput(text=page["text"], origin="text_layer", glyphs=GlyphFacts.from_layer(page))
    )
    assert verdict.ok, verdict.reasons
    fixed = repair(page["text"], verdict, from_ocr=False)
    assert (
        fixed.replay_ok
        and apply_edits(page["text"], [Edit.from_dict(e) for e in fixed.edits]) == fixed.text
    )
    return fixed.text, [Edit.from_dict(e) for e in fixed.edits]


@pytest.mark.parametrize(
    "name", ["arabic_lam_alef_swapped_tounicode.pdf", "arabic_lam_alef_zero_width_indesign.pdf"]
)
def test_swapped_lam_alef_glyphs_are_repaired_to_the_text_drawn(
    fixtures_dir: Path, name: str
) -> None:
    page = _page(fixtures_dir / name)
    truth = LAM_FIXTURES[name][1]
    assert "ال يجوز" in page["text"] and page["text"] != truth  # the defect is reproduced
    clusters = [page["text"][a:b] for a, b in page["glyph_clusters"]]
    assert clusters and set(clusters) <= {"ال", "أل", "إل", "آل"}
    text, edits = _repair(page)
    assert text == truth
    assert {e.kind for e in edits} == {"lam_alef_order"} and len(edits) == len(clusters)
    assert canonical_violations(text) == []


def test_numbers_and_brackets_are_put_where_the_boxes_are(fixtures_dir: Path) -> None:
    name = "arabic_numbers_brackets_drawn_left_to_right.pdf"
    page = _page(fixtures_dir / name)
    # InDesign's stream gives `2022  لسنة8` and `القانون1)`; the rows read from the glyphs do not
    assert page["text"].startswith("قانون رقم 8 لسنة 2022") and page["glyph_rows"] is True
    assert page["run_orders"] == []
    text, _ = _repair(page)
    assert text == LAM_FIXTURES[name][1]


def test_zero_width_alef_geometry_is_indesigns(fixtures_dir: Path) -> None:
    """The first code point of the ligature has a zero-width box, the lam holds the glyph's box."""
    import pymupdf

    doc = pymupdf.open(fixtures_dir / "arabic_lam_alef_zero_width_indesign.pdf")
    chars = [
        c
        for b in doc[0].get_text("rawdict")["blocks"]
        for ln in b.get("lines", [])
        for s in ln["spans"]
        for c in s["chars"]
    ]
    first = next(
        i for i, c in enumerate(chars) if c["c"] == "ا" and c["bbox"][2] - c["bbox"][0] < 0.01
    )
    assert (
        chars[first + 1]["c"] == "ل"
        and chars[first + 1]["bbox"][2] - chars[first + 1]["bbox"][0] > 1
    )


def test_correct_map_gives_the_text_and_no_edit(fixtures_dir: Path) -> None:
    name = "arabic_lam_alef_correct_tounicode.pdf"
    page = _page(fixtures_dir / name)
    assert page["text"] == LAM_FIXTURES[name][1]
    text, edits = _repair(page)
    assert text == LAM_FIXTURES[name][1] and not [e for e in edits if "order" in e.kind]


def test_without_geometry_the_swapped_page_is_refused(fixtures_dir: Path) -> None:
    page = _page(fixtures_dir / "arabic_lam_alef_swapped_tounicode.pdf")
    text = normalize(page["text"]).text  # what a pdftotext or OCR-less reading would keep
    assert "lone_al" in canonical_violations(text)
    assert lam_signals(text).lone_al == 1


@pytest.mark.skipif(not CORPUS_FILE.exists(), reason="corpus file absent (../shared/corpus)")
def test_corpus_gazette_pages_are_repaired_and_replay() -> None:
    pages = extract_range(str(CORPUS_FILE), 1, 23)["pages"]
    before = sum(1 for p in pages if lam_signals(p["text"]).lone_al)
    assert before >= 10  # the issue counted 13 of 23 pages holding a lone ال
    repaired = [_repair(p)[0] for p in pages]
    assert all(lam_violations(t) == [] for t in repaired)
    first = repaired[0]
    for phrase in ("لا يجوز", "لأحكامه", "للإجراءات", "الجريدة"):
        assert phrase in first, phrase
    assert "ال يجوز" not in first
    assert "قانون رقم 8 لسنة 2022" in first and "فى المادة (1) من القانون" in first
    glued = sum(len(re.findall(r"[\u0621-\u064a][0-9]|[0-9][\u0621-\u064a]", t)) for t in repaired)
    assert glued <= 2  # 75 before: numbers glued to the word on their wrong side
