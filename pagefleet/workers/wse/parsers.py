"""LTR parsers behind one small interface, registered by name (seed 000, step 2).

    class Parser(Protocol):
        name: str
        def parse(self, pdf_path: str, page_number: int) -> ParseResult

`ParseResult.tables` are rows of cell strings exactly as the parser emits them (left to right on
the page it read); `ParseResult.text` is everything the parser returned for the page (Markdown or
plain text), used to measure word recovery.

    pymupdf       PyMuPDF's table finder (lines and text, `find_tables(use_layout=False)`),
                  text from `page.get_text()`
    pymupdf4llm   pymupdf4llm's Markdown (with the pymupdf-layout ONNX layout model when
                  installed), its tables parsed back into rows by `pagefleet.routing.structure.mdparse`
                  (CommonMark + GFM); its OCR is switched off

A VLM engine (dots.ocr, Qwen2.5-VL) or the OpenAI-compatible HTTP engine could be a parser too
(render the encoded page, ask for Markdown, parse its tables with `markdown_tables`); that adapter
is not built: no weights or server can be reached here to check it.
"""

from __future__ import annotations

import contextlib
import io
import time
from dataclasses import dataclass, field
from typing import Protocol

import pymupdf

from pagefleet.routing.structure.mdparse import markdown_tables
from pagefleet.workers.errors import EngineCrashed, EngineUnavailable

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
                found = page.find_tables(use_layout=False)  # the same finder whether or not
                # pymupdf4llm (which switches the layout model on process-wide) was imported
                tables = [[[_cell(c) for c in row] for row in t.extract()] for t in found.tables]
                text = page.get_text()
        except (RuntimeError, ValueError, IndexError) as exc:
            raise EngineCrashed(
                f"pymupdf table finder failed on {pdf_path} p{page_number}: {exc}"
            ) from exc
        return ParseResult(self.name, tables, text, time.perf_counter() - started)


class PyMuPDF4LLM:
    """pymupdf4llm in a sandboxed child (`pagefleet.workers.pdf.pymupdf4llm_child`, shared with the structured recovery):
    it switches PyMuPDF's layout model on process-wide and changes later text extraction, so it
    never runs in a process that goes on encoding or parsing. `in_process` is for such a child."""

    name = "pymupdf4llm"
    in_process = False
    timeout_s = 120.0

    def parse(self, pdf_path: str, page_number: int) -> ParseResult:
        started = time.perf_counter()
        if self.in_process:
            md = _pymupdf4llm_markdown(pdf_path, page_number)
            tables = markdown_tables(md)
        else:
            from pagefleet.workers.ladder.recovery import child_json

            data = child_json(
                "pagefleet.workers.pdf.pymupdf4llm_child",
                "pymupdf4llm",
                pdf_path,
                page_number,
                self.timeout_s,
            )
            md, tables = data.get("markdown", ""), [t["rows"] for t in data["tables"]]
        return ParseResult(self.name, tables, md, time.perf_counter() - started)


class PyMuPDF4LLMInProcess(PyMuPDF4LLM):
    in_process = True


def _pymupdf4llm_markdown(pdf_path: str, page_number: int) -> str:
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            import pymupdf4llm
    except ImportError as exc:  # missing, or built for another PyMuPDF version
        raise EngineUnavailable(f"pymupdf4llm is not usable: {exc}") from exc
    try:
        with (
            pymupdf.open(pdf_path) as doc,
            contextlib.redirect_stdout(io.StringIO()),
        ):  # its chatter
            return pymupdf4llm.to_markdown(
                doc, pages=[page_number - 1], use_ocr=False, show_progress=False
            )
    except (RuntimeError, ValueError, IndexError) as exc:
        raise EngineCrashed(f"pymupdf4llm failed on {pdf_path} p{page_number}: {exc}") from exc


def _cell(value: str | None) -> str:
    return " ".join((value or "").split())


PARSERS: dict[str, type] = {
    "pymupdf": PyMuPDFTables,
    "pymupdf4llm": PyMuPDF4LLM,
    "pymupdf4llm-inprocess": PyMuPDF4LLMInProcess,
}
DEFAULT_PARSERS = ("pymupdf", "pymupdf4llm")


def get_parser(name: str) -> Parser:
    """A parser by its registered name; an unknown name is `EngineUnavailable`."""
    try:
        return PARSERS[name]()
    except KeyError:
        raise EngineUnavailable(
            f"no WSE parser {name!r}; known: {', '.join(sorted(PARSERS))}"
        ) from None
