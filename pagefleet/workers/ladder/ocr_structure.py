"""Blocks for pages an OCR rung read: a VLM's Markdown parsed with a real parser, Tesseract's
paragraphs (blank-line separated in its text output) as paragraph blocks.

Every block indexes the page's display text: a Markdown block gets the display range of the source
lines it came from (through the edit map), narrowed to its inline text when that text is found
there, so citations replay like the text layer's. Runs when the collector assembles a document,
for accepted pages that have no blocks yet.
"""

from __future__ import annotations

from typing import Any

from pagefleet.routing.structure.blocks import direction
from pagefleet.routing.structure.markdown import blocks_markdown
from pagefleet.routing.structure.mdparse import MdBlock, markdown_blocks
from pagefleet.routing.structure.offsets import OffsetMap
from pagefleet.routing.structure.tables import gfm
from pagefleet.workers.engines.base import gives_structure
from pagefleet.workers.ladder.structure import plain_blocks
from pagefleet.workers.model import Block, PageRecord

ACCEPTED = ("text_layer", "text_layer_repaired", "fallback_text", "ocr")


def _range(md: MdBlock, ranges: list[tuple[int, int]], text: str) -> tuple[int, int]:
    first, last = md.lines[0], max(md.lines[1] - 1, md.lines[0])
    start, end = ranges[min(first, len(ranges) - 1)][0], ranges[min(last, len(ranges) - 1)][1]
    if md.type != "table" and md.text:
        at = text.find(md.text, start, end)
        if at >= 0:
            return at, at + len(md.text)
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def markdown_page_blocks(raw: str, edits: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    ranges = OffsetMap(edits).line_ranges(raw)
    blocks = []
    for md in markdown_blocks(raw):
        start, end = _range(md, ranges, text)
        body = text[start:end]
        block: dict[str, Any] = {
            "type": md.type,
            "text": body,
            "bbox": None,
            "direction": direction(body),
            "start": start,
            "end": end,
        }
        if md.type == "heading":
            block["level"] = md.level
        elif md.type == "list_item":
            block["marker"] = md.marker
        elif md.type == "table":
            block["table"] = {"rows": md.rows, "header_rows": 1, "markdown": gfm(md.rows)}
        blocks.append(block)
    return blocks


def ensure_blocks(record: PageRecord) -> PageRecord:
    """An accepted page without blocks gets them from its text (OCR rungs)."""
    if record.route not in ACCEPTED or record.blocks or not record.text.strip():
        return record
    if record.route == "ocr" and gives_structure(record.engine or "") and record.raw_text:
        blocks = markdown_page_blocks(record.raw_text, record.edits, record.text)
        update: dict[str, Any] = {"markdown": blocks_markdown(blocks)}
    else:
        blocks = plain_blocks(record.text)
        update = {}
    return record.model_copy(update={**update, "blocks": [Block.model_validate(b) for b in blocks]})


def paragraph_blocks(text: str, paragraphs: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Tesseract's paragraphs found in order in the page text (first word … last word before the
    next paragraph), with their boxes; None when one is not found (text rebuilt or repaired)."""
    starts, cursor = [], 0
    for p in paragraphs:
        at = text.find(p["first"], cursor)
        if at < 0:
            return None
        starts.append(at)
        cursor = at + len(p["first"])
    blocks = []
    for i, p in enumerate(paragraphs):
        limit = starts[i + 1] if i + 1 < len(starts) else len(text)
        last = text.rfind(p["last"], starts[i], limit)
        if last < 0:
            return None
        end = last + len(p["last"])
        body = text[starts[i] : end]
        blocks.append(
            {
                "type": "paragraph",
                "text": body,
                "bbox": p["bbox"],
                "direction": direction(body),
                "start": starts[i],
                "end": end,
            }
        )
    return blocks


def with_paragraph_boxes(record: PageRecord, paragraphs: list[dict[str, Any]] | None) -> PageRecord:
    """An accepted OCR page gets Tesseract's paragraphs as blocks with boxes (else collect falls back
    to blank-line paragraphs)."""
    if record.route != "ocr" or not paragraphs or record.blocks:
        return record
    blocks = paragraph_blocks(record.text, paragraphs)
    if not blocks:
        return record
    return record.model_copy(update={"blocks": [Block.model_validate(b) for b in blocks]})
