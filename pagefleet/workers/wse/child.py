"""Word Shape Encoding on one page of an untrusted PDF, in a child process (the `wse` recoverer).

    python -m pagefleet.workers.wse.child PDF PAGE    → JSON on stdout: {"tables": [{rows, bbox}], "text"}

Run by `pagefleet.workers.ladder.recovery` under the sandbox's limits. pymupdf4llm runs in this process
(it switches PyMuPDF's layout model on for the whole process; here that harms nothing). Rows are
returned as drawn on the original page, left to right (the recovery puts them in logical order);
each table's box is the union of the original words of its rows (`table_box`).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pagefleet.workers.wse.decode import words_of
from pagefleet.workers.wse.words import PageWord


def table_box(rows: list[list[str]], words: list[PageWord]) -> list[float] | None:
    """The table's box on the original page: for each row, the baseline band of the page holding
    most of the row's words (body text elsewhere on the page may share a word or two, not a row),
    and the union of the matching words of those bands."""
    bands: dict[int, list[PageWord]] = {}
    for w in words:
        bands.setdefault(round(w.end[1] / 2), []).append(w)
    hits: list[PageWord] = []
    for row in rows:
        wanted = {t for cell in row for t in words_of(cell)}
        if not wanted:
            continue
        scored = [[w for w in band if set(words_of(w.text)) & wanted] for band in bands.values()]
        best = max(scored, key=len, default=[])
        if len(best) * 2 >= min(len(wanted), len([c for c in row if c.strip()])):
            hits += best
    if not hits:
        return None
    return [
        round(min(w.bbox[0] for w in hits), 2),
        round(min(w.bbox[1] for w in hits), 2),
        round(max(w.bbox[2] for w in hits), 2),
        round(max(w.bbox[3] for w in hits), 2),
    ]


def recover(pdf: str, number: int) -> dict[str, Any]:
    from pagefleet.workers.wse.encode import open_pdf
    from pagefleet.workers.wse.recover import run_wse
    from pagefleet.workers.wse.words import page_words

    with open_pdf(pdf) as doc:
        words = page_words(doc[number - 1])
    run = run_wse(pdf, number, "pymupdf4llm-inprocess")
    tables = [
        {"rows": [row[::-1] for row in table], "bbox": table_box(table, words)}
        for table in run.tables
    ]
    return {"tables": tables, "text": run.text}


if __name__ == "__main__":  # pragma: no cover - run through pagefleet.workers.ladder.recovery
    json.dump(recover(sys.argv[1], int(sys.argv[2])), sys.stdout, ensure_ascii=False)
