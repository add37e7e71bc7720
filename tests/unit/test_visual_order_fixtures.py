"""Visual-order evidence and repair on the project's own generated PDFs (defects the review studio
showed): a correct running header drawn in pieces must never be reversed; truly mirrored lines
still are."""

from __future__ import annotations

from pathlib import Path

from routing.edits import apply_edits
from routing.normalize import normalize
from routing.order import page_order
from routing.quality import GateInput, assess
from routing.rtl_order import hebrew_order_evidence
from workers.pdf.mupdf import extract_range

HEADER_PIECE = ' - חברת דוגמה בע"מ'  # fixtures/structure_texts.py: he_report_tables' header, second piece


def _page(path: Path, number: int = 1) -> dict:
    return extract_range(str(path), number, number)["pages"][0]


def _repair(page: dict) -> tuple[str, list]:
    """What rung 1 does with a page: gate with the layer's geometry, then repair."""
    verdict = assess(GateInput(text=page["text"], origin="text_layer", layer=page))
    result = normalize(page["text"], line_visual=verdict.order.line_visual, glyph_clusters=verdict.glyph_clusters,
                       run_orders=verdict.run_orders)
    assert apply_edits(page["text"], result.edits) == result.text
    return result.text, result.edits


def test_an_acronym_last_letter_is_no_order_evidence() -> None:
    # בע"מ, מע"מ are written with a plain mem: not a word "ending with a medial form"
    assert hebrew_order_evidence('חברת דוגמה בע"מ').medial_last == 0
    assert hebrew_order_evidence('מע"מ').medial_last == 0
    # mirrored, an acronym still starts with a final form, and a plain word still ends with a medial one
    assert hebrew_order_evidence('ך"נת').final_first == 1
    assert hebrew_order_evidence("ךלמה ונכ").medial_last == 1


def test_one_vote_on_a_short_line_does_not_outvote_a_logical_page() -> None:
    page = "דוח שנתי לבעלי המניות\nהדוח משווה אותן לשנה הקודמת\nההנהלה משקיעה בהכשרת עובדים\nדוח שנתי 2024\n - חברת דוגמה אמנ"
    assert page_order(page, None, from_ocr=False).line_visual == [False] * 5
    # the same piece on its own (nothing says logical) and a mirrored line with strong evidence still flag
    assert page_order(" - חברת דוגמה אמנ", None, from_ocr=False).line_visual == [True]
    mixed = page.rsplit("\n", 1)[0] + "\nםלוע םולש :תרתוכ"
    assert page_order(mixed, None, from_ocr=False).line_visual == [False, False, False, False, True]


def test_a_running_header_drawn_in_pieces_is_not_reversed(structure_dir: Path) -> None:
    for number in (1, 2):
        page = _page(structure_dir / "he_report_tables.pdf", number)
        assert HEADER_PIECE in page["text"].split("\n")  # MuPDF gives the header as two lines
        text, edits = _repair(page)
        assert HEADER_PIECE in text.split("\n")
        assert "visual_order_reversal" not in {e.kind for e in edits}
