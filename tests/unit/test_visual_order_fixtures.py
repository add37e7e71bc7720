"""Visual-order evidence and repair on the project's own generated PDFs (defects the review studio
showed): a correct running header drawn in pieces must never be reversed; truly mirrored lines
still are."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from pagefleet.routing.edits import Edit, apply_edits
from pagefleet.workers.ladder.accept import repair
from pagefleet.routing.visual_order import page_order
from pagefleet.routing.evidence import GlyphFacts
from pagefleet.routing.quality import GateInput, assess
from pagefleet.routing.bidi_order import reread_line
from pagefleet.routing.mirrored_lines import hebrew_order_evidence
from pagefleet.workers.pdf.mupdf import extract_range

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
HEADER_PIECE = (
    ' - חברת דוגמה בע"מ'  # fixtures/structure_texts.py: he_report_tables' header, second piece
)


def _page(path: Path, number: int = 1) -> dict:
    return extract_range(str(path), number, number)["pages"][0]


def _repair(page: dict) -> tuple[str, list]:
    """What rung 1 does with a page: gate with the layer's geometry, then repair."""
    verdict = assess(
        GateInput(text=page["text"], origin="text_layer", glyphs=GlyphFacts.from_layer(page))
    )
    fixed = repair(page["text"], verdict, from_ocr=False)
    assert (
        fixed.replay_ok
        and apply_edits(page["text"], [Edit.from_dict(e) for e in fixed.edits]) == fixed.text
    )
    return fixed.text, [Edit.from_dict(e) for e in fixed.edits]


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


def test_a_running_header_drawn_in_pieces_is_one_row_not_reversed(structure_dir: Path) -> None:
    for number in (1, 2):
        page = _page(structure_dir / "he_report_tables.pdf", number)
        # MuPDF gives the header as two lines; read from the glyphs it is one row
        assert "דוח שנתי 2024" + HEADER_PIECE in page["text"].split("\n")
        text, edits = _repair(page)
        assert "דוח שנתי 2024" + HEADER_PIECE in text.split("\n")
        assert "visual_order_reversal" not in {e.kind for e in edits}


def _drawn_left_to_right(path: Path, lines: list[str]) -> None:
    """An unshaped producer: logical strings drawn left to right (the page shows mirrored words)."""
    doc = pymupdf.open()
    page = doc.new_page(width=1200, height=60 + 30 * len(lines))
    writer = pymupdf.TextWriter(page.rect)
    font = pymupdf.Font(fontfile=str(DEJAVU))  # fonts-dejavu-core (Makefile APT_PACKAGES)
    for i, line in enumerate(lines):
        writer.append((20, 40 + 30 * i), line, font=font, fontsize=14)
    writer.write_text(page)
    doc.save(path)


def _x_order(path: Path) -> list[str]:
    """Ground truth from the boxes: the producer drew each string left to right, so its
    characters sorted by x are the string it drew."""
    raw = pymupdf.open(path)[0].get_text("rawdict", flags=pymupdf.TEXT_PRESERVE_WHITESPACE)
    return [
        "".join(
            c["c"]
            for c in sorted(
                (c for s in line["spans"] for c in s["chars"]), key=lambda c: c["bbox"][0]
            )
        )
        for block in raw["blocks"]
        for line in block.get("lines", [])
    ]


def test_visual_order_repair_keeps_the_spaces_between_runs(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    # make_fixtures.py: "מספר החשבון הוא 12345 והסכום 250" drawn left to right; MuPDF extracts
    # ` אוה ןובשחה רפסמ12345  םוכסהו250` (each run kept the space that followed it)
    for name, number in (("visual_order_hebrew.pdf", 1), ("mixed_multipage_document.pdf", 4)):
        page = _page(fixtures_dir / name, number)
        text, edits = _repair(page)
        assert "visual_order_reversal" in {e.kind for e in edits}
        truth = _x_order_page(fixtures_dir / name, number, tmp_path)
        assert text.split("\n") == truth


def _x_order_page(path: Path, number: int, tmp: Path) -> list[str]:
    one = pymupdf.open()
    one.insert_pdf(pymupdf.open(path), from_page=number - 1, to_page=number - 1)
    out = tmp / f"{path.stem}_{number}.pdf"
    one.save(out)
    return _x_order(out)


@pytest.mark.parametrize(
    "line",
    [
        "מספר החשבון הוא 12345 והסכום 250",
        "אב 12 גד.",
        "אב. 12 גד",
        "abc אב, גד def.",
        "12 אב",
        "אב 12",
        "a (אב) b",
        "אב 12 גד 34 הו",
        "אב 12, גד",
        "אב 1 - 2 גד",
        "Hebrew: שלום עולם",
        "שנת 2024 (50%)",
    ],
)
def test_a_page_showing_mirrored_words_is_read_back_as_drawn(tmp_path: Path, line: str) -> None:
    pdf = tmp_path / "drawn.pdf"
    _drawn_left_to_right(pdf, [line])
    page = _page(pdf)
    assert page["text"] != line  # read as the page shows it: RTL words mirrored
    assert page["glyph_rows"] is True
    assert _x_order(pdf) == [line]
    # the repair of a flagged line: read again, in the direction the row was read in
    assert reread_line(page["text"], bool(page["row_directions"][0])) == line


def test_a_line_without_rtl_characters_gets_the_evidence_the_full_count_gives() -> None:
    """line_evidence skips the letter counts on a line without a Hebrew or Arabic character: on
    random lines, with and without them, the result is what the full count gives."""
    import random

    from pagefleet.routing.visual_order import LineEvidence, arabic_order_votes, line_evidence
    from pagefleet.routing.mirrored_lines import hebrew_order_evidence as hebrew
    from pagefleet.routing.visual_order import _final_mid_word

    alphabet = (
        "abc XYZ 12.,;-\"'()" + "שלוםךם" + "\ufb2a\ufb4f" + "قةى\ufe8e\ufef5" + "\u0660\u06f1\u200f"
    )
    rng = random.Random(7)
    lines = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(600)]
    for line in [*lines, "Tel Aviv 2024", "", "\ufb2a"]:
        geometry = [rng.randint(0, 3), rng.randint(0, 3)]
        he, (ar_visual, ar_logical) = hebrew(line), arabic_order_votes(line)
        full = LineEvidence(
            he.final_first + he.medial_last + ar_visual,
            he.final_last + ar_logical,
            geometry[0],
            geometry[1],
            _final_mid_word(line),
            he.words,
        )
        assert line_evidence(line, geometry) == full
    assert (
        sum(
            line_evidence(line).visual_votes + line_evidence(line).logical_votes > 0
            for line in lines
        )
        > 50
    )


def test_a_page_without_rtl_letters_reads_as_the_per_line_votes_would() -> None:
    """page_order's shortcut (no Hebrew or Arabic letter, no RTL geometry) equals the per-line count;
    geometry on such a page still votes."""
    from pagefleet.routing import visual_order

    latin = "Annual report 2024\n(a) revenue [net] of {group}\n\nfinal line ends here"
    fast = page_order(latin, [[0, 0]] * 4, from_ocr=False)
    evidence = [visual_order.line_evidence(line, [0, 0]) for line in latin.split("\n")]
    assert fast.line_visual == [False] * 4
    assert fast.page == visual_order.LineEvidence(
        *(
            sum(getattr(e, f) for e in evidence)
            for f in visual_order.LineEvidence.__dataclass_fields__
        )
    )
    voted = page_order(latin, [[0, 0], [3, 0], [0, 0], [0, 0]], from_ocr=False)
    assert voted.line_visual == [False, True, False, False] and voted.page.geometry_visual == 3
