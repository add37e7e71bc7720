"""`review.json`: reviewer decisions per page, beside a document's artifacts (never in document.json).

    review.json  {schema_version: 2, document: {job_id, sha256, filename},
                  pages: {"<n>": Decision}, history: [every decision in order], released: ... | null}
    Decision     {page, decision: approve|reject|flag, reviewer, at, note, reason, text_sha256,
                  revision, route, reasons, edits | null}

- approve: the page's text is let through (as it is, or as corrected: `edits` is then the page's
  whole edit map on `raw_text`, its own edits composed with the reviewer's, kind `review`);
- reject: the page is withheld for good (`reason` says why);
- flag: a second look is wanted; the page stays pending.

`text_sha256` is the hash of the page text the decision was made on (`page_hash`: `raw_text` and
the text shown, the accepted text or the quarantined preview). A decision whose hash is not the
page's current one (the document was parsed again) is *stale*: shown as such, never applied.
`revision` counts the decisions made on a page: a reviewer's form carries the revision it was shown,
and a decision made on an older one is refused (`ReviewConflict`), so no decision is overwritten
unseen. Schema 1 files (approve/flag, no reviewer or hash) are read; their decisions are stale.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, Field

from pagefleet.workers.errors import PagefleetError

REVIEW_FILE = "review.json"
REFUSED_ROUTES = ("review_required", "failed")
Verdict = Literal["approve", "reject", "flag"]
VERDICTS: tuple[str, ...] = ("approve", "reject", "flag")


class ReviewError(PagefleetError):
    """A decision that cannot be made as asked (answered 409, never a traceback)."""

    code = "review_error"


class ReviewConflict(ReviewError):
    """Someone else decided the page (or the page changed) since the reviewer's view was made."""

    code = "review_conflict"


class Decision(BaseModel):
    page: int = Field(ge=1)
    decision: Verdict
    reviewer: str = Field("", max_length=200)
    at: str
    note: str = Field("", max_length=4000)
    reason: str = Field("", max_length=1000)
    text_sha256: str = ""
    revision: int = 0
    route: str = ""
    reasons: list[str] = []
    edits: list[dict[str, Any]] | None = None

    @property
    def corrected(self) -> bool:
        return self.edits is not None


class Released(BaseModel):
    at: str
    file: str = "document.reviewed.md"
    pages: list[int] = []


class ReviewFile(BaseModel):
    schema_version: Literal[1, 2] = 2
    document: dict[str, Any] = {}
    pages: dict[str, Decision] = {}
    history: list[Decision] = []
    released: Released | None = None


def now() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def parse(raw: Any) -> ReviewFile:
    """A stored review.json (schema 1 or 2) as a ReviewFile; nothing stored is an empty one."""
    if not raw:
        return ReviewFile()
    review = ReviewFile.model_validate(raw)
    return review.model_copy(update={"schema_version": 2})


def dump(review: ReviewFile) -> bytes:
    return json.dumps(review.model_dump(mode="json"), ensure_ascii=False, indent=1).encode("utf-8")


def is_refused(page: dict[str, Any]) -> bool:
    return bool(page.get("needs_review")) or page.get("route") in REFUSED_ROUTES


def base_text(page: dict[str, Any]) -> str:
    """The text a reviewer sees and corrects: an accepted page's text, a refused page's quarantined
    preview (its edit map replays `raw_text` to it), or nothing."""
    if not is_refused(page):
        return str(page.get("text") or "")
    preview = page.get("review_preview") or {}
    return str(preview.get("text") or "")


def base_edits(page: dict[str, Any]) -> list[dict[str, Any]]:
    """The page's own edit map onto `base_text` (a refused page without a preview has none)."""
    if is_refused(page) and not page.get("review_preview"):
        return []
    return list(page.get("edits") or [])


def page_hash(page: dict[str, Any]) -> str:
    """sha256 of the page's `raw_text` and of the text shown to the reviewer."""
    body = json.dumps([str(page.get("raw_text") or ""), base_text(page)], ensure_ascii=False)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def is_stale(page: dict[str, Any], made: Decision | None) -> bool:
    return made is not None and made.text_sha256 != page_hash(page)


def effective(page: dict[str, Any], review: ReviewFile) -> Decision | None:
    """The page's decision if it still applies (made on the page's current text), else None."""
    made = review.pages.get(str(page["number"]))
    return None if made is None or is_stale(page, made) else made


def record(
    review: ReviewFile, doc: dict[str, Any], made: Decision, expected_revision: int | None
) -> ReviewFile:
    """`review` with `made` recorded for its page (the latest decision per page wins, history keeps
    every one). `expected_revision`: the page's revision the reviewer saw (None: not checked); a
    different current revision is a ReviewConflict naming who decided meanwhile."""
    current = review.pages.get(str(made.page))
    revision = current.revision if current else 0
    if expected_revision is not None and expected_revision != revision:
        who = (
            f"{current.reviewer or 'another reviewer'} ({current.decision}, {current.at})"
            if current
            else "nobody"
        )
        raise ReviewConflict(
            f"page {made.page} was decided meanwhile by {who}: reload the page to see that "
            f"decision; yours ({made.decision}) was not saved"
        )
    made = made.model_copy(update={"revision": revision + 1})
    source = doc.get("source") or {}
    return review.model_copy(
        update={
            "schema_version": 2,
            "document": {
                "job_id": doc.get("job_id"),
                "sha256": source.get("sha256"),
                "filename": source.get("filename"),
            },
            "pages": {**review.pages, str(made.page): made},
            "history": [*review.history, made],
        }
    )


def new_decision(
    page: dict[str, Any],
    verdict: str,
    *,
    reviewer: str,
    note: str = "",
    reason: str = "",
    edits: list[dict[str, Any]] | None = None,
    text_sha256: str | None = None,
) -> Decision:
    """A decision on `page`, made on the text whose hash the reviewer's form carried (`text_sha256`;
    None: the page's current text). A hash that is not the page's current one is a ReviewConflict."""
    if verdict not in VERDICTS:
        raise ReviewError(f"decision must be one of {', '.join(VERDICTS)}")
    if verdict == "reject" and not reason.strip():
        raise ReviewError("a rejection needs a reason (a cover image, a blank form, unreadable …)")
    current = page_hash(page)
    if text_sha256 is not None and text_sha256 != current:
        raise ReviewConflict(
            f"page {page['number']} was parsed again since it was shown: reload it and decide "
            "on its current text"
        )
    return Decision(
        page=int(page["number"]),
        decision=verdict,
        reviewer=reviewer.strip()[:200],
        at=now(),  # type: ignore[arg-type]
        note=note.strip(),
        reason=reason.strip() if verdict == "reject" else "",
        text_sha256=current,
        route=str(page.get("route", "")),
        reasons=list((page.get("quality") or {}).get("reasons", [])),
        edits=edits if verdict == "approve" else None,
    )
