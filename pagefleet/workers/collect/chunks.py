"""`chunks.jsonl`: heading-aware chunks of a document's accepted pages, one JSON object a line.

Built from the page records as the collector streams them (pagefleet.routing.structure.chunking decides);
before anything is written, every citation is replayed through its page's edit map to `raw_text`:
a chunk with a citation that does not replay is left out (and logged), never written with a wrong
provenance.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any

from pagefleet.routing.structure.chunking import ChunkRules, PageIn, iter_chunks
from pagefleet.routing.structure.offsets import citation_replays
from pagefleet.workers.ladder.structure import paragraph_spans
from pagefleet.workers.model import DocumentRecord, PageRecord

log = logging.getLogger(__name__)


def _page_in(page: PageRecord, accepted_routes: tuple[str, ...]) -> PageIn:
    accepted = page.route in accepted_routes
    blocks = (
        [b.model_dump() for b in page.blocks]
        if page.blocks
        else (_paragraphs(page.text) if accepted else [])
    )
    return PageIn(
        number=page.number,
        accepted=accepted,
        blocks=blocks,
        route=page.route,
        engine=page.engine,
        ocr_confidence=page.ocr_confidence,
        warnings=page.quality.warnings,
    )


def _paragraphs(text: str) -> list[dict[str, Any]]:
    """`plain_blocks` as the chunker reads them: without the direction it never looks at."""
    return [
        {"type": "paragraph", "text": text[start:end], "bbox": None, "start": start, "end": end}
        for start, end in paragraph_spans(text)
    ]


def replays(chunk: dict[str, Any], pages: dict[int, PageRecord]) -> bool:
    for cite in chunk["citations"]:
        page = pages.get(cite["page"])
        if page is None or not citation_replays(
            page.raw_text or page.text,
            page.edits if page.raw_text else [],
            page.text,
            cite["start"],
            cite["end"],
        ):
            return False
    return True


def replayed(pages: Iterable[PageRecord], head: DocumentRecord) -> Iterator[dict[str, Any]]:
    """The chunks of `pages` (in page order, as they come) whose citations replay; a chunk is out as
    soon as it closes, and only the accepted pages a chunk still open may cite are kept."""
    from pagefleet.workers.store.artifacts import ACCEPTED_ROUTES

    rules = ChunkRules(max_chars=int(head.options.get("chunk_chars", ChunkRules.max_chars)))
    ctx = {
        "doc_sha256": head.source.sha256,
        "filename": head.source.filename,
        "pipeline_version": head.pipeline_version,
    }
    window: dict[int, PageRecord] = {}

    def fed() -> Iterator[PageIn]:
        for page in pages:
            if page.route in ACCEPTED_ROUTES:
                window[page.number] = page
            yield _page_in(page, ACCEPTED_ROUTES)

    left_out = 0
    for chunk in iter_chunks(fed(), ctx, rules):
        if replays(chunk, window):
            yield chunk
        else:
            left_out += 1
        last = max(chunk["pages"])  # chunks come in page order: no later one cites an earlier page
        for number in [n for n in window if n < last]:
            del window[number]
    if left_out:
        log.error(
            "%s: %d chunk(s) left out, their citations do not replay",
            head.source.filename,
            left_out,
        )
