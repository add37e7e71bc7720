"""Rows read from the glyphs (pagefleet.workers.pdf.glyphlines): mixed-direction lines come out as a reader
reads them, whatever objects drew their pieces; word gaps are edits; correct input is unchanged."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from bidi import get_display

from pagefleet.routing.bidi_order import logical_order, reread_line
from pagefleet.routing.edits import Edit, apply_edits
from pagefleet.routing.evidence import GlyphFacts
from pagefleet.routing.quality import GateInput, assess
from pagefleet.workers.ladder.accept import repair
from pagefleet.workers.pdf.mupdf import extract_range

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
LINES = [
    "הנדון: הנחיות לביצוע סקר קרקע ברחוב שפינוזה 9, פתח תקווה.",
    'הסכום הכולל הוא ₪ 250,000.00 ועוד 12.5% מע"מ, לתשלום עד 15/01/2025 בשעה 12:00.',
    "לפרטים: טלפון 054-5715512 או info@example.co.il ובאתר https://www.example.co.il/docs.",
    "המערכת משתמשת ב-Machine Learning לזיהוי טקסט (לפחות 3 קידוחים).",
]  # Arabic through real producers: `make eval-producers` (PyMuPDF's own HTML boxes map lam ligatures away)


def _html_page(path: Path, lines: list[str]) -> Path:
    """Lines laid out by a shaping producer (PyMuPDF's HTML boxes: HarfBuzz and the bidi
    algorithm), right-aligned as RTL paragraphs are."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=60 + 40 * len(lines))
    body = "".join(
        f"<p dir='rtl' style='font-size:11px;margin:0 0 10px 0'>{line}</p>" for line in lines
    )
    page.insert_htmlbox(pymupdf.Rect(30, 30, 565, 30 + 40 * len(lines)), body)
    doc.save(path)
    return path


def _fixed(page: dict) -> str:
    verdict = assess(
        GateInput(text=page["text"], origin="text_layer", glyphs=GlyphFacts.from_layer(page))
    )
    fixed = repair(page["text"], verdict, from_ocr=False)
    assert fixed.replay_ok
    assert apply_edits(page["text"], [Edit.from_dict(e) for e in fixed.edits]) == fixed.text
    return fixed.text


def test_mixed_direction_lines_read_as_written(tmp_path: Path) -> None:
    page = extract_range(str(_html_page(tmp_path / "mixed.pdf", LINES)), 1, 1)["pages"][0]
    assert page["glyph_rows"] is True
    assert [" ".join(line.split()) for line in _fixed(page).split("\n") if line.strip()] == LINES


def test_a_line_drawn_in_pieces_is_one_row(tmp_path: Path) -> None:
    """LibreOffice's way: each bidi run its own text object, drawn where the line's layout puts
    it; MuPDF gives the pieces as lines of their own."""
    font = pymupdf.Font(fontfile=str(DEJAVU))
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=100)
    writer = pymupdf.TextWriter(page.rect)
    visual = get_display(
        "הנדון: פתח תקווה 9.", base_dir="R"
    )  # `.9 הווקת חתפ :ןודנה`, left to right
    cuts = [
        0,
        1,
        2,
        len(visual),
    ]  # `.`, `9`, the Hebrew run: three objects, the rightmost drawn first
    x0 = 380.0 - font.text_length(visual, fontsize=12)
    for a, b in reversed(list(zip(cuts, cuts[1:]))):
        writer.append(
            (x0 + font.text_length(visual[:a], fontsize=12), 50),
            visual[a:b],
            font=font,
            fontsize=12,
        )
    writer.write_text(page)
    doc.save(tmp_path / "pieces.pdf")
    read = extract_range(str(tmp_path / "pieces.pdf"), 1, 1)["pages"][0]
    assert read["text"].split("\n") == ["הנדון: פתח תקווה 9."]


def test_a_gap_without_a_space_is_an_edit_and_correct_input_has_none(tmp_path: Path) -> None:
    font = pymupdf.Font(fontfile=str(DEJAVU))
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=100)
    writer = pymupdf.TextWriter(page.rect)
    word, number = "בשנת", "2014"
    x = 300.0
    writer.append((x, 50), word[::-1], font=font, fontsize=12)  # drawn glyphs, left to right
    writer.append(
        (x - 6 - font.text_length(number, fontsize=12), 50), number, font=font, fontsize=12
    )
    writer.write_text(page)
    doc.save(tmp_path / "gap.pdf")
    read = extract_range(str(tmp_path / "gap.pdf"), 1, 1)["pages"][0]
    assert read["text"] == "בשנת2014"  # the reading holds what was drawn
    assert read["gap_repairs"] == [[4, 4, " ", "word_space_inserted"]]
    assert _fixed(read) == "בשנת 2014"
    # a line with its space drawn has no gap edit
    clean = extract_range(
        str(_html_page(tmp_path / "clean.pdf", ["בשנת 2014 היו 12 קידוחים."])), 1, 1
    )["pages"][0]
    assert clean["gap_repairs"] == [] and _fixed(clean) == clean["text"]


@pytest.mark.parametrize(
    "line", ["אב 12 גד.", "abc אב, גד def.", "مرحبا 12:30 بكم", "שלום עולם 2024"]
)
def test_reading_a_row_again_gives_back_the_drawn_sequence(line: str) -> None:
    read = "".join(line[i] for i in logical_order(list(line), True)[0])  # an RTL row's reading
    assert read != line and reread_line(read, True) == line
