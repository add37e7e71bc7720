"""The pages of an OCR task read by their engine chains (`pagefleet.workers.ladder.ocr_stage` prepares and
routes them): one engine per chain position for every page still unresolved, each output through
the gate; a page nothing accepted ends as review_required (its best candidate quarantined), no
text, damaged or failed.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from pagefleet.routing import chains as routing_chains
from pagefleet.routing.charclass import has_rtl_letter
from pagefleet.routing.quality import GateInput, assess
from pagefleet.workers.engines.base import (
    Engine,
    EngineHealth,
    EngineOutput,
    PageImage,
    create,
    device_of,
)
from pagefleet.workers.errors import EngineError
from pagefleet.workers.fleet import deadline
from pagefleet.workers.ladder import visual
from pagefleet.workers.ladder.accept import (
    Candidate,
    PageContext,
    consider,
    damaged_record,
    failed_record,
    no_text_record,
    review_record,
)
from pagefleet.workers.ladder.ocr_structure import with_paragraph_boxes
from pagefleet.workers.model import Attempt, PageRecord, PendingPage, RouterInfo, Rung

log = logging.getLogger(__name__)
_ENGINES: dict[str, tuple[Engine, EngineHealth]] = {}
_ENGINES_LOCK = threading.Lock()  # a gpu worker's task threads ask at once


@dataclass
class PageWork:
    pending: PendingPage
    gpu: bool
    attempts: list[Attempt] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    image: PageImage | None = None
    decision: routing_chains.RouteDecision | None = None
    record: PageRecord | None = None
    reference: str | None = None
    tried: set[str] = field(default_factory=set)  # chain entries that already read this page

    @property
    def number(self) -> int:
        return self.pending.number

    def router(self) -> RouterInfo:
        if self.decision is None:
            return RouterInfo(source="default", script="unknown")
        detail = ", ".join(self.decision.tried) or None
        return RouterInfo(
            source=self.decision.source,
            script=self.decision.script,  # type: ignore[arg-type]
            margin=self.decision.margin,
            detail=detail,
        )


def engine(entry: str) -> tuple[Engine, EngineHealth]:
    """One engine instance per process and chain entry; health checked once."""
    found = _ENGINES.get(entry)
    if found is None:
        with _ENGINES_LOCK:
            found = _ENGINES.get(entry)
            if found is None:
                made = create(entry)
                found = _ENGINES[entry] = (made, made.health())
    return found


def consider_candidate(work: PageWork, cand: Candidate, route: str, router: RouterInfo) -> None:
    work.candidates.append(cand)
    work.record = consider(
        cand, work.attempts, PageContext(work.number, router, work.pending.layer), route=route
    )


def _stray_rtl(w: PageWork, text: str) -> bool:
    """A page whose reading is Latin yet holds a Hebrew or Arabic letter: the multilingual models
    turned a speck or an ornament into one (en_scan_huckfinn's `chapter ل`); `eng` reads it instead.
    The Tesseract engine already read up to eight such lines again in `eng`
    (`tesseract_read.latin_lines`): what is left here is a page with more, or lines `eng` could not
    read either."""
    return w.decision is not None and w.decision.script == "latin" and has_rtl_letter(text)


def _decide_by_reading(w: PageWork, text: str, entry: str) -> None:
    script, margin = visual.script_of_reading(text)
    if script is None:
        w.decision = routing_chains.RouteDecision(
            "default", "default", None, (entry,), ("read:undecided",)
        )
    else:
        w.decision = routing_chains.RouteDecision(
            script, "osd", margin, (entry,), (f"read:{script}",)
        )


def run_chains(works: list[PageWork]) -> None:
    # each page's chain without the entries that read it while it was routed
    chains = {
        w.number: [e for e in w.decision.chain if e not in w.tried] if w.decision else []
        for w in works
    }
    position = 0
    while True:
        deadline.check(
            "the pages' engine chain"
        )  # a task on a thread (Celery's soft limit cannot reach it)
        groups: dict[str, list[PageWork]] = {}
        for w in works:
            chain = chains[w.number]
            if w.record is None and w.image is not None and position < len(chain):
                groups.setdefault(chain[position], []).append(w)
        if not groups:
            return
        for entry, group in groups.items():
            read_group(entry, group)
        position += 1


def _failed(
    group: list[PageWork], label: str, reasons: list[str], rung: Rung, detail: str | None
) -> None:
    for w in group:
        w.attempts.append(
            Attempt(engine=label, accepted=False, reasons=reasons, rung=rung, detail=detail)
        )


def _ready_engine(entry: str, group: list[PageWork]) -> tuple[Engine, Rung] | None:
    """The entry's engine and its rung; None once every page of the group holds an attempt that
    says why it cannot read (it failed to load, or its health check refused it)."""
    try:
        eng, health = engine(entry)
    except EngineError as exc:
        _failed(
            group,
            entry,
            [exc.code],
            Rung.GPU_OCR if device_of(entry) == "gpu" else Rung.OCR,
            exc.message,
        )
        return None
    rung = Rung.GPU_OCR if eng.device == "gpu" else Rung.OCR
    if not health.available:
        _failed(group, eng.label, ["engine_unavailable"], rung, health.detail)
        return None
    return eng, rung


def read_group(entry: str, group: list[PageWork], route_by_reading: bool = False) -> None:
    ready = _ready_engine(entry, group)
    if ready is None:
        return
    eng, rung = ready
    script = group[0].decision.script if group[0].decision else "default"
    try:
        outputs = eng.read([w.image for w in group if w.image], script=script)
    except EngineError as exc:
        log.warning(
            "engine %s failed on pages %s: %s", eng.label, [w.number for w in group], exc.message
        )
        _failed(group, eng.label, [exc.code], rung, exc.message)
        return
    for w, out in zip(group, outputs):
        w.tried.add(entry)
        if route_by_reading:
            _decide_by_reading(w, out.text, entry)
            if _stray_rtl(
                w, out.text
            ):  # specks read as Hebrew/Arabic letters: the Latin chain reads it
                w.attempts.append(
                    Attempt(
                        engine=out.engine,
                        accepted=False,
                        reasons=["stray_rtl_letters"],
                        rung=rung,
                        seconds=round(out.seconds, 4),
                    )
                )
                continue
        _judge_output(w, out, rung)


def _judge_output(w: PageWork, out: EngineOutput, rung: Rung) -> None:
    stray = int(
        out.details.get("stray_lines_reread", 0)
    )  # provenance: lines another language list read
    _judge(
        w,
        out.text,
        out.engine,
        rung,
        out.seconds,
        out.confidence,
        int(out.details.get("missing_lines", 0)),
        f"{stray} line(s) with stray RTL letters re-read without the RTL languages"
        if stray
        else None,
    )
    if w.record is not None:  # issue 13: Tesseract's paragraphs with their boxes
        w.record = with_paragraph_boxes(w.record, out.details.get("paragraphs"))


def _judge(
    w: PageWork,
    text: str,
    label: str,
    rung: Rung,
    seconds: float,
    confidence: float | None,
    missing_lines: int = 0,
    detail: str | None = None,
) -> None:
    decision = w.decision
    # the routed script is expected in the output unless no router could decide (the safe default):
    # a VLM hallucinating Latin on a page routed as Hebrew is rejected, not accepted
    expected = decision.script if decision and decision.source != "default" else None
    verdict = assess(
        GateInput(
            text=text,
            origin="ocr",
            expected_script=expected,
            confidence=confidence,
            reference_text=w.reference,
            missing_lines=missing_lines,
        )
    )
    consider_candidate(
        w,
        Candidate(label, rung, text, verdict, seconds, confidence, detail=detail),
        "ocr",
        w.router(),
    )


def give_up(w: PageWork) -> PageRecord:
    readable = [c for c in w.candidates if c.raw.strip()]
    if readable:
        best = max(readable, key=Candidate.score)
        return review_record(w.number, best, w.router(), w.attempts, layer=w.pending.layer)
    if _nothing_to_read(w) and w.pending.layer.get(
        "repaired"
    ):  # lost in the damage, not a blank page
        return damaged_record(w.number, w.router(), w.attempts, w.pending.layer)
    if _nothing_to_read(w):
        return no_text_record(w.number, w.router(), w.attempts, layer=w.pending.layer)
    reasons = sorted({r for a in w.attempts for r in a.reasons}) or ["no_engine_could_read"]
    return failed_record(w.number, w.router(), w.attempts, reasons, layer=w.pending.layer)


NO_TEXT_LAYERS = frozenset({"image_only", "blank"})


def _nothing_to_read(w: PageWork) -> bool:
    """No text layer, and every engine that read the page found no text at all (none crashed, timed
    out or was missing): a photograph, a drawing, a blank page. A page where one did not finish
    stays failed: its text regions may hold words nobody read."""
    if w.pending.layer.get("kind") not in NO_TEXT_LAYERS:
        return False
    read = [a for a in w.attempts if a.rung in (Rung.OCR, Rung.GPU_OCR)]
    return bool(read) and all(set(a.reasons) <= {"no_text"} and not a.accepted for a in read)
