"""A document's artifacts assembled page by page (issue 15): the collector never holds every page.

A 10 000-page document's page records took ~0.8 GB as objects, and as much again while
document.json, document.md, text.txt and chunks.jsonl were each built as one string and then one
byte string. Here every page, read one range object at a time (`work.iter_records`), is added
once: its JSON, Markdown and text go straight to spools (in memory while small, then temporary
files), the report and the metrics are tallied, and the chunker (a generator) takes it and gives
back the chunks it closes; then the spools are stored, each object streamed from its spool.

    Assembly(folder, head)   folder: where big spools go; head: the DocumentRecord without pages
                             (its status set at the end)
    .add(page)               one page record, in page order; returns it (the chunker reads it next)
    .chunk(chunk)            one chunk whose citations replay (`pagefleet.workers.collect.chunks.replayed`)
    .store(storage, prefix, manifest) -> (head with its status, report)

The bytes are those of the document built whole: document.json is the head's JSON with the pages'
JSON spliced in at its `"pages": []`, indented as pydantic indents a nested list.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections import Counter
from json.encoder import encode_basestring
from typing import Any, BinaryIO

import pydantic_core

from pagefleet.workers import metrics
from pagefleet.workers.model import DocumentRecord, PageRecord
from pagefleet.workers.store import artifacts
from pagefleet.workers.store.storage import Storage

_PAGES = '\n "pages": []'  # where the head's JSON (indent=1) lists no pages
_IN_MEMORY = 8 << 20  # a spool bigger than this moves to a file (a one-page document's never does)
_BATCH = 1 << 20  # a spool's parts gathered up to this many bytes before one write


def _spooled(folder: str) -> BinaryIO:
    return tempfile.SpooledTemporaryFile(_IN_MEMORY, "w+b", dir=folder)  # type: ignore[return-value]


class _Spool:
    """One artifact written part by part (UTF-8), `sep` between parts: in memory while small, in a
    temporary file of `folder` once big. Parts are gathered and written `_BATCH` bytes at a time: a
    write to a SpooledTemporaryFile is Python code (~4 µs), and a 1000-page document's artifacts
    are ~5 000 parts."""

    def __init__(self, folder: str, sep: str) -> None:
        self.sep, self.parts = sep.encode(), 0
        self.file = _spooled(folder)
        self._pending: list[bytes] = []
        self._size = 0

    def write(self, part: str | bytes) -> None:
        data = part if isinstance(part, bytes) else part.encode("utf-8")
        if self.parts:
            self._pending.append(self.sep)
            self._size += len(self.sep)
        self._pending.append(data)
        self._size += len(data)
        self.parts += 1
        if self._size >= min(_BATCH, _IN_MEMORY):  # what waits counts towards what memory may hold
            self.flush()

    def flush(self) -> BinaryIO:
        """The spool's file, every part written so far in it."""
        if self._pending:
            self.file.write(b"".join(self._pending))
            self._pending.clear()
            self._size = 0
        return self.file


_TEXTS = '"text": 0, "text_for_embedding": 0'  # where chunk_line's placeholders come out
_JSON = json.JSONEncoder(ensure_ascii=False)  # what json.dumps(..., ensure_ascii=False) uses


def _json_string(text: str) -> bytes:
    """`encode_basestring(text)` in UTF-8 (json's escapes with ensure_ascii=False), written by
    pydantic's JSON writer, whose escapes are the same for every code point, in one pass (not json's
    escaping, then UTF-8's). A lone surrogate fails as json's path fails (UnicodeEncodeError)."""
    try:
        return pydantic_core.to_json(text)
    except pydantic_core.PydanticSerializationError:
        return encode_basestring(text).encode("utf-8")


def chunk_line(chunk: dict[str, Any]) -> bytes:
    """`json.dumps(chunk, ensure_ascii=False)` and a line break, in UTF-8, the chunk's text
    escaped and encoded once though it is there twice (`text`, the end of `text_for_embedding`):
    a JSON string's escapes, as UTF-8's bytes, are each one character's, so a + b gives a's
    then b's."""
    text, embedding = chunk.get("text"), chunk.get("text_for_embedding")
    if type(text) is not str or type(embedding) is not str or not embedding.endswith(text):
        return (_JSON.encode(chunk) + "\n").encode("utf-8")
    line = _JSON.encode({**chunk, "text": 0, "text_for_embedding": 0})
    if line.count(_TEXTS) != 1:
        return (_JSON.encode(chunk) + "\n").encode("utf-8")
    encoded = _json_string(text)
    crumb = embedding[: len(embedding) - len(text)]
    either = encoded if not crumb else _json_string(crumb)[:-1] + encoded[1:]
    at = line.index(_TEXTS)
    return b"".join(
        (
            line[:at].encode("utf-8"),
            b'"text": ',
            encoded,
            b', "text_for_embedding": ',
            either,
            line[at + len(_TEXTS) :].encode("utf-8"),
            b"\n",
        )
    )


class Assembly:
    def __init__(self, folder: str, head: DocumentRecord) -> None:
        self.folder, self.head = folder, head
        self.pages = _Spool(folder, ",\n  ")  # a page's first line's indent comes with its comma
        self.markdown = _Spool(folder, "\n\n")
        self.text = _Spool(folder, "\f")
        self.chunks = _Spool(folder, "")
        self.tally = artifacts.Tally()
        # the pages' metrics series (pagefleet/workers/metrics.py)
        self.counts: Counter[str] = Counter()

    def add(self, page: PageRecord) -> PageRecord:
        self.tally.add(page)
        metrics.page_counts(page, self.counts)
        # a list item two levels in: every line of the page's own JSON two spaces further in (JSON
        # strings hold no raw line breaks, so only the layout's line breaks are indented)
        self.pages.write(
            page.__pydantic_serializer__.to_json(page, indent=1).replace(b"\n", b"\n  ")
        )
        self.markdown.write(artifacts.markdown_utf8(page))
        self.text.write(artifacts.page_text(page))
        return page

    def chunk(self, chunk: dict[str, Any]) -> None:
        self.chunks.write(chunk_line(chunk))

    def _document_json(self, head: DocumentRecord) -> BinaryIO:
        """document.json: the head's JSON, the spooled pages in its list."""
        text = head.model_dump_json(indent=1)
        out = _spooled(self.folder)
        if not self.pages.parts:
            out.write(text.encode("utf-8"))
            return out
        at = text.index(_PAGES)
        out.write((text[:at] + '\n "pages": [\n  ').encode("utf-8"))
        pages = self.pages.flush()
        pages.seek(0)
        shutil.copyfileobj(pages, out, 1 << 20)
        out.write(("\n ]" + text[at + len(_PAGES) :]).encode("utf-8"))
        return out

    def close(self) -> None:
        for spool in (self.pages, self.markdown, self.text, self.chunks):
            spool.file.close()

    def store(
        self, storage: Storage, prefix: str, manifest: dict[str, Any]
    ) -> tuple[DocumentRecord, dict[str, Any]]:
        """Every artifact stored: report.json last, once the other four are (it marks the job
        complete). Returns the head with its status, and the report."""
        self.markdown.flush().write(b"\n")
        head = self.head.model_copy(update={"status": self.tally.status()})
        report = self.tally.report(head, manifest)
        base = f"{prefix}/" if prefix else ""
        with self._document_json(
            head
        ) as document_json:  # the four at once where the store is remote
            storage.put_streams(
                [
                    (base + "document.md", self.markdown.file, "text/markdown; charset=utf-8"),
                    (base + "text.txt", self.text.flush(), "text/plain; charset=utf-8"),
                    (
                        base + "chunks.jsonl",
                        self.chunks.flush(),
                        "application/x-ndjson; charset=utf-8",
                    ),
                    (base + "document.json", document_json, "application/json"),
                ]
            )
        storage.put_json(base + "report.json", report)
        self.close()
        return head, report
