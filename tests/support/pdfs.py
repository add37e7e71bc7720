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
