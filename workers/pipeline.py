"""The split and collect stages as plain functions (the Celery tasks are thin adapters over these).

split_document:   fetch → validate (typed errors → error.json) → rung 1 for every page in the task
                  itself → accepted pages recorded, the rest written as pending → which pages climb
collect_document: every page present? → replay every edit map → document.json, document.md,
                  text.txt, report.json → work state removed
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from workers import artifacts, keys, metrics
from workers.errors import InputError, InvalidOptionsError, PagefleetError, error_record
from workers.ladder.accept import failed_record, layer_candidate, review_record
from workers.ladder import structure
from workers.ladder.ocr_structure import ensure_blocks
from workers.ladder.textlayer import decide_page
from workers.model import Attempt, DocumentRecord, JobSpec, PageRecord, PendingPage, RouterInfo, Rung, SourceInfo
from workers.pdf import source as pdf
from workers.pdf.fetch import evict, local_pdf
from workers.settings import PIPELINE_VERSION, Options, Settings
from workers.storage import Storage, open_storage

log = logging.getLogger(__name__)


@dataclass
class SplitOutcome:
    job_id: str
    page_count: int = 0
    accepted: int = 0
    pending: dict[str, list[int]] = field(default_factory=dict)  # queue -> page numbers
    error: dict[str, str] | None = None
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"job_id": self.job_id, "page_count": self.page_count, "accepted": self.accepted,
                "pending": self.pending, "error": self.error, "seconds": round(self.seconds, 3)}


def parse_options(raw: dict[str, Any]) -> Options:
    from pydantic import ValidationError

    try:
        return Options.model_validate(raw or {})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "options"
        raise InvalidOptionsError(f"invalid option {where}: {first['msg']}") from exc


def _source(job: JobSpec, options: Options, settings: Settings) -> pdf.SourceFile:
    path = local_pdf(job, settings)
    src = pdf.local_source(path, options)
    return pdf.SourceFile(path=src.path, filename=job.filename, bytes=src.bytes, sha256=src.sha256)


def resolve_prefix(template: str, sha256: str | None, job_id: str) -> str:
    """`artifacts/{sha256}` → `artifacts/<sha>`; before the bytes are hashed, the job id stands in."""
    return template.replace("{sha256}", sha256 or job_id)


def write_error(job: JobSpec, storage: Storage, exc: BaseException, sha256: str | None = None) -> dict[str, str]:
    record = error_record(exc)
    prefix = resolve_prefix(job.artifact_prefix, sha256 or (job.sha256 or None), job.job_id)
    storage.put_json(keys.artifact(prefix, "error.json"), record)
    return record


def split_document(job: JobSpec, settings: Settings) -> SplitOutcome:
    started = time.monotonic()
    storage = open_storage(job.storage, settings)
    outcome = SplitOutcome(job.job_id)
    source: pdf.SourceFile | None = None
    try:
        options = parse_options(job.options)
        source = _source(job, options, settings)
        info = pdf.inspect(source, options, settings)
    except InputError as exc:
        outcome.error = write_error(job, storage, exc, source.sha256 if source else None)
        evict(job.job_id, settings)
        return outcome
    outcome.page_count = info["page_count"]
    pages = pdf.extract_pages(source, outcome.page_count, settings, already=info.pop("pages", None),
                              structure=options.structure)
    layout = structure.document_layout(pages) if options.structure else None
    manifest = {
        "job": job.model_dump(mode="json"),
        "source": {"filename": job.filename, "bytes": source.bytes, "sha256": source.sha256, "uri": job.source},
        "page_count": outcome.page_count,
        "artifact_prefix": resolve_prefix(job.artifact_prefix, source.sha256, job.job_id),
        "options": options.model_dump(mode="json"),
        "producer": info.get("producer", ""),
        "split_seconds": 0.0,
    }
    for page in pages:
        result = decide_page(page, ocr=options.ocr, gpu=settings.gpu)
        if layout is not None and isinstance(result, PageRecord) and result.route in artifacts.TEXT_LAYER_ROUTES:
            result = structure.structure_page(result, page, layout, source.path, recover=options.structured_recovery)
        number = int(page["number"])
        if isinstance(result, PageRecord):
            storage.put_json(keys.page(job.job_id, number), result.model_dump(mode="json"))
            outcome.accepted += 1
        elif options.ocr == "off":
            storage.put_json(keys.page(job.job_id, number), _unread(result).model_dump(mode="json"))
        else:
            storage.put_json(keys.pending(job.job_id, number), result.model_dump(mode="json"))
            outcome.pending.setdefault(result.queue, []).append(number)
    outcome.seconds = time.monotonic() - started
    manifest["split_seconds"] = round(outcome.seconds, 4)
    storage.put_json(keys.job_manifest(job.job_id), manifest)
    return outcome


def _unread(pending: PendingPage) -> PageRecord:
    """OCR is off: a page that failed rung 1 is quarantined as it is."""
    router = RouterInfo(source="text_layer", script=pending.hint_script or "unknown", margin=pending.hint_margin)
    layer = layer_candidate(pending)
    attempts = [layer.attempt(False), Attempt(engine="ocr", accepted=False, reasons=["ocr_disabled"], rung=Rung.OCR)]
    if pending.text_layer.strip():
        return review_record(pending.number, layer, router, attempts, layer=pending.layer)
    return failed_record(pending.number, router, attempts, ["no_text", "ocr_disabled"], layer=pending.layer)


class PagesMissing(PagefleetError):
    code = "pages_missing"
    retryable = True


def collect_document(job: JobSpec, settings: Settings, *, final_attempt: bool) -> dict[str, Any]:
    """Assemble and store the artifacts. Raises PagesMissing (retryable) unless final_attempt."""
    storage = open_storage(job.storage, settings)
    manifest = storage.get_json(keys.job_manifest(job.job_id))
    count = int(manifest["page_count"])
    records: list[PageRecord] = []
    missing: list[int] = []
    for number in range(1, count + 1):
        try:
            records.append(PageRecord.model_validate(storage.get_json(keys.page(job.job_id, number))))
        except KeyError:
            missing.append(number)
    if missing and not final_attempt:
        raise PagesMissing(f"job {job.job_id}: pages {missing[:10]} not recorded yet")
    for number in missing:
        router = RouterInfo(source="default", script="unknown")
        records.append(failed_record(number, router, [], ["page_missing"], layer={}))
    records.sort(key=lambda r: r.number)
    if manifest["options"].get("structure", True):
        records = [ensure_blocks(r) for r in records]  # OCR pages: blocks from a VLM's Markdown or paragraphs
    records = [artifacts.verified(r) for r in records]
    document = DocumentRecord(
        pipeline_version=PIPELINE_VERSION,
        job_id=job.job_id,
        source=SourceInfo(**manifest["source"]),
        status=artifacts.document_status(records),
        page_count=count,
        options=manifest["options"],
        pages=records,
    )
    report = artifacts.report(document, manifest)
    prefix = manifest["artifact_prefix"]
    artifacts.store(storage, prefix, document, report)
    metrics.Recorder().document(document, report)  # Prometheus counters (workers/metrics.py); never raises
    storage.delete_prefix(keys.work(job.job_id))
    evict(job.job_id, settings)  # the job is finished: its cached S3 source goes
    return {"job_id": job.job_id, "status": document.status, "routes": report["routes"],
            "artifact_prefix": prefix, "storage": job.storage, "page_count": count}
