"""Running headers and page-number footers drawn in pieces: MuPDF gives an RTL `- 1 -` as three
lines (`- `, `1`, ` -`) and a Hebrew header as two bidi runs; each is one row read from the glyphs,
and one header/footer block."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pymupdf
import pytest

from pagefleet.routing.normalize import normalize
from pagefleet.workers.ladder.structure import document_layout, page_structure
from pagefleet.workers.pdf.mupdf import extract_range


def _furniture(pdf: Path) -> list[list[tuple[str, str]]]:
    """Per page: (type, text with whitespace folded) of its header and footer blocks."""
    pages = extract_range(str(pdf), 1, pymupdf.open(pdf).page_count, structure=True)["pages"]
    doc = document_layout(pages)
    out = []
    for page in pages:
        fixed = normalize(page["text"])
        blocks, _ = page_structure(page, fixed.text, [e.to_dict() for e in fixed.edits], doc)
        out.append(
            [
                (b["type"], " ".join(b["text"].split()))
                for b in blocks
                if b["type"] in ("header", "footer")
            ]
        )
    return out


def _spec(name: str) -> dict:
    """The generator's own header and footer texts (fixtures/structure_texts.py)."""
    from structure_texts import DOCUMENTS  # noqa: PLC0415 - fixtures/, beside the generator

    return next(d for d in DOCUMENTS if d["name"] == name)


@pytest.fixture(autouse=True)
def _fixture_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "fixtures"))


@pytest.mark.parametrize("name", ["ar_two_columns", "he_two_columns", "he_report_tables"])
def test_a_header_or_footer_drawn_in_pieces_is_one_block(structure_dir: Path, name: str) -> None:
    spec = _spec(name)
    pdf = structure_dir / f"{name}.pdf"
    raw = unicodedata.normalize("NFKC", extract_range(str(pdf), 1, 1)["pages"][0]["text"]).split(
        "\n"
    )
    # MuPDF splits one of them into pieces; read from the glyphs each is one row
    assert spec["header"] in raw and spec["footer"].format(n=1) in raw
    for number, found in enumerate(_furniture(pdf), 1):
        assert found == [("header", spec["header"]), ("footer", spec["footer"].format(n=number))]


def test_a_one_page_document_finds_its_whole_page_number(
    structure_dir: Path, tmp_path: Path
) -> None:
    # no repetition to lean on: `- 1 -` must be recognised as a page number as one row, not `1` alone
    one = pymupdf.open()
    one.insert_pdf(pymupdf.open(structure_dir / "ar_two_columns.pdf"), from_page=0, to_page=0)
    one.save(tmp_path / "one.pdf")
    assert [kind for kind, _ in _furniture(tmp_path / "one.pdf")[0]].count("footer") == 1
    assert ("footer", "- 1 -") in _furniture(tmp_path / "one.pdf")[0]
