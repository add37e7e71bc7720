"""THE function from `document.json` + `review.json` to a document's reviewed artifacts.

    build(doc, review) -> Reviewed     pure: the artifacts' contents and the review summary
    apply(storage, prefix) -> summary  reads both, writes the artifacts (None: no review.json)

What is written (document.json, document.md and text.txt are never rewritten):

- `document.reviewed.json` (schema 2): document.json with each decided page's `review` (decision,
  reviewer, at, note, reason, corrected, text_sha256, stale); an approved page takes route
  `reviewed`, its text the approved one (the quarantined preview, or the correction), its `edits`
  the map that replays `raw_text` to it (the reviewer's changes of kind `review`), its blocks carried
  through the correction; a rejected page takes route `rejected` and keeps no text at all;
- `document.reviewed.md`, `text.reviewed.txt`: as document.md / text.txt with approved pages let
  through (each under a comment naming the reviewer) and rejected pages left out (an empty part in
  text.reviewed.txt, so form feeds still count pages);
- `chunks.jsonl`: regenerated over the accepted and approved pages; every chunk says `reviewed`
  (true when it cites an approved page) and `reviewed_by`;
- `report.json`: `review` {reviewed, corrected, rejected, flagged, pending, stale, pages …} and the
  status: `accepted_after_review` once no page is pending and a decision applies.

A stale decision (made on a text the page no longer has) is never applied; the page is as if
undecided. A page that is pending is one that was refused and has no applying approve or reject.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pagefleet.routing.edits import Edit, apply_edits
from pagefleet.routing.structure.chunking import ChunkRules
from pagefleet.workers.collect import chunks
from pagefleet.workers.model import Block, DocumentRecord, EditMapInfo, PageRecord, Quality
from pagefleet.workers.review.corrections import moved_blocks
from pagefleet.workers.review.decisions import (
    REVIEW_FILE,
    Decision,
    ReviewError,
    ReviewFile,
    base_edits,
    base_text,
    effective,
    is_refused,
    is_stale,
    parse,
)
from pagefleet.workers.store import artifacts
from pagefleet.workers.store.storage import Storage

REVIEWED_JSON = "document.reviewed.json"
REVIEWED_MD = "document.reviewed.md"
REVIEWED_TXT = "text.reviewed.txt"
CHUNKS = "chunks.jsonl"
REPORT = "report.json"
OUTPUTS = (REVIEWED_JSON, REVIEWED_MD, REVIEWED_TXT, CHUNKS, REPORT)
FINAL_STATUS = "accepted_after_review"
log = logging.getLogger(__name__)


@dataclass
class Reviewed:
    document: dict[str, Any]
    markdown: str
    text: str
    chunks: list[dict[str, Any]]
    summary: dict[str, Any]


def _comment_safe(text: str) -> str:
    return json.dumps(text, ensure_ascii=False).replace("--", "- -")


def review_info(page: dict[str, Any], made: Decision) -> dict[str, Any]:
    return {
        "decision": made.decision,
        "reviewer": made.reviewer,
        "at": made.at,
        "note": made.note,
        "reason": made.reason,
        "corrected": made.corrected,
        "text_sha256": made.text_sha256,
        "revision": made.revision,
        "stale": is_stale(page, made),
    }


def _plain_markdown(text: str) -> str:
    """A page without blocks: its paragraphs, each line kept (a Markdown hard break)."""
    paragraphs = [p.strip("\n") for p in text.split("\n\n")]
    return "\n\n".join(
        "  \n".join(line.strip() for line in p.split("\n")) for p in paragraphs if p.strip()
    )


def approved_page(raw: dict[str, Any], made: Decision) -> PageRecord:
    """The page as the reviewer approved it: route `reviewed`, its text, edits, blocks, Markdown.
    A page that had no raw text at all (nothing was read) takes the reviewer's typed text as its
    `raw_text`, with no edits (`edit_map.gap` says `typed_in_review`): there is nothing to replay."""
    from pagefleet.workers.ladder.structure import markdown_of

    page = PageRecord.model_validate(raw)
    shown, refused = base_text(raw), is_refused(raw)
    own = page.review_preview if refused and page.review_preview else None
    blocks = [b.model_dump() for b in (own.blocks if own else page.blocks)]
    edits, text = base_edits(raw), shown
    markdown = own.markdown if own else page.markdown
    if made.edits is not None:
        edits = made.edits
        text = apply_edits(page.raw_text, [Edit.from_dict(e) for e in edits])
        blocks = moved_blocks(blocks, shown, text)
        markdown = markdown_of(blocks) if blocks else _plain_markdown(text)
    raw_text, edit_map = page.raw_text, EditMapInfo(target="text", complete=True)
    if not raw_text and text:
        raw_text, edits, edit_map = (
            text,
            [],
            EditMapInfo(target="text", complete=True, gap="typed_in_review"),
        )
    return page.model_copy(
        update={
            "route": "reviewed",
            "engine": page.engine or (own.engine if own else "review"),
            "text": text,
            "markdown": markdown,
            "raw_text": raw_text,
            "edits": edits,
            "edit_map": edit_map,
            "blocks": [Block.model_validate(b) for b in blocks],
            "needs_review": False,
            "review_preview": None,
            "quality": Quality(
                ok=True, reasons=[], warnings=page.quality.warnings, metrics=page.quality.metrics
            ),
        }
    )


def current_view(raw: dict[str, Any], review: ReviewFile) -> tuple[str, list[dict[str, Any]]]:
    """The text and blocks a reviewer starts from: the page's own (`base_text`), or, while a
    corrected approval applies, the corrected ones."""
    made = effective(raw, review)
    if made is not None and made.decision == "approve" and made.corrected:
        page = approved_page(raw, made)
        return page.text, [b.model_dump() for b in page.blocks]
    preview = raw.get("review_preview") or {}
    blocks = preview.get("blocks") if is_refused(raw) else raw.get("blocks")
    return base_text(raw), list(blocks or [])


def rejected_page(raw: dict[str, Any]) -> PageRecord:
    page = PageRecord.model_validate(raw)
    return page.model_copy(
        update={
            "route": "rejected",
            "text": "",
            "markdown": "",
            "raw_text": "",
            "edits": [],
            "blocks": [],
            "review_preview": None,
            "needs_review": False,
            "edit_map": EditMapInfo(target="text", complete=True),
        }
    )


def _markdown_parts(original: dict[str, Any], page: PageRecord, made: Decision | None) -> list[str]:
    if made is None:
        return artifacts.markdown_parts(page)
    number = page.number
    if made.decision == "reject":
        reason = _comment_safe(made.reason)
        return [
            f"<!-- page {number} -->",
            f"<!-- pagefleet review: page {number} rejected by a reviewer at {made.at}; reason={reason} -->",
        ]
    was = f"was {original.get('route')} (reasons={','.join(made.reasons) or 'none'}); "
    how = "corrected and approved" if made.corrected else "approved"
    header = (
        f"<!-- pagefleet review: page {number} {was}{how} by a reviewer at {made.at} "
        f"(reviewer {_comment_safe(made.reviewer)}); note={_comment_safe(made.note)} -->"
    )
    return [f"<!-- page {number} -->", header, artifacts.rtl_wrapped(page.markdown, page.direction)]


def _pages(
    doc: dict[str, Any], review: ReviewFile
) -> list[tuple[dict[str, Any], PageRecord, Decision | None]]:
    out: list[tuple[dict[str, Any], PageRecord, Decision | None]] = []
    for raw in doc.get("pages", []):
        made = effective(raw, review)
        if made is not None and made.decision == "approve":
            out.append((raw, approved_page(raw, made), made))
        elif made is not None and made.decision == "reject":
            out.append((raw, rejected_page(raw), made))
        else:
            out.append((raw, PageRecord.model_validate(raw), None))
    return out


def summarize(doc: dict[str, Any], review: ReviewFile) -> dict[str, Any]:
    """Counts and page lists of the review, and the status the document reaches."""
    approved, corrected, rejected, flagged, pending, stale = [], [], [], [], [], []
    for raw in doc.get("pages", []):
        number, made = int(raw["number"]), review.pages.get(str(raw["number"]))
        if is_stale(raw, made):
            stale.append(number)
        live = effective(raw, review)
        verdict = live.decision if live else None
        if verdict == "approve":
            approved.append(number)
            if live and live.corrected:
                corrected.append(number)
        elif verdict == "reject":
            rejected.append(number)
        elif verdict == "flag":
            flagged.append(number)
        if is_refused(raw) and verdict not in ("approve", "reject"):
            pending.append(number)
    decided = bool(approved or rejected)
    status = doc.get("status") if not decided else (FINAL_STATUS if not pending else "needs_review")
    return {
        "status": status,
        "reviewed": len(approved),
        "corrected": len(corrected),
        "rejected": len(rejected),
        "flagged": len(flagged),
        "pending": len(pending),
        "stale": len(stale),
        "approved_pages": approved,
        "corrected_pages": corrected,
        "rejected_pages": rejected,
        "pending_pages": pending,
        "stale_pages": stale,
        "decided_at": max((d.at for d in review.pages.values()), default=None),
    }


def _chunks(
    pages: list[PageRecord], head: DocumentRecord, reviewers: dict[int, str]
) -> list[dict[str, Any]]:
    out = []
    for chunk in chunks.replayed(iter(pages), head):
        by = sorted({reviewers[n] for n in chunk["pages"] if n in reviewers})
        chunk["reviewed"] = any(n in reviewers for n in chunk["pages"])
        chunk["reviewed_by"] = by
        out.append(chunk)
    return out


def build(doc: dict[str, Any], review: ReviewFile) -> Reviewed:
    """The reviewed artifacts of `doc` under `review` (nothing is read or written here)."""
    decided = _pages(doc, review)
    summary = summarize(doc, review)
    head = DocumentRecord.model_validate(
        {**doc, "pages": [], "status": summary["status"], "schema_version": 2}
    )
    chunking = head  # the chunker's default size read from an instance (a compiled class's too)
    if "chunk_chars" not in head.options:
        chunking = head.model_copy(
            update={"options": {**head.options, "chunk_chars": ChunkRules().max_chars}}
        )
    pages_json, md_parts, txt_parts = [], [], []
    for raw, page, made in decided:
        entry = page.model_dump(mode="json")
        stored = review.pages.get(str(page.number))
        if stored is not None:
            entry["review"] = review_info(raw, stored)
        pages_json.append(entry)
        md_parts.extend(_markdown_parts(raw, page, made))
        txt_parts.append("" if page.route == "rejected" else artifacts.page_text(page))
    reviewers = {
        p.number: (m.reviewer or "reviewer")
        for _, p, m in decided
        if m is not None and p.route == "reviewed"
    }
    document = {**head.model_dump(mode="json"), "pages": pages_json}
    return Reviewed(
        document=document,
        markdown="\n\n".join(p for p in md_parts if p) + "\n",
        text="\f".join(txt_parts),
        chunks=_chunks([p for _, p, _ in decided], chunking, reviewers),
        summary=summary,
    )


Writer = Callable[[str, bytes, str], None]


def apply(storage: Storage, prefix: str, write: Writer | None = None) -> dict[str, Any] | None:
    """Write the reviewed artifacts of the document under `prefix` (report.json last); returns the
    review summary, or None when the document has no review.json. `write(name, data, type)`
    replaces the plain storage write (the studio's checks its keys)."""

    def key(name: str) -> str:
        return f"{prefix}/{name}" if prefix else name

    try:
        raw_review = storage.get_json(key(REVIEW_FILE))
    except KeyError:
        return None
    doc = storage.get_json(key("document.json"))
    try:
        report = storage.get_json(key(REPORT))
    except KeyError:
        report = {}
    done = build(doc, parse(raw_review))
    put = write or (lambda name, data, kind: storage.put_bytes(key(name), data, kind))
    put(
        REVIEWED_JSON,
        json.dumps(done.document, ensure_ascii=False, indent=1).encode("utf-8"),
        "application/json",
    )
    put(REVIEWED_MD, done.markdown.encode("utf-8"), "text/markdown; charset=utf-8")
    put(REVIEWED_TXT, done.text.encode("utf-8"), "text/plain; charset=utf-8")
    put(
        CHUNKS,
        "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in done.chunks).encode("utf-8"),
        "application/x-ndjson; charset=utf-8",
    )
    report = {**report, "status": done.summary["status"], "review": done.summary}
    put(
        REPORT, json.dumps(report, ensure_ascii=False, indent=1).encode("utf-8"), "application/json"
    )
    return done.summary


def after_collect(storage: Storage, prefix: str) -> dict[str, Any] | None:
    """`apply` as the collector calls it once a document's artifacts are stored: a review.json that
    cannot be applied (unreadable, or not this document's) is logged, never fails the document."""
    try:
        return apply(storage, prefix)
    except (ValueError, ReviewError) as exc:  # pydantic's and the edit map's errors are ValueErrors
        log.error("%s: review.json not applied: %s", prefix or ".", exc)
        return None
