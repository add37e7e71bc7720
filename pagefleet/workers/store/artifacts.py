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
from operator import itemgetter
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
    if _replays(record.raw_text, record.edits, target):
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


_EDIT = itemgetter("start", "end", "replacement", "kind", "out_start", "out_end")


def _replays(raw: str, edits: list[dict[str, Any]], display: str) -> bool:
    """True where `verify_edits` would find that the map, as JSON, replays to `display`, in one
    pass over the dicts (no `Edit` built: ~0.04 ms a page less from the sources); False where it
    would not, or where anything is unusual (a key, a type): `verify_edits` then decides and says
    why."""
    if type(raw) is not str or type(display) is not str:
        return False
    parts: list[str] = []
    pos = out = 0
    for edit in edits:
        if type(edit) is not dict or len(edit) != 6:
            return False
        try:
            start, end, new, kind, out_start, out_end = _EDIT(edit)
        except KeyError:
            return False
        if not (type(start) is type(end) is type(out_start) is type(out_end) is int):
            return False
        if type(new) is not str or type(kind) is not str:
            return False
        # in bounds, in order and not overlapping the previous edit (which ended at `pos`)
        if start < pos or end < start or end > len(raw):
            return False
        out += start - pos
        if out_start != out or out_end != out + len(new):
            return False
        parts += (raw[pos:start], new)
        out, pos = out_end, end
    parts.append(raw[pos:])
    return "".join(parts) == display


def review_marker(record: PageRecord) -> str:
    reasons = ",".join(record.quality.reasons) or "unknown"
    return (
        f"<!-- pagefleet: page {record.number} {record.route}; reasons={reasons}; text withheld -->"
    )


_RTL = ('<div dir="rtl">\n\n', "\n\n</div>")


def rtl_wrapped(body: str, direction: str) -> str:
    """A page's Markdown; an RTL page's inside `<div dir="rtl">` so a renderer keeps its direction."""
    return f"{_RTL[0]}{body}{_RTL[1]}" if direction == "rtl" and body else body


def markdown_parts(page: PageRecord) -> list[str]:
    """A page's parts of document.md (joined by blank lines): its marker, then its Markdown, or a
    refused page's review marker."""
    body = (
        rtl_wrapped(page.markdown, page.direction)
        if page.route in ACCEPTED_ROUTES
        else review_marker(page)
    )
    return [part for part in (f"<!-- page {page.number} -->", body) if part]


_RTL_UTF8 = tuple(part.encode() for part in _RTL)


def markdown_utf8(page: PageRecord) -> bytes:
    """`markdown_parts(page)` joined by a blank line, in UTF-8, the page's own Markdown encoded
    alone: a string pydantic has serialized (`Assembly.add`) keeps its UTF-8, so that is a copy,
    not a second encoding."""
    marker = f"<!-- page {page.number} -->".encode()
    if page.route not in ACCEPTED_ROUTES:
        return b"\n\n".join((marker, review_marker(page).encode("utf-8")))
    if not page.markdown:
        return marker
    body = page.markdown.encode("utf-8")
    if page.direction == "rtl":
        return b"".join((marker, b"\n\n", _RTL_UTF8[0], body, _RTL_UTF8[1]))
    return b"\n\n".join((marker, body))


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
