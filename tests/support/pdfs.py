"""PDFs the tests put together from the generated fixtures."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pymupdf


def joined(folder: Path, names: Iterable[str], target: Path) -> Path:
    """The whole documents `folder/NAME.pdf`, one after another, saved as `target`."""
    with pymupdf.open() as doc:
        for name in names:
            with pymupdf.open(folder / f"{name}.pdf") as src:
                doc.insert_pdf(src)
        doc.save(target)
    return target


def text_pages(path: Path, pages: int) -> Path:
    """`pages` pages of one line of English each, saved as `path`."""
    with pymupdf.open() as doc:
        for i in range(pages):
            doc.new_page().insert_text(
                (72, 72), f"Page {i + 1}: the quick brown fox jumps over the lazy dog."
            )
        doc.save(path)
    return path
