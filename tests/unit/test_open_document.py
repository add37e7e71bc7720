"""A sandbox child keeps the document it reads open for its next command on the same file (a big
document's ranges share MuPDF's loaded fonts and objects), reopens a file that changed, and holds
one document at a time."""

from __future__ import annotations

import os
from pathlib import Path

import pymupdf

from pagefleet.workers.pdf import mupdf


def _write(path: Path, *texts: str) -> None:
    with pymupdf.open() as doc:
        for text in texts:
            doc.new_page().insert_text((72, 72), text)
        doc.save(path)


def test_ranges_of_one_file_share_the_open_document(tmp_path: Path) -> None:
    first, other = tmp_path / "a.pdf", tmp_path / "b.pdf"
    _write(first, "alpha one", "alpha two", "alpha three")
    _write(other, "beta")
    mupdf.forget()
    try:
        assert [p["text"] for p in mupdf.extract_range(str(first), 1, 2)["pages"]] == [
            "alpha one",
            "alpha two",
        ]
        doc = mupdf._OPEN[str(first)][1]
        assert mupdf.extract_range(str(first), 3, 9)["pages"][0]["text"] == "alpha three"
        assert mupdf.probe(str(first))["page_count"] == 3 and mupdf._OPEN[str(first)][1] is doc

        _write(first, "changed")  # a new file under the same name is read anew
        os.utime(first, ns=(1, 1))
        assert mupdf.extract_range(str(first), 1, 1)["pages"][0]["text"] == "changed"
        assert doc.is_closed

        assert mupdf.extract_range(str(other), 1, 1)["pages"][0]["text"] == "beta"
        assert list(mupdf._OPEN) == [str(other)]  # one document at a time
    finally:
        mupdf.forget()
    assert mupdf._OPEN == {}
