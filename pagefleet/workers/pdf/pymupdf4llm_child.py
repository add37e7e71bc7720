"""pymupdf4llm on one page of an untrusted PDF, in a child process (seed 001's structured recovery).

    python -m pagefleet.workers.pdf.pymupdf4llm_child PDF PAGE      → JSON on stdout: {"tables": [{rows, bbox}], "markdown"}

The page's word geometry is captured with plain PyMuPDF first (before pymupdf4llm's layout mode is
switched on); each Markdown table is then placed on the page by the boxes of the words its cells
hold, so the parent can check it against Poppler's words in the same box. Cells are returned as
pymupdf4llm wrote them (visual column order); the parent puts them in logical order.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import unicodedata
from collections import Counter
from typing import Any

import pymupdf


def _fold(word: str) -> str:
    return unicodedata.normalize("NFKC", word).casefold().strip(".,;:()[]\"'")


def _box(rows: list[list[str]], words: list[tuple]) -> list[float] | None:
    """The table's box: the page words its cells hold, anchored on words the page holds once (a
    year or a label repeated in a heading would stretch the box over the page)."""
    wanted = {_fold(w) for row in rows for cell in row for w in cell.split()} - {""}
    counts = Counter(_fold(w[4]) for w in words)
    hits = [w for w in words if _fold(w[4]) in wanted and counts[_fold(w[4])] == 1]
    hits = hits or [w for w in words if _fold(w[4]) in wanted]
    if not hits:
        return None
    return [
        round(min(w[0] for w in hits), 2),
        round(min(w[1] for w in hits), 2),
        round(max(w[2] for w in hits), 2),
        round(max(w[3] for w in hits), 2),
    ]


def recover(pdf: str, number: int) -> dict[str, Any]:
    from pagefleet.routing.structure.mdparse import markdown_tables

    doc = pymupdf.open(pdf, filetype="pdf")
    try:
        words = [tuple(w) for w in doc.load_page(number - 1).get_text("words")]
        with contextlib.redirect_stdout(io.StringIO()):  # engine chatter never reaches our JSON
            import pymupdf4llm

            md = pymupdf4llm.to_markdown(
                doc, pages=[number - 1], use_ocr=False, show_progress=False
            )
    finally:
        doc.close()
    tables = [{"rows": rows, "bbox": _box(rows, words)} for rows in markdown_tables(md)]
    return {"tables": tables, "markdown": md}


if __name__ == "__main__":  # pragma: no cover - run through pagefleet.workers.ladder.recovery
    json.dump(recover(sys.argv[1], int(sys.argv[2])), sys.stdout, ensure_ascii=False)
