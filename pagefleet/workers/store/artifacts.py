"""The four artifacts of a document, and the checks made before they are written.

- `document.json`: the canonical model; the only place a refused page's `review_preview` lives.
- `document.md`: accepted pages' Markdown; a refused page is only a review marker comment.
- `text.txt`: accepted pages' text separated by `\\f`; a refused page is only a marker line.
- `report.json`: status, per-route/router/rung/engine telemetry, engine health, review reasons.
- `chunks.jsonl`: heading-aware chunks of accepted pages with citations that replay (pagefleet.workers.collect.chunks).

Every page's edit map is replayed here (`verify_edits`); a map that does not replay fails the page.
The collector writes them page by page (`pagefleet.workers.collect.assembly`): the functions here take one page.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from pagefleet.routing.edits import Edit, verify_edits
from pagefleet.workers.model import DocumentRecord, EditMapInfo, PageRecord, Quality

TEXT_LAYER_ROUTES = (
    "text_layer",
    "text_layer_repaired",
    "fallback_text",
)  # the text came from the PDF's layer
# reviewed: approved in review (pagefleet.workers.review); no_text: a picture or blank page, accepted empty
ACCEPTED_ROUTES = (*TEXT_LAYER_ROUTES, "ocr", "no_text", "reviewed")
RUNG_OF = {
    "text_layer": "1_text_layer",
    "fallback_text": "2_fallback_text",
    "ocr": "3_cpu_ocr",
    "gpu_ocr": "4_gpu_ocr",
}


def verified(record: PageRecord) -> PageRecord:
    """Replay the page's edit map against its display target; a failure is a failed page."""
    target = (
        record.text
        if record.route in ACCEPTED_ROUTES
        else (record.review_preview.text if record.review_preview else "")
    )
    if record.route == "failed" or (not record.raw_text and not record.edits):
        return record
    check = verify_edits(record.raw_text, [Edit.from_dict(e) for e in record.edits], target)
    if check.ok:
        return record
    return record.model_copy(
        update={
            "route": "failed",
            "text": "",
            "markdown": "",
            "needs_review": True,
            "edit_map": EditMapInfo(target="text", complete=False, gap="replay_failed"),
            "quality": Quality(
                ok=False,
                reasons=["edit_map_replay_failed"],
                warnings=record.quality.warnings,
                metrics={"first_mismatch_at": float(check.first_mismatch_at or -1)},
            ),
        }
    )


def review_marker(record: PageRecord) -> str:
    reasons = ",".join(record.quality.reasons) or "unknown"
    return (
        f"<!-- pagefleet: page {record.number} {record.route}; reasons={reasons}; text withheld -->"
    )


_RTL = ('<div dir="rtl">\n\n', "\n\n</div>")


def _rtl_pieces(body: str, direction: str) -> tuple[str, ...]:
    return (_RTL[0], body, _RTL[1]) if direction == "rtl" and body else (body,)


def rtl_wrapped(body: str, direction: str) -> str:
    """A page's Markdown; an RTL page's inside `<div dir="rtl">` so a renderer keeps its direction."""
    return "".join(_rtl_pieces(body, direction))


def _body_pieces(page: PageRecord) -> tuple[str, ...]:
    """A page's part of document.md after its marker, in pieces: its Markdown (an RTL page's
    wrapped), or a refused page's review marker."""
    if page.route in ACCEPTED_ROUTES:
        return _rtl_pieces(page.markdown, page.direction)
    return (review_marker(page),)


def markdown_parts(page: PageRecord) -> list[str]:
    """A page's parts of document.md (joined by blank lines): its marker, then its Markdown, or a
    refused page's review marker."""
    body = "".join(_body_pieces(page))
    return [part for part in (f"<!-- page {page.number} -->", body) if part]


def markdown_utf8(page: PageRecord) -> bytes:
    """`markdown_parts(page)` joined by a blank line, in UTF-8, each piece encoded alone: the
    page's Markdown, a string pydantic has serialized (`Assembly.add`), keeps its UTF-8, so that
    is a copy, not a second encoding."""
    marker = f"<!-- page {page.number} -->".encode()
    body = [piece.encode("utf-8") for piece in _body_pieces(page) if piece]
    return b"".join((marker, b"\n\n", *body)) if body else marker


def markdown(document: DocumentRecord) -> str:
    return "\n\n".join(part for page in document.pages for part in markdown_parts(page)) + "\n"


def page_text(page: PageRecord) -> str:
    """A page's part of text.txt (parts joined by form feeds)."""
    if page.route in ACCEPTED_ROUTES:
        return page.text
    return f"[pagefleet: page {page.number} needs review; text withheld]\n"


def final_rung(page: PageRecord) -> str:
    """The ladder rung that decided the page (5 = review: no rung got through)."""
    if page.route in ("text_layer", "text_layer_repaired"):
        return "1_text_layer"
    if page.route == "fallback_text":
        return "2_fallback_text"
    if page.route == "ocr":
        accepted = next((a for a in page.attempts if a.accepted), None)
        return RUNG_OF.get(accepted.rung, "3_cpu_ocr") if accepted else "3_cpu_ocr"
    return "5_review"


class Tally:
    """What report.json and the status count over a document's pages, page by page (the collector
    streams them: `pagefleet.workers.collect.assembly`)."""

    def __init__(self) -> None:
        self.routes: Counter[str] = Counter()
        self.sources: Counter[str] = Counter()
        self.engines: Counter[str] = Counter()
        self.final: Counter[str] = Counter()
        self.rung_pages: Counter[str] = Counter()
        self.rung_seconds: defaultdict[str, float] = defaultdict(float)
        self.health: dict[str, dict[str, Any]] = {}
        self.review_reasons: dict[str, list[str]] = {}
        self.warnings: Counter[str] = Counter()
        self.blocks: Counter[str] = Counter()
        self.tables: list[int] = []
        self.unrecovered: list[int] = []
        self.suspected: list[int] = []

    def add(self, p: PageRecord) -> None:
        accepted = p.route in ACCEPTED_ROUTES
        self.routes[p.route] += 1
        self.sources[p.router.source] += 1
        if p.engine:
            self.engines[p.engine] += 1
        self.final[final_rung(p)] += 1
        for a in p.attempts:
            self._attempt(a)
        if not accepted:
            self.review_reasons[str(p.number)] = p.quality.reasons
        self.warnings.update(p.quality.warnings)
        if "table_unrecovered" in p.quality.reasons:
            self.unrecovered.append(p.number)
        if accepted:
            self.blocks.update(b.type for b in p.blocks)
            if any(b.type == "table" for b in p.blocks):
                self.tables.append(p.number)
            if "table_suspected" in p.quality.warnings:
                self.suspected.append(p.number)

    def _attempt(self, a: Any) -> None:
        rung = RUNG_OF.get(a.rung, a.rung)
        self.rung_pages[rung] += 1
        self.rung_seconds[rung] += a.seconds
        entry = self.health.setdefault(
            a.engine, {"tried": 0, "accepted": 0, "unavailable": 0, "errors": 0, "detail": None}
        )
        entry["tried"] += 1
        entry["accepted"] += int(a.accepted)
        if "engine_unavailable" in a.reasons:
            entry["unavailable"] += 1
            entry["detail"] = a.detail
        elif {"engine_crashed", "engine_timeout"} & set(a.reasons):
            entry["errors"] += 1
            entry["detail"] = a.detail

    def status(self) -> str:
        pages = sum(self.routes.values())
        accepted = sum(self.routes[r] for r in ACCEPTED_ROUTES)
        if accepted == pages:
            return "accepted"
        if not accepted and self.routes["failed"] == pages:
            return "failed"
        return "needs_review"

    def report(self, document: DocumentRecord, manifest: dict[str, Any]) -> dict[str, Any]:
        """report.json of `document` (its pages are not read: they were added)."""
        n = max(sum(self.routes.values()), 1)
        rung_seconds = defaultdict(float, self.rung_seconds)
        rung_seconds["1_text_layer"] = max(
            rung_seconds["1_text_layer"], float(manifest.get("split_seconds", 0.0))
        )
        return {
            "job_id": document.job_id,
            "pipeline_version": document.pipeline_version,
            "source": document.source.model_dump(mode="json"),
            "status": document.status,
            "page_count": document.page_count,
            "routes": dict(self.routes),
            "share": {
                "route": {k: round(v / n, 4) for k, v in self.routes.items()},
                "router_source": {k: round(v / n, 4) for k, v in self.sources.items()},
                "engine": {k: round(v / n, 4) for k, v in self.engines.items()},
                "rung": {k: round(v / n, 4) for k, v in sorted(self.final.items())},
            },
            "rungs": {
                k: {"attempts": self.rung_pages[k], "seconds": round(rung_seconds[k], 3)}
                for k in sorted(set(self.rung_pages) | set(rung_seconds))
            },
            "engine_health": self.health,
            "needs_review": [int(k) for k in self.review_reasons],
            "review_reasons": self.review_reasons,
            "warnings": dict(self.warnings),
            "structure": {
                "blocks": dict(self.blocks),
                "pages_with_tables": self.tables,
                "table_unrecovered": self.unrecovered,
                "table_suspected": self.suspected,
            },
        }
