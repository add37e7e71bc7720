"""`encode_pdf`: an RTL PDF → a mirrored, English-looking PDF and its mapping (seed 000, step 1).

Every word of the selected pages that needs a token (`pagefleet.routing.wse.needs_token`: RTL letters, or
characters Helvetica cannot draw) is replaced by the English word of the nearest box shape
(`pagefleet.workers.wse.mapping.assign`); every other word (numbers, Latin, punctuation) is drawn as it is.
The page — images and vector graphics too — is mirrored (`pagefleet.workers.wse.mirror`), so a table read
right to left reads left to right. Page ``i`` of the output is page ``mapping.pages[i]`` of the
input.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import pymupdf

from pagefleet.workers.errors import EncryptedPdfError, InvalidPdfError
from pagefleet.workers.wse.mapping import Mapping, assign, mapping_path
from pagefleet.workers.wse.mirror import draw_words, mirrored_background, strip_text
from pagefleet.workers.wse.words import PageWord, page_words


@dataclass(frozen=True)
class EncodeResult:
    pdf: str
    mapping_path: str
    mapping: Mapping
    seconds: float


def open_pdf(path: str) -> pymupdf.Document:
    """Open a PDF for reading; PyMuPDF's errors become the project's typed input errors."""
    try:
        doc = pymupdf.open(path, filetype="pdf")
    except (RuntimeError, ValueError) as exc:  # pymupdf.FileDataError / FileNotFoundError included
        raise InvalidPdfError(f"cannot open {path}: {exc}") from exc
    if doc.needs_pass:
        doc.close()
        raise EncryptedPdfError(f"{path} needs a password")
    return doc


def _prepare(
    src: pymupdf.Document, pages: Sequence[int]
) -> tuple[pymupdf.Document, list[list[PageWord]]]:
    """A working copy holding the selected pages, upright, with their words read and text removed."""
    work = pymupdf.open()
    for number in pages:
        work.insert_pdf(src, from_page=number - 1, to_page=number - 1)
    words = []
    for page in work:
        if page.rotation:
            page.remove_rotation()
        words.append(page_words(page))
        strip_text(page)
    return work, words


def encode_document(
    src: pymupdf.Document, pages: Sequence[int], source: str = ""
) -> tuple[pymupdf.Document, Mapping]:
    """The encoded document (one page per selected page) and its mapping, in memory."""
    mapping = Mapping(source=source, pages=list(pages))
    work, words = _prepare(src, pages)
    try:
        drawn = assign(mapping, list(zip(pages, words)))
        out = pymupdf.open()
        for i in range(len(pages)):
            page = mirrored_background(out, work, i)
            draw_words(page, words[i], drawn[i])
        return out, mapping
    finally:
        work.close()


def encode_pdf(src_path: str, out_path: str, pages: Sequence[int] | None = None) -> EncodeResult:
    """Encode `src_path` into `out_path`, the mapping beside it (`mapping_path(out_path)`)."""
    started = time.perf_counter()
    src = open_pdf(src_path)
    try:
        selected = list(pages) if pages else list(range(1, src.page_count + 1))
        bad = [p for p in selected if not 1 <= p <= src.page_count]
        if bad:
            raise InvalidPdfError(f"{src_path} has {src.page_count} pages, not {bad}")
        out, mapping = encode_document(src, selected, source=src_path)
    finally:
        src.close()
    try:
        out.save(out_path, garbage=3, deflate=True)
    finally:
        out.close()
    side = mapping_path(out_path)
    mapping.save(side)
    return EncodeResult(out_path, side, mapping, time.perf_counter() - started)
