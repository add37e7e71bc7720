"""Rung 1: decide one page from its text layer, inside the split task (never a task per page).

    extracted page ──gate──► ok ─────────────────────────► accepted (text_layer[_repaired])
                      │
                      ├─► only visual_order_rtl ─► reverse flagged lines ─gate─► ok ─► accepted
                      │                                                      └─► climbs
                      ├─► nothing drawn at all ───────────────────────────────► blank page, accepted
                      └─► anything else ──────────────────────────────────────► climbs (PendingPage)

A text layer that failed for garbage reasons never gives the OCR router a script hint: garbage
decides nothing. Only a layer that passed (or failed only by repairable order) does.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from routing.quality import GateInput, assess
from routing.scripts import classify_text_layer, direction_of
from workers.model import PageRecord, PendingPage, Quality, RouterInfo
from workers.ladder.accept import Candidate, CandidateRefused, accepted_record, repair

ENGINE = "pymupdf"


def layer_summary(page: dict[str, Any]) -> dict[str, Any]:
    text = page.get("text", "")
    kind = "text"
    readable = sum(1 for c in text if c.isalnum())
    if readable == 0:
        kind = "image_only" if (page.get("images") or page.get("drawings")) else "blank"
    elif page.get("image_coverage", 0) >= 0.5:
        kind = "text_over_image"
    summary = {
        "kind": kind,
        "chars": len(text),
        "glyphs": page.get("glyphs", 0),
        "images": page.get("images", 0),
        "image_coverage": page.get("image_coverage", 0.0),
        "drawings": page.get("drawings", 0),
    }
    if page.get("error"):
        summary["error"] = page["error"]
    return summary


def decide_page(page: dict[str, Any], *, ocr: str, gpu: bool) -> PageRecord | PendingPage:
    started = time.monotonic()
    number = int(page["number"])
    text = page.get("text", "")
    layer = layer_summary(page)
    gate_layer = {k: page.get(k) for k in ("line_geometry", "image_coverage", "shared_position_runs")}
    verdict = assess(GateInput(text=text, origin="text_layer", layer=gate_layer))
    decision = classify_text_layer(text)
    queue = "gpu" if gpu else "cpu"

    if layer["kind"] == "blank" and not page.get("error"):
        return _blank_page(number, layer)

    trustworthy = verdict.ok or verdict.repairable
    candidate = Candidate(ENGINE, "text_layer", text, verdict, seconds=time.monotonic() - started)
    router = RouterInfo(source="text_layer", script=decision.observed(), margin=decision.margin)

    refused: list[str] = []
    try:
        if verdict.repairable and ocr != "force":
            fixed = repair(text, verdict, from_ocr=False)
            again = assess(GateInput(text=fixed.text, origin="text_layer", layer={"image_coverage": page.get("image_coverage")}))
            if fixed.replay_ok and again.ok:
                accepted = replace(candidate, verdict=replace(verdict, ok=True, reasons=[]))
                return accepted_record(
                    number, accepted, router, [accepted.attempt(True)], route="text_layer_repaired",
                    layer=layer, extra_warnings=["visual_order_repaired"], fixed=fixed,
                )
        elif verdict.ok and ocr != "force":
            return accepted_record(number, candidate, router, [candidate.attempt(True)], route="text_layer", layer=layer)
    except CandidateRefused as exc:
        refused, trustworthy = exc.reasons, False

    return PendingPage(
        number=number,
        text_layer=text,
        reasons=refused or verdict.reasons or (["ocr_forced"] if ocr == "force" else []),
        warnings=verdict.warnings,
        layer={**layer, "gate_metrics": verdict.metrics, "seconds": round(time.monotonic() - started, 4)},
        hint_script=decision.script if trustworthy else None,
        hint_margin=decision.margin if trustworthy else None,
        queue=queue,
    )


def _blank_page(number: int, layer: dict[str, Any]) -> PageRecord:
    return PageRecord(
        number=number,
        script="unknown",
        direction=direction_of("unknown"),
        router=RouterInfo(source="text_layer", script="unknown"),
        route="text_layer",
        engine=ENGINE,
        quality=Quality(ok=True, warnings=["blank_page"]),
        layer=layer,
    )
