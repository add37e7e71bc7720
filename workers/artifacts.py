"""The four artifacts of a document, and the checks made before they are written.

- `document.json`: the canonical model; the only place a refused page's `review_preview` lives.
- `document.md`: accepted pages' Markdown; a refused page is only a review marker comment.
- `text.txt`: accepted pages' text separated by `\\f`; a refused page is only a marker line.
- `report.json`: status, per-route/router/rung/engine telemetry, engine health, review reasons.
- `chunks.jsonl`: heading-aware chunks of accepted pages with citations that replay (workers.chunks).

Every page's edit map is replayed here (`verify_edits`); a map that does not replay fails the page.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from routing.edits import Edit, verify_edits
from workers.model import DocumentRecord, EditMapInfo, PageRecord, Quality
from workers.storage import Storage

TEXT_LAYER_ROUTES = ("text_layer", "text_layer_repaired", "fallback_text")  # the text came from the PDF's layer
ACCEPTED_ROUTES = (*TEXT_LAYER_ROUTES, "ocr")
RUNG_OF = {"text_layer": "1_text_layer", "fallback_text": "2_fallback_text", "ocr": "3_cpu_ocr", "gpu_ocr": "4_gpu_ocr"}


def verified(record: PageRecord) -> PageRecord:
    """Replay the page's edit map against its display target; a failure is a failed page."""
    target = record.text if record.route in ACCEPTED_ROUTES else (record.review_preview.text if record.review_preview else "")
    if record.route == "failed" or (not record.raw_text and not record.edits):
        return record
    check = verify_edits(record.raw_text, [Edit.from_dict(e) for e in record.edits], target)
    if check.ok:
        return record
    return record.model_copy(update={
        "route": "failed",
        "text": "",
        "markdown": "",
        "needs_review": True,
        "edit_map": EditMapInfo(target="text", complete=False, gap="replay_failed"),
        "quality": Quality(ok=False, reasons=["edit_map_replay_failed"], warnings=record.quality.warnings,
                           metrics={"first_mismatch_at": float(check.first_mismatch_at or -1)}),
    })


def document_status(records: list[PageRecord]) -> str:
    if all(r.route in ACCEPTED_ROUTES for r in records):
        return "accepted"
    if not any(r.route in ACCEPTED_ROUTES for r in records) and all(r.route == "failed" for r in records):
        return "failed"
    return "needs_review"


def review_marker(record: PageRecord) -> str:
    reasons = ",".join(record.quality.reasons) or "unknown"
    return f"<!-- pagefleet: page {record.number} {record.route}; reasons={reasons}; text withheld -->"


def rtl_wrapped(body: str, direction: str) -> str:
    """A page's Markdown; an RTL page's inside `<div dir="rtl">` so a renderer keeps its direction."""
    return f'<div dir="rtl">\n\n{body}\n\n</div>' if direction == "rtl" and body else body


def markdown(document: DocumentRecord) -> str:
    parts = []
    for page in document.pages:
        parts.append(f"<!-- page {page.number} -->")
        if page.route in ACCEPTED_ROUTES:
            parts.append(rtl_wrapped(page.markdown, page.direction))
        else:
            parts.append(review_marker(page))
    return "\n\n".join(p for p in parts if p) + "\n"


def plain_text(document: DocumentRecord) -> str:
    pages = []
    for page in document.pages:
        if page.route in ACCEPTED_ROUTES:
            pages.append(page.text)
        else:
            pages.append(f"[pagefleet: page {page.number} needs review; text withheld]\n")
    return "\f".join(pages)


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


def report(document: DocumentRecord, manifest: dict[str, Any]) -> dict[str, Any]:
    pages = document.pages
    n = max(len(pages), 1)
    routes = Counter(p.route for p in pages)
    sources = Counter(p.router.source for p in pages)
    engines = Counter(p.engine for p in pages if p.engine)
    rung_pages: Counter[str] = Counter()
    rung_seconds: defaultdict[str, float] = defaultdict(float)
    health: dict[str, dict[str, Any]] = {}
    for p in pages:
        for a in p.attempts:
            rung = RUNG_OF.get(a.rung, a.rung)
            rung_pages[rung] += 1
            rung_seconds[rung] += a.seconds
            entry = health.setdefault(a.engine, {"tried": 0, "accepted": 0, "unavailable": 0, "errors": 0, "detail": None})
            entry["tried"] += 1
            entry["accepted"] += int(a.accepted)
            if "engine_unavailable" in a.reasons:
                entry["unavailable"] += 1
                entry["detail"] = a.detail
            elif {"engine_crashed", "engine_timeout"} & set(a.reasons):
                entry["errors"] += 1
                entry["detail"] = a.detail
    split_s = float(manifest.get("split_seconds", 0.0))
    rung_seconds["1_text_layer"] = max(rung_seconds["1_text_layer"], split_s)
    return {
        "job_id": document.job_id,
        "pipeline_version": document.pipeline_version,
        "source": document.source.model_dump(mode="json"),
        "status": document.status,
        "page_count": document.page_count,
        "routes": dict(routes),
        "share": {
            "route": {k: round(v / n, 4) for k, v in routes.items()},
            "router_source": {k: round(v / n, 4) for k, v in sources.items()},
            "engine": {k: round(v / n, 4) for k, v in engines.items()},
            "rung": {k: round(v / n, 4) for k, v in sorted(Counter(final_rung(p) for p in pages).items())},
        },
        "rungs": {k: {"attempts": rung_pages[k], "seconds": round(rung_seconds[k], 3)}
                  for k in sorted(set(rung_pages) | set(rung_seconds))},
        "engine_health": health,
        "needs_review": [p.number for p in pages if p.route not in ACCEPTED_ROUTES],
        "review_reasons": {str(p.number): p.quality.reasons for p in pages if p.route not in ACCEPTED_ROUTES},
        "warnings": dict(Counter(w for p in pages for w in p.quality.warnings)),
        "structure": structure_summary(pages),
    }


def structure_summary(pages: list[PageRecord]) -> dict[str, Any]:
    """Blocks by type on accepted pages, the pages whose output holds a verified table, and the
    pages refused because a table could not be recovered (issue 13)."""
    accepted = [p for p in pages if p.route in ACCEPTED_ROUTES]
    return {
        "blocks": dict(Counter(b.type for p in accepted for b in p.blocks)),
        "pages_with_tables": [p.number for p in accepted if any(b.type == "table" for b in p.blocks)],
        "table_unrecovered": [p.number for p in pages if "table_unrecovered" in p.quality.reasons],
        "table_suspected": [p.number for p in accepted if "table_suspected" in p.quality.warnings],
    }


def store(storage: Storage, prefix: str, document: DocumentRecord, rep: dict[str, Any]) -> None:
    """document.json last but one, report.json last: report.json marks the job complete."""
    base = f"{prefix}/" if prefix else ""
    storage.put_text(base + "document.md", markdown(document), "text/markdown; charset=utf-8")
    storage.put_text(base + "text.txt", plain_text(document))
    from workers import chunks  # noqa: PLC0415 - chunks reads ACCEPTED_ROUTES from here

    storage.put_text(base + "chunks.jsonl", chunks.jsonl(document), "application/x-ndjson; charset=utf-8")
    # the same bytes as put_json(model_dump()), serialized by pydantic without the dict copy of every page
    storage.put_bytes(base + "document.json", document.model_dump_json(indent=1).encode("utf-8"), "application/json")
    storage.put_json(base + "report.json", rep)
