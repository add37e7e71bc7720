"""The studio's side of reviewer decisions: a decision recorded in review.json (`pagefleet.workers.review`),
then the document's reviewed artifacts regenerated (`pagefleet.workers.review.reviewed.apply`), and the export.

`document.json` is never rewritten. Every write of review.json goes through
`pagefleet.workers.review.store.update`: a decision made on a page someone decided meanwhile, or on a text the
page no longer has, is refused (`ReviewConflict`, answered 409) and nothing is lost.
"""

from __future__ import annotations

import threading
from typing import Any

from pagefleet.workers.cli.studio.library import DocRef, Library
from pagefleet.workers.review import decisions, store
from pagefleet.workers.review import decision_metrics
from pagefleet.workers.review.corrections import cells_to_text, corrected_edits, moved_blocks
from pagefleet.workers.review.decisions import (
    Decision,
    Released,
    ReviewConflict,
    ReviewError,
    ReviewFile,
    base_edits,
    base_text,
)
from pagefleet.workers.review.reviewed import REVIEWED_MD, apply, current_view

__all__ = [
    "REVIEWED_MD",
    "Decision",
    "ReviewConflict",
    "ReviewError",
    "ReviewFile",
    "decide",
    "export",
    "load",
    "regenerate",
    "release",
]
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def load(library: Library, ref: DocRef) -> ReviewFile:
    return decisions.parse(library.read_json(ref, decisions.REVIEW_FILE))


def _page(doc: dict[str, Any], number: int) -> dict[str, Any]:
    page = next((p for p in doc.get("pages", []) if int(p["number"]) == number), None)
    if page is None:
        raise ReviewError(f"the document has no page {number}")
    return page


def correction(
    page: dict[str, Any],
    review: ReviewFile,
    text: str | None,
    cells: dict[int, list[list[str]]] | None,
) -> list[dict[str, Any]] | None:
    """The page's edit map with the reviewer's text and table cells (both against the view the
    editor started from: `current_view`), or None when the result is the page's own text."""
    shown = base_text(page)
    start, blocks = current_view(page, review)
    corrected = start if text is None else text.replace("\r\n", "\n")
    if cells and corrected != start:
        blocks = moved_blocks(blocks, start, corrected, drop_empty=False)
    tables = [
        (blocks[i] if 0 <= i < len(blocks) else {}, rows) for i, rows in (cells or {}).items()
    ]
    for block, rows in sorted(
        tables, key=lambda t: -int(t[0].get("start", 0))
    ):  # later tables first
        if block.get("type") != "table":
            raise ReviewError(f"a grid of page {page['number']} is not one of its tables")
        corrected = cells_to_text(corrected, block, rows)
    if corrected == shown:
        return None
    return corrected_edits(str(page.get("raw_text") or ""), base_edits(page), shown, corrected)


def _document_lock(ref: DocRef) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(ref.id, threading.Lock())


def regenerate(library: Library, ref: DocRef) -> dict[str, Any] | None:
    """The document's reviewed artifacts written again from document.json + review.json: one
    writer at a time in this studio, and again if review.json changed meanwhile (another studio's
    decision), so the last artifacts written are those of the last review.json."""
    summary = None
    with _document_lock(ref):
        for _ in range(3):
            before = library.read_bytes(ref, decisions.REVIEW_FILE)
            summary = apply(
                library.storage,
                ref.prefix,
                lambda name, data, kind: library.write(ref, name, data, kind),
            )
            if library.read_bytes(ref, decisions.REVIEW_FILE) == before:
                break
    return summary


def decide(
    library: Library,
    ref: DocRef,
    doc: dict[str, Any],
    number: int,
    verdict: str,
    note: str = "",
    *,
    reviewer: str = "",
    reason: str = "",
    text: str | None = None,
    cells: dict[int, list[list[str]]] | None = None,
    revision: int | None = None,
    text_sha256: str | None = None,
    broker: str | None = None,
) -> Decision:
    """Record a decision on one page (approve, possibly corrected; reject with a reason; flag),
    regenerate the reviewed artifacts, and count it on the fleet's broker (`pagefleet.workers.review.decision_metrics`).
    `revision`/`text_sha256`: what the reviewer's view showed."""
    page = _page(doc, number)
    edits = correction(page, load(library, ref), text, cells) if verdict == "approve" else None
    if verdict == "approve" and edits is None and not base_text(page).strip():
        raise ReviewError(f"page {number} has no text to approve: type its text, or reject it")
    made = decisions.new_decision(
        page,
        verdict,
        reviewer=reviewer,
        note=note,
        reason=reason,
        edits=edits,
        text_sha256=text_sha256,
    )
    library.check_writable(ref, decisions.REVIEW_FILE)
    saved = store.update(
        library.storage, ref.prefix, lambda review: decisions.record(review, doc, made, revision)
    )
    summary = regenerate(library, ref)
    made = saved.pages[str(number)]
    queued = decision_metrics.written_at(library.storage, ref.key("document.json"))
    decision_metrics.record(
        decision_metrics.broker_url(broker), made, queued, doc.get("job_id"), summary
    )
    return made


def export(ref: DocRef, doc: dict[str, Any], review: ReviewFile) -> dict[str, Any]:
    """One JSON per document: every page's route, the gate's reasons and the reviewer's decision."""
    pages = []
    for page in doc.get("pages", []):
        made = review.pages.get(str(page["number"]))
        pages.append(
            {
                "page": page["number"],
                "route": page.get("route"),
                "refused": decisions.is_refused(page),
                "reasons": (page.get("quality") or {}).get("reasons", []),
                "warnings": (page.get("quality") or {}).get("warnings", []),
                "decision": made.decision if made else None,
                "note": made.note if made else "",
                "reviewer": made.reviewer if made else None,
                "reason": made.reason if made else "",
                "corrected": made.corrected if made else False,
                "stale": decisions.is_stale(page, made),
                "decided_at": made.at if made else None,
            }
        )
    return {
        "schema_version": 2,
        "document": ref.id,
        "source": doc.get("source"),
        "job_id": doc.get("job_id"),
        "status": doc.get("status"),
        "page_count": doc.get("page_count"),
        "pages": pages,
        "released": review.released.model_dump(mode="json") if review.released else None,
    }


def release(library: Library, ref: DocRef, doc: dict[str, Any]) -> Released:
    """Regenerate the reviewed artifacts and record which refused pages they let through."""
    summary = regenerate(library, ref) or {}
    refused = {int(p["number"]) for p in doc.get("pages", []) if decisions.is_refused(p)}
    pages = [n for n in summary.get("approved_pages", []) if n in refused]
    if not pages:
        raise ReviewError("nothing to release: approve a refused page first")
    released = Released(at=decisions.now(), file=REVIEWED_MD, pages=pages)

    def mark(review: ReviewFile) -> ReviewFile:
        return review.model_copy(update={"released": released})

    library.check_writable(ref, decisions.REVIEW_FILE)
    store.update(library.storage, ref.prefix, mark)
    return released
