"""The one place a page is accepted or refused, for every rung, and the page records it builds.

    candidate ─gate ok─────────────────────► repair ─canonical?─► accepted_record (route)
              ─repairable order (rung 1)──► repair ─gate again ok─┘      └─ no ─► refused (unrepaired_*)
              ─anything else─────────────► refused attempt; the caller climbs or quarantines

`consider` serves rung 1 (the split task) and rungs 2–4 (the OCR stage) alike. Repair happens only
after acceptance (or inside a quarantined preview): `repair` runs the normalizer, which records
every change as an edit against the candidate's raw text, and checks that the map replays before
anything is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from pagefleet.routing.edits import verify_edits
from pagefleet.routing.normalize import normalize
from pagefleet.routing.evidence import GlyphFacts
from pagefleet.routing.quality import GateInput, Verdict, assess, canonical_violations
from pagefleet.routing.scripts import classify_text_layer, direction_of
from pagefleet.workers.model import (
    Attempt,
    EditMapInfo,
    PageRecord,
    PendingPage,
    Quality,
    ReviewPreview,
    RouterInfo,
    Rung,
)

COSMETIC_EDITS = frozenset({"whitespace", "line_ending"})
LAYER_ENGINE = "pymupdf"


def layer_candidate(pending: PendingPage) -> Candidate:
    """A text layer the split refused, as a candidate for the review preview. The split's reasons
    stand (it saw the glyph geometry); only the metrics are recomputed from the text."""
    verdict = replace(
        assess(GateInput(text=pending.text_layer, origin="text_layer")),
        ok=False,
        reasons=list(pending.reasons),
    )
    return Candidate(
        LAYER_ENGINE,
        Rung.TEXT_LAYER,
        pending.text_layer,
        verdict,
        float(pending.layer.get("seconds", 0.0)),
    )


class CandidateRefused(Exception):
    """The repaired text of an accepted candidate still holds what canonical output must not."""

    def __init__(self, reasons: list[str]) -> None:
        super().__init__(", ".join(reasons))
        self.reasons = reasons


@dataclass
class Candidate:
    """One reading of a page: where it came from, what it says, and the gate's verdict on it."""

    engine: str
    rung: Rung
    raw: str
    verdict: Verdict
    seconds: float = 0.0
    confidence: float | None = None
    unrepaired: list[str] = field(
        default_factory=list
    )  # set when accepted text failed the invariants
    detail: str | None = None  # what the engine did beyond one reading (its attempt's `detail`)

    @property
    def from_ocr(self) -> bool:
        return self.rung in (Rung.OCR, Rung.GPU_OCR)

    def attempt(self, accepted: bool) -> Attempt:
        reasons = [] if accepted else list(self.verdict.reasons)
        return Attempt(
            engine=self.engine,
            accepted=accepted,
            reasons=reasons,
            seconds=round(self.seconds, 4),
            rung=self.rung,
            detail=self.detail,
        )

    def score(self) -> tuple[int, float]:
        """For choosing the best rejected candidate: fewer reasons, then more readable text."""
        return (-len(self.verdict.reasons), float(self.verdict.metrics.get("readable", 0)))


@dataclass
class Repaired:
    text: str
    edits: list[dict[str, Any]]
    counters: dict[str, int]
    replay_ok: bool

    @property
    def changed(self) -> bool:
        return any(e["kind"] not in COSMETIC_EDITS for e in self.edits)


def repair(raw: str, verdict: Verdict, *, from_ocr: bool) -> Repaired:
    lines = raw.split("\n")
    flags = (
        list(verdict.order.line_visual) if verdict.order and not from_ocr else [False] * len(lines)
    )
    result = normalize(
        raw,
        line_visual=flags,
        from_ocr=from_ocr,
        glyph_clusters=verdict.glyph_clusters,
        run_orders=verdict.run_orders,
        gap_repairs=verdict.gap_repairs if not from_ocr else None,
        glyph_rows=verdict.glyph_rows and not from_ocr,
        row_directions=verdict.row_directions,
    )
    edits = [e.to_dict() for e in result.edits]
    check = verify_edits(raw, result.edits, result.text)
    return Repaired(result.text, edits, dict(result.counters), check.ok)


@dataclass(frozen=True)
class PageContext:
    """What a page record needs besides the candidate: its number, how it was routed, its layer."""

    number: int
    router: RouterInfo
    layer: dict[str, Any]


def consider(
    cand: Candidate, attempts: list[Attempt], page: PageContext, *, route: str
) -> PageRecord | None:
    """Accept `cand` if the gate passed (or, on rung 1, its order was repairable and the repaired
    text passes) and its repaired text is canonical; otherwise record a refused attempt. Appends
    the attempt to `attempts` either way; returns the accepted record or None."""
    fixed, warnings = None, []
    if cand.verdict.repairable and cand.rung == Rung.TEXT_LAYER:
        fixed = repair(cand.raw, cand.verdict, from_ocr=False)
        coverage = GlyphFacts.from_layer({"image_coverage": page.layer.get("image_coverage")})
        again = assess(GateInput(text=fixed.text, origin="text_layer", glyphs=coverage))
        if fixed.replay_ok and again.ok:
            cand.verdict = replace(cand.verdict, ok=True, reasons=[])
            route, warnings = "text_layer_repaired", ["visual_order_repaired"]
    if cand.verdict.ok:
        try:
            return accepted_record(
                page.number,
                cand,
                page.router,
                [*attempts, cand.attempt(True)],
                route=route,
                layer=page.layer,
                extra_warnings=warnings,
                fixed=fixed,
            )
        except CandidateRefused as exc:
            cand.unrepaired = exc.reasons
            cand.verdict = replace(cand.verdict, ok=False, reasons=exc.reasons)
    attempts.append(cand.attempt(False))
    return None


def markdown_for(text: str) -> str:
    """Markdown for an accepted page: paragraphs from blank-line blocks, hard line breaks kept."""
    blocks = [b.strip("\n") for b in text.split("\n\n")]
    out = []
    for block in blocks:
        if not block.strip():
            continue
        lines = [_escape_line(line.rstrip()) for line in block.split("\n") if line.strip()]
        out.append("  \n".join(lines))
    return "\n\n".join(out)


def _escape_line(line: str) -> str:
    stripped = line.lstrip()
    if stripped[:1] in ("#", ">", "|", "<") or stripped[:2] in ("- ", "* ", "+ "):
        return line.replace(stripped[0], "\\" + stripped[0], 1)
    return line


def script_of(text: str) -> str:
    """The script a page's final text is in (recorded on the page; routing used its own decision)."""
    return classify_text_layer(text).observed()


def accepted_record(
    number: int,
    candidate: Candidate,
    router: RouterInfo,
    attempts: list[Attempt],
    *,
    route: str,
    layer: dict[str, Any],
    extra_warnings: list[str] | None = None,
    fixed: Repaired | None = None,
) -> PageRecord:
    """An accepted page; if its edit map does not replay, it is a failure, not a silent pass.
    Raises CandidateRefused when the repaired text still breaks the canonical invariants."""
    fixed = fixed or repair(candidate.raw, candidate.verdict, from_ocr=candidate.from_ocr)
    leftover = canonical_violations(fixed.text)
    if leftover:
        raise CandidateRefused([f"unrepaired_{r}" for r in leftover])
    warnings = list(candidate.verdict.warnings) + list(extra_warnings or [])
    script = script_of(fixed.text)
    if not fixed.replay_ok:
        return failed_record(number, router, attempts, ["edit_map_replay_failed"], layer=layer)
    if route == "text_layer" and fixed.changed:
        route = "text_layer_repaired"
    return PageRecord(
        number=number,
        script=script,
        direction=direction_of(script),
        router=router,
        route=route,  # type: ignore[arg-type]
        engine=candidate.engine,
        attempts=attempts,
        text=fixed.text,
        markdown=markdown_for(fixed.text),
        raw_text=candidate.raw,
        edits=fixed.edits,
        quality=Quality(ok=True, reasons=[], warnings=warnings, metrics=candidate.verdict.metrics),
        ocr_confidence=candidate.confidence,
        layer=layer,
    )


def review_record(
    number: int,
    best: Candidate,
    router: RouterInfo,
    attempts: list[Attempt],
    *,
    layer: dict[str, Any],
) -> PageRecord:
    """No rung got through the gate: quarantine the best rejected candidate as a preview."""
    fixed = repair(best.raw, best.verdict, from_ocr=best.from_ocr)
    preview_text = fixed.text if fixed.replay_ok else best.raw
    edits = fixed.edits if fixed.replay_ok else []
    script = script_of(preview_text)
    return PageRecord(
        number=number,
        script=script,
        direction=direction_of(script),
        router=router,
        route="review_required",
        engine=None,
        attempts=attempts,
        raw_text=best.raw,
        edits=edits,
        edit_map=EditMapInfo(target="review_preview", complete=False, gap="page_refused"),
        quality=Quality(
            ok=False,
            reasons=best.verdict.reasons,
            warnings=best.verdict.warnings,
            metrics=best.verdict.metrics,
        ),
        needs_review=True,
        review_preview=ReviewPreview(
            engine=best.engine,
            text=preview_text,
            markdown=markdown_for(preview_text),
            reasons=best.verdict.reasons,
        ),
        ocr_confidence=best.confidence,
        layer=layer,
    )


def no_text_record(
    number: int, router: RouterInfo, attempts: list[Attempt], *, layer: dict[str, Any]
) -> PageRecord:
    """A page with no text anywhere: no text layer, and every engine that read it found nothing.
    Accepted empty, with a warning that says what the page is (`picture_only` or `blank`)."""
    picture = bool(layer.get("images") or layer.get("drawings") or layer.get("image_coverage"))
    return PageRecord(
        number=number,
        script="unknown",
        direction=direction_of("unknown"),
        router=router,
        route="no_text",
        attempts=attempts,
        quality=Quality(ok=True, warnings=["picture_only" if picture else "blank"]),
        layer=layer,
    )


def failed_record(
    number: int,
    router: RouterInfo,
    attempts: list[Attempt],
    reasons: list[str],
    *,
    layer: dict[str, Any],
) -> PageRecord:
    """Nothing could read the page at all (engines crashed, render failed, attempts exhausted)."""
    return PageRecord(
        number=number,
        router=router,
        route="failed",
        attempts=attempts,
        edit_map=EditMapInfo(target="text", complete=False, gap="no_text"),
        quality=Quality(ok=False, reasons=reasons),
        needs_review=True,
        layer=layer,
    )


def damaged_record(
    number: int, router: RouterInfo, attempts: list[Attempt], layer: dict[str, Any]
) -> PageRecord:
    """A page with nothing on it from a file MuPDF had to repair (truncated, a broken xref): its
    content may be what was lost, so it is refused (`source_damaged`), never accepted as blank."""
    return failed_record(number, router, attempts, ["source_damaged"], layer=layer)
