"""LTR parsers behind one small interface, registered by name (seed 000, step 2).

    class Parser(Protocol):
        name: str
        def parse(self, pdf_path: str, page_number: int) -> ParseResult

`ParseResult.tables` are rows of cell strings exactly as the parser emits them (left to right on
the page it read); `ParseResult.text` is everything the parser returned for the page (Markdown or
plain text), used to measure word recovery.

    pymupdf       PyMuPDF's table finder (`page.find_tables()`), text from `page.get_text()`
    pymupdf4llm   pymupdf4llm's Markdown (with the pymupdf-layout ONNX layout model when
                  installed), Markdown tables parsed back into rows; its OCR is switched off

A VLM engine (dots.ocr, Qwen2.5-VL) or the OpenAI-compatible HTTP engine could be a parser too
(render the encoded page, ask for Markdown, parse the tables with `markdown_tables`); that adapter
is not built: no weights or server can be reached here to check it.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Protocol

import pymupdf

from workers.errors import EngineCrashed, EngineUnavailable

Table = list[list[str]]


@dataclass
class ParseResult:
    parser: str
    tables: list[Table] = field(default_factory=list)
    text: str = ""
    seconds: float = 0.0


class Parser(Protocol):
    name: str

    def parse(self, pdf_path: str, page_number: int) -> ParseResult: ...


class PyMuPDFTables:
    name = "pymupdf"

    def parse(self, pdf_path: str, page_number: int) -> ParseResult:
        started = time.perf_counter()
        try:
            with pymupdf.open(pdf_path) as doc:
                page = doc[page_number - 1]
                found = page.find_tables()
                tables = [[[_cell(c) for c in row] for row in t.extract()] for t in found.tables]
                text = page.get_text()
        except (RuntimeError, ValueError, IndexError) as exc:
            raise EngineCrashed(f"pymupdf table finder failed on {pdf_path} p{page_number}: {exc}") from exc
        return ParseResult(self.name, tables, text, time.perf_counter() - started)


class PyMuPDF4LLM:
    name = "pymupdf4llm"

    def parse(self, pdf_path: str, page_number: int) -> ParseResult:
        started = time.perf_counter()
        try:
            import pymupdf4llm
        except ImportError as exc:  # missing, or built for another PyMuPDF version
            raise EngineUnavailable(f"pymupdf4llm is not usable: {exc}") from exc
        try:
            with pymupdf.open(pdf_path) as doc:
                md = pymupdf4llm.to_markdown(doc, pages=[page_number - 1], use_ocr=False, show_progress=False)
        except (RuntimeError, ValueError, IndexError) as exc:
            raise EngineCrashed(f"pymupdf4llm failed on {pdf_path} p{page_number}: {exc}") from exc
        return ParseResult(self.name, markdown_tables(md), md, time.perf_counter() - started)


def _cell(value: str | None) -> str:
    return " ".join((value or "").split())


_BR = re.compile(r"<br\s*/?>", re.IGNORECASE)
_SEPARATOR = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def _row(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    cells = re.split(r"(?<!\\)\|", body)
    return [_cell(_BR.sub(" ", c).replace("\\|", "|")) for c in cells]


def markdown_tables(markdown: str) -> list[Table]:
    """Pipe tables of a Markdown text as rows of cells (separator lines dropped, ``<br>`` → space)."""
    tables: list[Table] = []
    current: Table = []
    for line in markdown.splitlines():
        if line.strip().startswith("|"):
            if not _SEPARATOR.match(line.strip()):
                current.append(_row(line))
            continue
        if current:
            tables.append(current)
            current = []
    if current:
        tables.append(current)
    return tables


PARSERS: dict[str, type] = {"pymupdf": PyMuPDFTables, "pymupdf4llm": PyMuPDF4LLM}
DEFAULT_PARSERS = ("pymupdf", "pymupdf4llm")


def get_parser(name: str) -> Parser:
    """A parser by its registered name; an unknown name is `EngineUnavailable`."""
    try:
        return PARSERS[name]()
    except KeyError:
        raise EngineUnavailable(f"no WSE parser {name!r}; known: {', '.join(sorted(PARSERS))}") from None
