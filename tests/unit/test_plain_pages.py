"""A page without Hebrew or Arabic letters is read from MuPDF's plain text, without `rawdict`
(issue 15): its record must equal the one the per-character path gives for the same page, on
every page of the project's fixtures and of the corpus. A page whose plain text is not exactly
its lines (a newline character inside a line) falls back to the per-character path."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from workers.pdf import mupdf

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"


def _pages(paths: list[Path]) -> list[tuple[Path, int]]:
    found = []
    for path in paths:
        try:
            with pymupdf.open(path) as doc:
                for n in range(1, 0 if doc.needs_pass else doc.page_count + 1):
                    mupdf._extract_page(doc, n)
                    found.append((path, n))
        except Exception:  # noqa: BLE001 — the fixtures that exist to be unreadable (MuPDF FzError*)
            continue
    return found


def _both_ways(path: Path, number: int) -> tuple[dict, dict, bool]:
    """(the record as extracted, the record through rawdict, whether the page holds RTL letters)."""
    with pymupdf.open(path) as doc:
        plain = mupdf._extract_page(doc, number)
        geometry = mupdf._extract_page(doc, number, kept={})  # structure keeps rawdict: always that path
        text = doc.load_page(number - 1).get_textpage(flags=mupdf._TEXT_FLAGS).extractText()
    return plain, geometry, "R" in mupdf.glyph_kinds(text)


def test_fixture_pages_read_alike_both_ways(fixtures_dir: Path) -> None:
    pages = _pages(sorted(fixtures_dir.rglob("*.pdf")))
    ltr = 0
    for path, number in pages:
        plain, geometry, rtl = _both_ways(path, number)
        assert plain == geometry, (path.name, number)
        ltr += not rtl
    assert ltr >= 10 and ltr < len(pages)  # both paths were taken


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is not beside the checkout")
def test_corpus_pages_read_alike_both_ways() -> None:
    for path, number in _pages(sorted(CORPUS.glob("*.pdf"))):
        plain, geometry, _ = _both_ways(path, number)
        assert plain == geometry, (path.name, number)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is not beside the checkout")
def test_a_newline_character_inside_a_line_takes_the_character_path() -> None:
    with pymupdf.open(CORPUS / "en_owner_encrypted_loan_table.pdf") as doc:
        textpage = doc.load_page(0).get_textpage(flags=mupdf._TEXT_FLAGS)
        plain = textpage.extractText()
        raw_text = mupdf._geometry_evidence(textpage.extractRAWDICT())["text"]
        assert "R" not in mupdf.glyph_kinds(plain)
        assert plain[:-1] != raw_text  # PyMuPDF's plain text drops the line end after a drawn newline
        assert not mupdf._plain_is_exact(textpage, plain)
        assert mupdf._extract_page(doc, 1)["text"] == raw_text


def test_a_latin_page_is_read_without_rawdict(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = pymupdf.TextPage.extractRAWDICT

    def counting(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pymupdf.TextPage, "extractRAWDICT", counting)
    with pymupdf.open() as doc:
        for text in ("Plain Latin prose, two lines\nof it.", "שלום עולם"):
            page = doc.new_page()
            page.insert_font(fontname="f", fontfile=_font_with_hebrew())
            page.insert_text((72, 72), text, fontname="f", fontsize=12)
        latin, hebrew = (mupdf._extract_page(doc, n) for n in (1, 2))
    assert latin["text"] == "Plain Latin prose, two lines\nof it." and latin["line_geometry"] == [[0, 0], [0, 0]]
    assert latin["glyphs"] == 29 and hebrew["text"].strip()
    assert len(calls) == 1  # only the Hebrew page


def _font_with_hebrew() -> str:
    for candidate in ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                      "/usr/share/fonts/truetype/freefont/FreeSans.ttf"):
        if Path(candidate).exists():
            return candidate
    pytest.skip("no font with Hebrew glyphs on this machine")
