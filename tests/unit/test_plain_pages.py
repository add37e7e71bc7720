"""A page without Hebrew or Arabic letters is read from MuPDF's plain text, without `rawdict`
(issue 15): its record must equal the one the per-character path gives for the same page, on
every page of the project's fixtures and of the corpus. A page whose plain text is not exactly
its lines (a newline character inside a line) falls back to the per-character path."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from tests.unit.test_visual_order_fixtures import DEJAVU
from pagefleet.workers.pdf import fastwalk, mupdf, stext

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"


def _both_ways(paths: list[Path]) -> list[tuple[str, int, dict, dict, bool]]:
    """Per readable page: (file, page, the record as extracted, the record through rawdict, whether
    the page holds RTL letters). A file MuPDF cannot read (the fixtures that exist to be
    unreadable) is left out."""
    found = []
    for path in paths:
        try:
            with pymupdf.open(path) as doc:
                for n in range(1, 0 if doc.needs_pass else doc.page_count + 1):
                    plain = mupdf._extract_page(doc, n)
                    geometry = mupdf._extract_page(
                        doc, n, kept={}
                    )  # structure keeps rawdict: always that path
                    rtl = "R" in mupdf.glyph_kinds(
                        doc.load_page(n - 1).get_text(flags=mupdf._TEXT_FLAGS)
                    )
                    found.append((path.name, n, plain, geometry, rtl))
        except Exception:  # noqa: BLE001 — MuPDF's FzError* on the unreadable fixtures
            continue
    return found


def test_fixture_pages_read_alike_both_ways(fixtures_dir: Path) -> None:
    pages = _both_ways(sorted(fixtures_dir.rglob("*.pdf")))
    for name, number, plain, geometry, _ in pages:
        assert plain == geometry, (name, number)
    ltr = sum(not rtl for *_, rtl in pages)
    assert ltr >= 10 and ltr < len(pages)  # both paths were taken


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is not beside the checkout")
def test_corpus_pages_read_alike_both_ways() -> None:
    for name, number, plain, geometry, _ in _both_ways(sorted(CORPUS.glob("*.pdf"))):
        assert plain == geometry, (name, number)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is not beside the checkout")
def test_a_newline_character_inside_a_line_takes_the_character_path() -> None:
    with pymupdf.open(CORPUS / "en_owner_encrypted_loan_table.pdf") as doc:
        textpage = doc.load_page(0).get_textpage(flags=mupdf._TEXT_FLAGS)
        plain = textpage.extractText()
        raw_text = mupdf._geometry_evidence(textpage.extractRAWDICT())["text"]
        assert "R" not in mupdf.glyph_kinds(plain)
        assert (
            plain[:-1] != raw_text
        )  # PyMuPDF's plain text drops the line end after a drawn newline
        assert stext.walk(textpage, count_lines=True)[1] is None  # the drawn newline ends its line
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
            page.insert_font(fontname="f", fontfile=str(DEJAVU))
            page.insert_text((72, 72), text, fontname="f", fontsize=12)
        latin, hebrew = (mupdf._extract_page(doc, n) for n in (1, 2))
    assert latin["text"] == "Plain Latin prose, two lines\nof it." and latin["line_geometry"] == [
        [0, 0],
        [0, 0],
    ]
    assert latin["glyphs"] == 29 and hebrew["text"].strip()
    # only the Hebrew page, whose rows are read from its glyphs: in C where the library is built
    assert len(calls) == (0 if fastwalk.library() else 1)
