"""Tables of an RTL page through Word Shape Encoding, or through the same parser directly.

recover_tables_wse(pdf, page)      the route the structure work calls
                                   (`--structured-recovery wse`): encode the one page,
                                   run the LTR parser on it, decode → tables in logical RTL
                                   order (``row[0]`` = the rightmost cell)
run_wse(pdf, page, parser)         the same, with the decoded text, word recovery and time
run_direct(pdf, page, parser)      the parser on the original page, rows turned to logical
                                   order (`pagefleet.routing.structure.tables.logical_rows`): the comparison
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field

from pagefleet.routing.normalize import normalize
from pagefleet.routing.structure.tables import logical_rows
from pagefleet.workers.wse.decode import Decoder, Table, word_recovery
from pagefleet.workers.wse.encode import encode_document, open_pdf
from pagefleet.workers.wse.mapping import Mapping
from pagefleet.workers.wse.parsers import get_parser
from pagefleet.workers.wse.words import page_words

DEFAULT_PARSER = "pymupdf4llm"


@dataclass
class PageRun:
    route: str  # "wse" or "direct"
    parser: str
    tables: list[Table] = field(default_factory=list)  # logical RTL order
    text: str = ""
    words_found: int = 0
    words_total: int = 0
    altered: int = 0  # pieces recovered by edit distance or by splitting (wse only)
    seconds: float = 0.0

    @property
    def word_recovery(self) -> float:
        return self.words_found / self.words_total if self.words_total else 1.0


def original_words(pdf_path: str, page_number: int) -> list[str]:
    """The page's words from its repaired text layer: what decoding must give back."""
    with open_pdf(pdf_path) as doc:
        return [w.text for w in page_words(doc[page_number - 1])]


def _repaired(text: str) -> str:
    return normalize(text).text


def run_direct(pdf_path: str, page_number: int, parser: str = DEFAULT_PARSER) -> PageRun:
    """The parser on the original page; its text and cells get pagefleet's own repair (visual
    order, presentation forms), as any text of an accepted page would, so the comparison is
    with the parser at its best."""
    originals = original_words(pdf_path, page_number)
    result = get_parser(parser).parse(pdf_path, page_number)
    tables = [
        logical_rows([[_repaired(c) for c in row] for row in table], rtl=True)
        for table in result.tables
    ]
    text = _repaired(result.text)
    found, total = word_recovery(originals, text)
    return PageRun("direct", parser, tables, text, found, total, 0, result.seconds)


def encode_page(pdf_path: str, page_number: int, out_path: str) -> Mapping:
    """One page of `pdf_path` encoded into `out_path`; its mapping (not written to disk)."""
    with open_pdf(pdf_path) as src:
        out, mapping = encode_document(src, [page_number], source=pdf_path)
    try:
        out.save(out_path, garbage=3, deflate=True)
    finally:
        out.close()
    return mapping


def run_wse(pdf_path: str, page_number: int, parser: str = DEFAULT_PARSER) -> PageRun:
    started = time.perf_counter()
    originals = original_words(pdf_path, page_number)  # before any parser runs in this process
    with tempfile.TemporaryDirectory(prefix="pagefleet-wse-") as tmp:
        encoded = os.path.join(tmp, "encoded.pdf")
        mapping = encode_page(pdf_path, page_number, encoded)
        result = get_parser(parser).parse(encoded, 1)
    decoder = Decoder(mapping)
    tables = decoder.tables(result.tables)
    text = decoder.text(result.text)
    found, total = word_recovery(originals, text)
    return PageRun(
        "wse", parser, tables, text, found, total, decoder.altered, time.perf_counter() - started
    )


def recover_tables_wse(
    pdf_path: str, page_number: int, parser: str = DEFAULT_PARSER
) -> list[Table]:
    """The page's tables recovered through Word Shape Encoding: rows of cell strings in logical
    RTL order (``row[0]`` is the rightmost cell of the page), cells holding the original words."""
    return run_wse(pdf_path, page_number, parser).tables
