"""The rows read in C (workers/pdf/stextrows.c, through workers/pdf/fastrows.py) give rung 1 exactly
the Python path's answer (`mupdf.glyph_evidence`: rawdict, `glyphlines.read_rows`, the evidence of
its rows): text, rows and their directions, gap repairs and unresolved rows, page by page, on the
generated fixtures, the documents real producers print (LibreOffice, Chromium, fpdf2) and the
corpus where it is there. Where the C path declines a page the Python path reads it; on the
producers' Hebrew, Arabic and Persian pages it declines none."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from tests.conftest import CORPUS
from workers.pdf import fastrows, fastwalk, mupdf

pytestmark = pytest.mark.skipif(
    fastwalk.library() is None and shutil.which("cc") is None,
    reason="no C compiler here: rung 1 takes the Python path",
)


def _textpages(*folders: Path) -> Iterator[tuple[str, pymupdf.TextPage]]:
    for folder in folders:
        for path in sorted(folder.rglob("*.pdf")):
            try:
                doc = pymupdf.open(path)
                if doc.needs_pass or not doc.page_count:
                    continue
            except Exception:  # the broken inputs: rung 1 never reads their pages
                continue
            for number in range(doc.page_count):
                try:
                    page = doc.load_page(number)
                except Exception:
                    continue
                for flags in (mupdf._TEXT_FLAGS, mupdf._TEXT_FLAGS | pymupdf.TEXT_PRESERVE_IMAGES):
                    yield f"{path.name}:{number + 1}", page.get_textpage(flags=flags)


def _compare(folders: list[Path]) -> dict[str, int]:
    """Every page's C answer against the Python path's; the counts of what was seen."""
    seen = {"pages": 0, "declined": 0, "rtl": 0, "rtl_declined": 0, "rows": 0, "gaps": 0}
    for name, textpage in _textpages(*folders):
        walked = fastrows.evidence(textpage)
        python: dict[str, Any] = mupdf.glyph_evidence(textpage)[0]
        assert walked is None or walked == python, name
        rtl = "R" in fastwalk.glyph_kinds(python["text"])
        seen["pages"] += 1
        seen["declined"] += walked is None
        seen["rtl"] += rtl
        seen["rtl_declined"] += rtl and walked is None
        seen["rows"] += bool(python.get("glyph_rows"))
        seen["gaps"] += len(python.get("gap_repairs", []))
    return seen


def test_the_library_reads_rows() -> None:
    assert fastwalk.library() is not None, "run `make native` (make setup builds the C text walk)"


def test_every_page_reads_its_rows_as_the_python_path(
    fixtures_dir: Path, structure_dir: Path
) -> None:
    seen = _compare([fixtures_dir, structure_dir] + ([CORPUS] if CORPUS.is_dir() else []))
    assert seen["pages"] > 50 and seen["rtl"] > 10 and seen["rows"] > 5, seen
    assert seen["declined"] == 0, seen  # none of these pages needs the rawdict


@pytest.fixture(scope="module")
def producer_docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One document per producer and script (fixtures/make_producer_docs.py)."""
    from fixtures.make_producer_docs import ProducerError, generate

    out = tmp_path_factory.mktemp("producers")
    try:
        generate(out, fonts=("dejavu",))
    except ProducerError as exc:  # LibreOffice, Chromium or a font missing: nothing to compare
        pytest.skip(f"the producers are not installed here: {exc}")
    return out


def test_producer_pages_read_in_c_as_in_python(producer_docs: Path) -> None:
    seen = _compare([producer_docs])
    assert seen["rtl"] >= 12 and seen["rows"] >= 12 and seen["gaps"] > 0, seen
    assert seen["rtl_declined"] == 0, seen


def test_a_page_without_rtl_letters_is_the_walks_evidence(fixtures_dir: Path) -> None:
    for name, textpage in _textpages(fixtures_dir):
        python = mupdf.glyph_evidence(textpage)[0]
        if "R" not in fastwalk.glyph_kinds(python["text"]):
            assert fastrows.evidence(textpage) == fastwalk.evidence(textpage) == python, name
