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
from dataclasses import replace
from pathlib import Path
from typing import Any

from pagefleet.routing import chains as routing_chains
from pagefleet.routing.evidence import GlyphFacts
from pagefleet.routing.quality import GateInput, assess
from pagefleet.workers.store import keys
from pagefleet.workers.store import work as ranges
from pagefleet.workers.ladder import fallback, visual
from pagefleet.workers.pdf.source import render_page
from pagefleet.workers.engines.base import PageImage
from pagefleet.workers.errors import EngineError, SandboxError
from pagefleet.workers.ladder.accept import Candidate, failed_record, layer_candidate
from pagefleet.workers.ladder.ocr_chain import (
    PageWork,
    consider_candidate,
    give_up,
    read_group,
    run_chains,
)
from pagefleet.workers.model import Attempt, JobSpec, PageRecord, RouterInfo, Rung
from pagefleet.workers.settings import Settings
from pagefleet.workers.pdf.fetch import local_pdf
from pagefleet.workers.store.storage import Storage, open_storage

log = logging.getLogger(__name__)


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
        run_chains(open_works)
        records = [w.record or give_up(w) for w in works]
    finally:
        shutil.rmtree(render_dir, ignore_errors=True)
    for record in records:
        storage.put_json(keys.page(job.job_id, record.number), record.model_dump(mode="json"))
    return records


def _cache(settings: Settings) -> str:
    Path(settings.storage.cache_dir).mkdir(parents=True, exist_ok=True)
    return settings.storage.cache_dir


def _prepare(
    job: JobSpec, storage: Storage, number: int, pdf: str, render_dir: Path, settings: Settings
) -> PageWork:
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
        work.attempts.append(
            Attempt(engine="ocr", accepted=False, reasons=["ocr_disabled"], rung=Rung.OCR)
        )
        return work
    png = (
        render_dir / f"{number:05d}.pgm"
    )  # uncompressed: written and read back at once (PNG cost ≈ 0.05–0.1 s)
    dpi = int(options.get("dpi", 300))
    try:
        info = render_page(pdf, number, dpi, str(png), settings)
        work.image = PageImage(path=str(png), page=number, dpi=int(info["dpi"]), pdf=pdf)
        if pending.hint_script is None and not _reads_first(
            work, settings
        ):  # the page may be a turned scan
            _turn_upright(work, settings)
    except SandboxError as exc:
        log.warning("job %s page %d: render failed: %s", job.job_id, number, exc.message)
        work.attempts.append(
            Attempt(
                engine="render",
                accepted=False,
                reasons=["render_failed"],
                rung=Rung.OCR,
                detail=exc.message,
            )
        )
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
        work.attempts.append(
            Attempt(
                engine=fallback.ENGINE,
                accepted=False,
                reasons=[exc.code],
                rung=Rung.FALLBACK_TEXT,
                detail=exc.message,
            )
        )
        return
    coverage = {"image_coverage": work.pending.layer.get("image_coverage", 0.0)}
    verdict = assess(
        GateInput(text=text, origin="fallback_text", glyphs=GlyphFacts.from_layer(coverage))
    )
    router = RouterInfo(
        source="text_layer",
        script=work.pending.hint_script or "unknown",
        margin=work.pending.hint_margin,
    )
    consider_candidate(
        work,
        Candidate(fallback.ENGINE, Rung.FALLBACK_TEXT, text, verdict, seconds),
        "fallback_text",
        router,
    )


def _reads_first(w: PageWork, settings: Settings) -> bool:
    """A CPU page with no text-layer hint is routed by reading it (see `_read_first`)."""
    entry = settings.ocr.chains.cpu_default[0] if settings.ocr.chains.cpu_default else ""
    return (
        settings.ocr.router.read_first
        and not w.gpu
        and w.pending.hint_script is None
        and entry.split(":")[0] == "tesseract"
    )


def _read_first(works: list[PageWork], settings: Settings) -> list[PageWork]:
    """The CPU router that costs no extra pass: the default chain's multilingual Tesseract reads the
    page, the script of what it read routes it, and that reading is judged first, with the routed
    script expected. OSD (≈ 0.4 s a page, a quarter of a read) and the recognition probe run only
    where the reading names no script or is refused (a turned scan: OSD turns it, and the page is
    routed again). Returns the pages still to route by votes."""
    chains = settings.ocr.chains.model_dump()
    entry = settings.ocr.chains.cpu_default[0]
    group = [w for w in works if w.image is not None]
    read_group(entry, group, route_by_reading=True)
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
    return (
        name == read_name == "tesseract"
        and bool(langs)
        and set(langs.split("+")) <= set(read_langs.split("+"))
    )


def _route(works: list[PageWork], settings: Settings) -> None:
    chains = settings.ocr.chains.model_dump()
    first = [w for w in works if w.image is not None and _reads_first(w, settings)]
    if first:
        later = {w.number for w in _read_first(first, settings)}
        works = [w for w in works if w.decision is None or w.number in later]
    needs_votes = [w for w in works if w.image is not None and w.pending.hint_script is None]
    votes = visual.visual_votes(
        [w.image for w in needs_votes if w.image],
        gpu=any(w.gpu for w in needs_votes),
        settings=settings,
    )
    by_page = dict(zip((w.number for w in needs_votes), votes))
    for w in works:
        w.decision = routing_chains.decide(
            w.pending.hint_script,
            w.pending.hint_margin,
            by_page.get(w.number, []),
            chains,
            gpu=w.gpu,
        )


def failed_page(
    job: JobSpec, number: int, reasons: list[str], settings: Settings, detail: str = ""
) -> PageRecord:
    """The redelivery cap was hit (or the page killed its worker): finish it as failed."""
    storage = open_storage(job.storage, settings)
    attempt = Attempt(
        engine="worker", accepted=False, reasons=reasons, rung=Rung.OCR, detail=detail or None
    )
    record = failed_record(
        number, RouterInfo(source="default", script="unknown"), [attempt], reasons, layer={}
    )
    storage.put_json(keys.page(job.job_id, number), record.model_dump(mode="json"))
    return record


def summary(records: list[PageRecord]) -> list[dict[str, Any]]:
    return [{"page": r.number, "route": r.route, "engine": r.engine} for r in records]
