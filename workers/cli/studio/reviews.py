"""Reviewer decisions: `review.json` beside the artifacts, its export, and `document.reviewed.md`.

    review.json  {schema_version: 1, document: {job_id, sha256, filename},
                  pages: {"<n>": {page, decision: approve|flag, note, at, route, reasons}},
                  history: [every decision in order], released: {at, file, pages} | null}

`document.json` is never rewritten. Releasing writes `document.reviewed.md`: `document.md` with
every approved refused page's quarantined preview let through, each under a comment recording the
decision (who decided is the reviewer; what the gate said; the note). Refused pages that were not
approved stay review markers, as in `document.md`.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from typing import Any, Literal

from pydantic import BaseModel, Field

from workers.store.artifacts import review_marker, rtl_wrapped
from workers.cli.studio.library import DocRef, Library
from workers.cli.studio.risk import is_refused
from workers.errors import PagefleetError
from workers.model import PageRecord, ReviewPreview

REVIEW_FILE = "review.json"
REVIEWED_MD = "document.reviewed.md"
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


class ReviewError(PagefleetError):
    """A decision or release the studio cannot make (answered 409/400, never a traceback)."""

    code = "review_error"


class Decision(BaseModel):
    page: int = Field(ge=1)
    decision: Literal["approve", "flag"]
    note: str = Field("", max_length=4000)
    at: str
    route: str = ""
    reasons: list[str] = []


class Released(BaseModel):
    at: str
    file: str = REVIEWED_MD
    pages: list[int] = []


class ReviewFile(BaseModel):
    schema_version: Literal[1] = 1
    document: dict[str, Any] = {}
    pages: dict[str, Decision] = {}
    history: list[Decision] = []
    released: Released | None = None


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _lock(ref: DocRef) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(ref.id, threading.Lock())


def load(library: Library, ref: DocRef) -> ReviewFile:
    raw = library.read_json(ref, REVIEW_FILE)
    return ReviewFile.model_validate(raw) if raw else ReviewFile()


def _save(library: Library, ref: DocRef, review: ReviewFile) -> None:
    data = json.dumps(review.model_dump(mode="json"), ensure_ascii=False, indent=1).encode("utf-8")
    library.write(ref, REVIEW_FILE, data, "application/json")


def _page(doc: dict[str, Any], number: int) -> dict[str, Any]:
    page = next((p for p in doc.get("pages", []) if int(p["number"]) == number), None)
    if page is None:
        raise ReviewError(f"the document has no page {number}")
    return page


def decide(library: Library, ref: DocRef, doc: dict[str, Any], number: int, decision: str, note: str) -> Decision:
    """Record approve/flag (+ note) for one page; the latest decision per page wins, history keeps all."""
    page = _page(doc, number)
    made = Decision(page=number, decision=decision, note=note.strip(), at=_now(),  # type: ignore[arg-type]
                    route=str(page.get("route", "")), reasons=list((page.get("quality") or {}).get("reasons", [])))
    with _lock(ref):
        review = load(library, ref)
        source = doc.get("source") or {}
        review.document = {"job_id": doc.get("job_id"), "sha256": source.get("sha256"),
                           "filename": source.get("filename")}
        review.pages[str(number)] = made
        review.history.append(made)
        _save(library, ref, review)
    return made


def export(ref: DocRef, doc: dict[str, Any], review: ReviewFile) -> dict[str, Any]:
    """One JSON per document: every page's route, the gate's reasons and the reviewer's decision."""
    pages = []
    for page in doc.get("pages", []):
        made = review.pages.get(str(page["number"]))
        pages.append({"page": page["number"], "route": page.get("route"), "refused": is_refused(page),
                      "reasons": (page.get("quality") or {}).get("reasons", []),
                      "warnings": (page.get("quality") or {}).get("warnings", []),
                      "decision": made.decision if made else None, "note": made.note if made else "",
                      "decided_at": made.at if made else None})
    return {"schema_version": 1, "document": ref.id, "source": doc.get("source"), "job_id": doc.get("job_id"),
            "status": doc.get("status"), "page_count": doc.get("page_count"), "pages": pages,
            "released": review.released.model_dump(mode="json") if review.released else None}


def _comment_safe(text: str) -> str:
    return json.dumps(text, ensure_ascii=False).replace("--", "- -")


def _released_page(page: PageRecord, preview: ReviewPreview, made: Decision) -> str:
    reasons = ",".join(page.quality.reasons) or "unknown"
    header = (f"<!-- pagefleet review: page {page.number} was {page.route} (reasons={reasons}); "
              f"approved by a reviewer at {made.at}; note={_comment_safe(made.note)}; "
              f"text released from the quarantined preview (engine {_comment_safe(preview.engine)}) -->")
    direction = page.direction if page.direction in ("rtl", "ltr") else "unknown"
    return header + "\n\n" + rtl_wrapped(preview.markdown, direction)


def reviewed_markdown(doc: dict[str, Any], review: ReviewFile) -> tuple[str, list[int]]:
    parts: list[str] = []
    released: list[int] = []
    for raw in doc.get("pages", []):
        page = PageRecord.model_validate({k: v for k, v in raw.items() if k in PageRecord.model_fields})
        made = review.pages.get(str(page.number))
        parts.append(f"<!-- page {page.number} -->")
        if not is_refused(raw):
            parts.append(rtl_wrapped(page.markdown, page.direction))
        elif made and made.decision == "approve" and page.review_preview is not None:
            parts.append(_released_page(page, page.review_preview, made))
            released.append(page.number)
        else:
            parts.append(review_marker(page))
    return "\n\n".join(p for p in parts if p) + "\n", released


def release(library: Library, ref: DocRef, doc: dict[str, Any]) -> Released:
    """Write document.reviewed.md; at least one approved refused page with a preview is required."""
    with _lock(ref):
        review = load(library, ref)
        text, pages = reviewed_markdown(doc, review)
        if not pages:
            raise ReviewError("nothing to release: approve a refused page that has a quarantined preview first")
        library.write(ref, REVIEWED_MD, text.encode("utf-8"), "text/markdown; charset=utf-8")
        review.released = Released(at=_now(), pages=pages)
        _save(library, ref, review)
    return review.released
