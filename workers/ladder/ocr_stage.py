"""Rungs 2–4 for the pages that failed rung 1: fallback text, then the routed OCR engine chain.

    pending page ─► [rung 2: pdftotext, only when MuPDF saw too little] ─gate─► fallback_text
                 ─► render (sandbox) ─► route: text-layer hint | SigLIP2 (gpu) | OSD (cpu) | default
                 ─► chain, one engine after another, every output through the gate ─► ocr
                 ─► nothing passed ─► review_required (best candidate quarantined) | failed

Engines are called once per chain position for every page of the task that is still unresolved
(a batched `read` for GPU engines). Content problems never raise: they become attempts on the
page record. Pages already recorded are skipped (idempotent on redelivery).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from routing import chains as routing_chains
from routing.evidence import GlyphFacts
from routing.quality import GateInput, assess
from routing.charclass import has_rtl_letter
from workers.fleet import deadline
from workers.store import keys
from workers.store import work as ranges
from workers.ladder import fallback, visual
from workers.pdf.source import render_page
from workers.engines.base import Engine, EngineHealth, PageImage, create, device_of
from workers.errors import EngineError, SandboxError
from workers.ladder.accept import (
    Candidate, PageContext, consider, damaged_record, failed_record, layer_candidate, no_text_record, review_record,
)
from workers.ladder.ocr_structure import with_paragraph_boxes
from workers.model import Attempt, JobSpec, PageRecord, PendingPage, RouterInfo, Rung
from workers.settings import Settings
from workers.pdf.fetch import local_pdf
from workers.store.storage import Storage, open_storage

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
        return RouterInfo(source=self.decision.source, script=self.decision.script,  # type: ignore[arg-type]
                          margin=self.decision.margin, detail=detail)


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


def ocr_pages(job: JobSpec, numbers: list[int], settings: Settings) -> list[PageRecord]:
    storage = open_storage(job.storage, settings)
    todo = [n for n in numbers if not storage.exists(keys.page(job.job_id, n))]
    if not todo:
        return []
    pdf = local_pdf(job, settings)
    render_dir = Path(tempfile.mkdtemp(prefix=f"render-{job.job_id[:8]}-", dir=_cache(settings)))
    try:
        works = [_prepare(job, storage, n, pdf, render_dir, settings) for n in todo]
        open_works = [w for w in works if w.record is None]
        _route(open_works, settings)
        _run_chains(open_works)
        records = [w.record or _give_up(w) for w in works]
    finally:
        shutil.rmtree(render_dir, ignore_errors=True)
    for record in records:
        storage.put_json(keys.page(job.job_id, record.number), record.model_dump(mode="json"))
    return records


def _cache(settings: Settings) -> str:
    Path(settings.storage.cache_dir).mkdir(parents=True, exist_ok=True)
    return settings.storage.cache_dir


def _prepare(job: JobSpec, storage: Storage, number: int, pdf: str, render_dir: Path, settings: Settings) -> PageWork:
    pending = ranges.pending_page(storage, job.job_id, number)  # its range's object (or its own)
    work = PageWork(pending=pending, gpu=pending.queue == "gpu")
    text_layer = pending.text_layer
    if text_layer.strip():
        cand = layer_candidate(pending)
        work.candidates.append(cand)
        work.attempts.append(cand.attempt(False))
        if pending.reasons == ["ocr_forced"]:
            work.reference = text_layer
    if set(pending.reasons) & fallback.WORTH_TRYING and fallback.available():
        _try_fallback(work, pdf)
        if work.record is not None:
            return work
    options = job.options or {}
    if options.get("ocr") == "off":
        work.attempts.append(Attempt(engine="ocr", accepted=False, reasons=["ocr_disabled"], rung=Rung.OCR))
        return work
    png = render_dir / f"{number:05d}.pgm"  # uncompressed: written and read back at once (PNG cost ≈ 0.05–0.1 s)
    dpi = int(options.get("dpi", 300))
    try:
        info = render_page(pdf, number, dpi, str(png), settings)
        work.image = PageImage(path=str(png), page=number, dpi=int(info["dpi"]), pdf=pdf)
        if pending.hint_script is None and not _reads_first(work, settings):  # the page may be a turned scan
            _turn_upright(work, settings)
    except SandboxError as exc:
        log.warning("job %s page %d: render failed: %s", job.job_id, number, exc.message)
        work.attempts.append(Attempt(engine="render", accepted=False, reasons=["render_failed"], rung=Rung.OCR,
                                     detail=exc.message))
    return work


def _turn_upright(work: PageWork, settings: Settings) -> bool:
    """Tesseract OSD's orientation; a turned scan is rendered again upright. True when turned."""
    image = work.image
    if image is None or image.pdf is None:
        return False
    turn = visual.orientation(image, settings)
    if not turn:
        return False
    visual.forget(image)
    info = render_page(image.pdf, image.page, image.dpi, image.path, settings, rotate=turn)
    work.image = PageImage(path=image.path, page=image.page, dpi=int(info["dpi"]), pdf=image.pdf)
    work.pending.layer["rotated"] = turn
    return True


def _try_fallback(work: PageWork, pdf: str) -> None:
    try:
        text, seconds = fallback.extract_page(pdf, work.number)
    except EngineError as exc:
        work.attempts.append(Attempt(engine=fallback.ENGINE, accepted=False, reasons=[exc.code],
                                     rung=Rung.FALLBACK_TEXT, detail=exc.message))
        return
    coverage = {"image_coverage": work.pending.layer.get("image_coverage", 0.0)}
    verdict = assess(GateInput(text=text, origin="fallback_text", glyphs=GlyphFacts.from_layer(coverage)))
    router = RouterInfo(source="text_layer", script=work.pending.hint_script or "unknown", margin=work.pending.hint_margin)
    _consider(work, Candidate(fallback.ENGINE, Rung.FALLBACK_TEXT, text, verdict, seconds), "fallback_text", router)


def _consider(work: PageWork, cand: Candidate, route: str, router: RouterInfo) -> None:
    work.candidates.append(cand)
    work.record = consider(cand, work.attempts, PageContext(work.number, router, work.pending.layer), route=route)


def _reads_first(w: PageWork, settings: Settings) -> bool:
    """A CPU page with no text-layer hint is routed by reading it (see `_read_first`)."""
    entry = settings.ocr.chains.cpu_default[0] if settings.ocr.chains.cpu_default else ""
    return (settings.ocr.router.read_first and not w.gpu and w.pending.hint_script is None
            and entry.split(":")[0] == "tesseract")


def _read_first(works: list[PageWork], settings: Settings) -> list[PageWork]:
    """The CPU router that costs no extra pass: the default chain's multilingual Tesseract reads the
    page, the script of what it read routes it, and that reading is judged first, with the routed
    script expected. OSD (≈ 0.4 s a page, a quarter of a read) and the recognition probe run only
    where the reading names no script or is refused (a turned scan: OSD turns it, and the page is
    routed again). Returns the pages still to route by votes."""
    chains = settings.ocr.chains.model_dump()
    entry = settings.ocr.chains.cpu_default[0]
    group = [w for w in works if w.image is not None]
    _read_group(entry, group, route_by_reading=True)
    rest = []
    for w in group:
        if w.record is not None:
            continue
        if _turn_upright(w, settings):
            w.decision, w.tried = None, set()
            rest.append(w)
        elif w.decision is None or w.decision.source == "default":  # no script in what it read
            rest.append(w)
        else:  # refused: the rest of its script's chain reads it
            chain = routing_chains.chain_for(w.decision.script, chains, gpu=False)
            if w.attempts and set(w.attempts[-1].reasons) <= {"low_confidence"}:
                w.tried |= {e for e in chain if _narrower(e, entry)}
            w.decision = replace(w.decision, chain=chain)
    return rest


def _narrower(entry: str, read: str) -> bool:
    """A Tesseract entry whose languages are a subset of those that already read the page (same
    image, same preparation, fewer models). After a `low_confidence` refusal it is skipped: on make
    eval-ocr's refused pages it refused them again at the cost of a whole read. After a line went
    missing or stray letters it still reads (the corpus's ar_freetext_annot_only: ara+eng reads
    the line heb+ara+eng dropped)."""
    name, _, langs = entry.partition(":")
    read_name, _, read_langs = read.partition(":")
    return (name == read_name == "tesseract" and bool(langs)
            and set(langs.split("+")) <= set(read_langs.split("+")))


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
        w.decision = routing_chains.RouteDecision("default", "default", None, (entry,), ("read:undecided",))
    else:
        w.decision = routing_chains.RouteDecision(script, "osd", margin, (entry,), (f"read:{script}",))


def _route(works: list[PageWork], settings: Settings) -> None:
    chains = settings.ocr.chains.model_dump()
    first = [w for w in works if w.image is not None and _reads_first(w, settings)]
    if first:
        later = {w.number for w in _read_first(first, settings)}
        works = [w for w in works if w.decision is None or w.number in later]
    needs_votes = [w for w in works if w.image is not None and w.pending.hint_script is None]
    votes = visual.visual_votes([w.image for w in needs_votes if w.image], gpu=any(w.gpu for w in needs_votes), settings=settings)
    by_page = dict(zip((w.number for w in needs_votes), votes))
    for w in works:
        w.decision = routing_chains.decide(
            w.pending.hint_script, w.pending.hint_margin, by_page.get(w.number, []), chains, gpu=w.gpu
        )


def _run_chains(works: list[PageWork]) -> None:
    # each page's chain without the entries that read it while it was routed
    chains = {w.number: [e for e in w.decision.chain if e not in w.tried] if w.decision else [] for w in works}
    position = 0
    while True:
        deadline.check("the pages' engine chain")  # a task on a thread (Celery's soft limit cannot reach it)
        groups: dict[str, list[PageWork]] = {}
        for w in works:
            chain = chains[w.number]
            if w.record is None and w.image is not None and position < len(chain):
                groups.setdefault(chain[position], []).append(w)
        if not groups:
            return
        for entry, group in groups.items():
            _read_group(entry, group)
        position += 1


def _read_group(entry: str, group: list[PageWork], route_by_reading: bool = False) -> None:
    try:
        eng, health = engine(entry)
    except EngineError as exc:
        rung = Rung.GPU_OCR if device_of(entry) == "gpu" else Rung.OCR
        for w in group:
            w.attempts.append(Attempt(engine=entry, accepted=False, reasons=[exc.code], rung=rung, detail=exc.message))
        return
    rung = Rung.GPU_OCR if eng.device == "gpu" else Rung.OCR
    if not health.available:
        for w in group:
            w.attempts.append(Attempt(engine=eng.label, accepted=False, reasons=["engine_unavailable"], rung=rung,
                                      detail=health.detail))
        return
    script = group[0].decision.script if group[0].decision else "default"
    try:
        outputs = eng.read([w.image for w in group if w.image], script=script)
    except EngineError as exc:
        log.warning("engine %s failed on pages %s: %s", eng.label, [w.number for w in group], exc.message)
        for w in group:
            w.attempts.append(Attempt(engine=eng.label, accepted=False, reasons=[exc.code], rung=rung, detail=exc.message))
        return
    for w, out in zip(group, outputs):
        w.tried.add(entry)
        if route_by_reading:
            _decide_by_reading(w, out.text, entry)
            if _stray_rtl(w, out.text):  # specks read as Hebrew/Arabic letters: the Latin chain reads it
                w.attempts.append(Attempt(engine=out.engine, accepted=False, reasons=["stray_rtl_letters"], rung=rung,
                                          seconds=round(out.seconds, 4)))
                continue
        stray = int(out.details.get("stray_lines_reread", 0))  # provenance: lines another language list read
        _judge(w, out.text, out.engine, rung, out.seconds, out.confidence, int(out.details.get("missing_lines", 0)),
               f"{stray} line(s) with stray RTL letters re-read without the RTL languages" if stray else None)
        if w.record is not None:  # issue 13: Tesseract's paragraphs with their boxes
            w.record = with_paragraph_boxes(w.record, out.details.get("paragraphs"))


def _judge(w: PageWork, text: str, label: str, rung: Rung, seconds: float, confidence: float | None,
           missing_lines: int = 0, detail: str | None = None) -> None:
    decision = w.decision
    # the routed script is expected in the output unless no router could decide (the safe default):
    # a VLM hallucinating Latin on a page routed as Hebrew is rejected, not accepted
    expected = decision.script if decision and decision.source != "default" else None
    verdict = assess(GateInput(text=text, origin="ocr", expected_script=expected, confidence=confidence,
                               reference_text=w.reference, missing_lines=missing_lines))
    _consider(w, Candidate(label, rung, text, verdict, seconds, confidence, detail=detail), "ocr", w.router())


def _give_up(w: PageWork) -> PageRecord:
    readable = [c for c in w.candidates if c.raw.strip()]
    if readable:
        best = max(readable, key=Candidate.score)
        return review_record(w.number, best, w.router(), w.attempts, layer=w.pending.layer)
    if _nothing_to_read(w) and w.pending.layer.get("repaired"):  # lost in the damage, not a blank page
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


def failed_page(job: JobSpec, number: int, reasons: list[str], settings: Settings, detail: str = "") -> PageRecord:
    """The redelivery cap was hit (or the page killed its worker): finish it as failed."""
    storage = open_storage(job.storage, settings)
    attempt = Attempt(engine="worker", accepted=False, reasons=reasons, rung=Rung.OCR, detail=detail or None)
    record = failed_record(number, RouterInfo(source="default", script="unknown"), [attempt], reasons, layer={})
    storage.put_json(keys.page(job.job_id, number), record.model_dump(mode="json"))
    return record


def summary(records: list[PageRecord]) -> list[dict[str, Any]]:
    return [{"page": r.number, "route": r.route, "engine": r.engine} for r in records]
