"""`chunks.jsonl`: heading-aware chunks of a document's accepted pages, one JSON object a line.

Built from the page records (routing.structure.chunking decides); before anything is written,
every citation is replayed through its page's edit map to `raw_text`: a chunk with a citation that
does not replay is left out (and logged), never written with a wrong provenance.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from routing.structure.chunking import ChunkRules, PageIn, chunk_document
from routing.structure.offsets import citation_replays
from workers.ladder.structure import plain_blocks
from workers.model import DocumentRecord, PageRecord

log = logging.getLogger(__name__)


def _page_in(page: PageRecord, accepted_routes: tuple[str, ...]) -> PageIn:
    accepted = page.route in accepted_routes
    blocks = [b.model_dump() for b in page.blocks] if page.blocks else (plain_blocks(page.text) if accepted else [])
    return PageIn(number=page.number, accepted=accepted, blocks=blocks, route=page.route, engine=page.engine,
                  ocr_confidence=page.ocr_confidence, warnings=page.quality.warnings)


def replays(chunk: dict[str, Any], pages: dict[int, PageRecord]) -> bool:
    for cite in chunk["citations"]:
        page = pages.get(cite["page"])
        if page is None or not citation_replays(page.raw_text or page.text, page.edits if page.raw_text else [],
                                                page.text, cite["start"], cite["end"]):
            return False
    return True


def document_chunks(document: DocumentRecord) -> list[dict[str, Any]]:
    from workers.artifacts import ACCEPTED_ROUTES

    rules = ChunkRules(max_chars=int(document.options.get("chunk_chars", ChunkRules.max_chars)))
    ctx = {"doc_sha256": document.source.sha256, "filename": document.source.filename,
           "pipeline_version": document.pipeline_version}
    chunks = chunk_document([_page_in(p, ACCEPTED_ROUTES) for p in document.pages], ctx, rules)
    pages = {p.number: p for p in document.pages}
    kept = [c for c in chunks if replays(c, pages)]
    if len(kept) != len(chunks):
        log.error("%s: %d chunk(s) left out, their citations do not replay", document.source.filename,
                  len(chunks) - len(kept))
    return kept


def jsonl(document: DocumentRecord) -> str:
    return "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in document_chunks(document))
