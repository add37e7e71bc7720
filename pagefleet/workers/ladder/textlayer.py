"""Rung 1: decide one page from its text layer, inside the split task (never a task per page).

    extracted page ──gate──► ok ─────────────────────────► accepted (text_layer[_repaired])
                      │
                      ├─► only visual_order_rtl ─► reverse flagged lines ─gate─► ok ─► accepted
                      │                                                      └─► climbs
                      ├─► nothing drawn at all ───────────────────────────────► blank page, accepted
                      │     └─ in a file MuPDF had to repair ─────────────────► refused (source_damaged)
                      └─► anything else ──────────────────────────────────────► climbs (PendingPage)

A text layer that failed for garbage reasons never gives the OCR router a script hint: garbage
decides nothing. Only a layer that passed (or failed only by repairable order) does.
"""

from __future__ import annotations

import re
import time
from typing import Any

from pagefleet.routing.evidence import GlyphFacts
from pagefleet.routing.quality import GateInput, assess
from pagefleet.routing.scripts import classify_text_layer, direction_of
from pagefleet.workers.ladder.accept import (
    LAYER_ENGINE,
    Candidate,
    PageContext,
    consider,
    damaged_record,
)
from pagefleet.workers.model import PageRecord, PendingPage, Quality, RouterInfo, Rung


_ALNUM = re.compile(r"[^\W_]")


def layer_summary(page: dict[str, Any]) -> dict[str, Any]:
    text = page.get("text", "")
    kind = "text"
    if not _ALNUM.search(text):  # no str.isalnum() character (\w without the underscore)
        kind = "image_only" if (page.get("images") or page.get("drawings")) else "blank"
        # glyphs that map to nothing readable (controls, Private Use, U+FFFD) are not a blank page:
        # the page goes to the gate and climbs with its reasons (issue 9)
        if kind == "blank" and (page.get("glyphs", 0) or any(not c.isspace() for c in text)):
            kind = "unreadable_glyphs"
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
    if page.get("repaired"):
        summary["repaired"] = True
    return summary


def gate_input(page: dict[str, Any]) -> GateInput:
    """What the gate reads of an extracted page: its text and the glyph evidence the sandbox child found."""
    return GateInput(
        text=page.get("text", ""), origin="text_layer", glyphs=GlyphFacts.from_layer(page)
    )


def decide_page(page: dict[str, Any], *, ocr: str, gpu: bool) -> PageRecord | PendingPage:
    started = time.monotonic()
    number = int(page["number"])
    text = page.get("text", "")
    layer = layer_summary(page)
    if layer["kind"] == "blank" and page.get("repaired"):
        return damaged_record(number, RouterInfo(source="text_layer", script="unknown"), [], layer)
    if layer["kind"] == "blank" and not page.get("error"):
        return _blank_page(number, layer)
    verdict = assess(gate_input(page))
    decision = classify_text_layer(text)
    candidate = Candidate(
        LAYER_ENGINE, Rung.TEXT_LAYER, text, verdict, seconds=time.monotonic() - started
    )
    if ocr != "force" and (verdict.ok or verdict.repairable):
        router = RouterInfo(source="text_layer", script=decision.observed(), margin=decision.margin)
        record = consider(candidate, [], PageContext(number, router, layer), route="text_layer")
        if record is not None:
            return record
    trustworthy = (verdict.ok or verdict.repairable) and not candidate.unrepaired
    return PendingPage(
        number=number,
        text_layer=text,
        reasons=candidate.unrepaired
        or verdict.reasons
        or (["ocr_forced"] if ocr == "force" else []),
        warnings=verdict.warnings,
        layer={
            **layer,
            "gate_metrics": verdict.metrics,
            "seconds": round(time.monotonic() - started, 4),
        },
        hint_script=decision.script if trustworthy else None,
        hint_margin=decision.margin if trustworthy else None,
        queue="gpu" if gpu else "cpu",
    )


def _blank_page(number: int, layer: dict[str, Any]) -> PageRecord:
    return PageRecord(
        number=number,
        script="unknown",
        direction=direction_of("unknown"),
        router=RouterInfo(source="text_layer", script="unknown"),
        route="text_layer",
        engine=LAYER_ENGINE,
        quality=Quality(ok=True, warnings=["blank_page"]),
        layer=layer,
    )
