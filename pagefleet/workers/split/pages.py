"""The split stage as plain functions (the Celery tasks are thin adapters over these).

split_document:   fetch → validate (typed errors → error.json) → rung 1 for every page in the task
                  itself → accepted pages recorded, the rest written as pending → which pages climb
split_range:      the same for one range of a big document (a range task)
structure_plan, structure_range: blocks for a big document's ranges once every range is in
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pagefleet.workers.collect.document import Held
from pagefleet.workers.errors import InputError, InvalidOptionsError, error_record
from pagefleet.workers.fleet import logs
from pagefleet.workers.ladder import referee, structure, tablecheck
from pagefleet.workers.ladder.accept import failed_record, layer_candidate, review_record
from pagefleet.workers.ladder.textlayer import decide_page
from pagefleet.workers.model import Attempt, JobSpec, PageRecord, PendingPage, RouterInfo, Rung
from pagefleet.workers.pdf import source as pdf
from pagefleet.workers.pdf.fetch import evict, local_pdf
from pagefleet.workers.settings import Options, Settings
from pagefleet.workers.split import ranges
from pagefleet.workers.store import artifacts, keys, work
from pagefleet.workers.store.storage import Storage, open_storage

log = logging.getLogger(__name__)


@dataclass
class SplitOutcome:
    job_id: str
    page_count: int = 0
    accepted: int = 0
    pending: dict[str, list[int]] = field(default_factory=dict)  # queue -> page numbers
    error: dict[str, str] | None = None
    seconds: float = 0.0
    ranges: list[tuple[int, int]] = field(
        default_factory=list
    )  # left for range tasks (pagefleet/workers/split/ranges.py)
    # a one-task document with nothing left to climb: its manifest and records, kept in memory
    # for the split task to collect in place (no work state written, read back and removed)
    held: Held | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "page_count": self.page_count,
            "accepted": self.accepted,
            "pending": self.pending,
            "error": self.error,
            "seconds": round(self.seconds, 3),
            "ranges": [list(r) for r in self.ranges],
        }


def parse_options(raw: dict[str, Any]) -> Options:
    from pydantic import ValidationError

    try:
        return Options.model_validate(raw or {})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "options"
        raise InvalidOptionsError(f"invalid option {where}: {first['msg']}") from exc


def _source(job: JobSpec, options: Options, settings: Settings) -> pdf.SourceFile:
    """The job's PDF on local disk, its size checked; not hashed yet (`SourceFile.hashed`)."""
    return replace(
        pdf.local_source(local_pdf(job, settings), options, hashed=False), filename=job.filename
    )


def resolve_prefix(template: str, sha256: str | None, job_id: str) -> str:
    """`artifacts/{sha256}` → `artifacts/<sha>`; before the bytes are hashed, the job id stands in."""
    return template.replace("{sha256}", sha256 or job_id)


def write_error(
    job: JobSpec, storage: Storage, exc: BaseException, sha256: str | None = None
) -> dict[str, str]:
    record = error_record(exc)
    prefix = resolve_prefix(job.artifact_prefix, sha256 or (job.sha256 or None), job.job_id)
    storage.put_json(keys.artifact(prefix, "error.json"), record)
    return record


@dataclass
class Head:
    """A document's options, local source and probe (with its first pages), or the input error that
    stopped them: what `split_document` reads before it decides anything (`read_head`)."""

    options: Options | None = None
    source: pdf.SourceFile | None = None
    info: dict[str, Any] = field(default_factory=dict)
    error: InputError | None = None


def read_head(job: JobSpec, settings: Settings) -> Head:
    """Options, the source on local disk and the sandbox's probe; an input error is kept, not
    raised (anything else is). Reads and writes nothing of the job's state, so a split batch reads
    its next documents' heads while it decides this one (`read_heads`, `pagefleet.workers.split.batch`)."""
    found = read_heads([job], settings)[0]
    if isinstance(found, Exception):
        raise found
    return found


def read_heads(jobs: list[JobSpec], settings: Settings) -> list[Head | Exception]:
    """`read_head` of each job, in order, the probes of those that reach MuPDF in one sandbox
    command (`pdf.inspect_many`); what `read_head` would raise for a document takes its place."""
    heads: list[Head | Exception] = []
    ready: list[tuple[Head, pdf.SourceFile, Options]] = []
    for job in jobs:
        head = Head()
        try:
            with logs.bound(job_id=job.job_id):
                head.options = parse_options(job.options)
                head.source = _source(job, head.options, settings)
            ready.append((head, head.source, head.options))
        except InputError as exc:
            head.error = exc
        except Exception as exc:  # noqa: BLE001 - raised again when its document is split
            heads.append(exc)
            continue
        heads.append(head)
    try:
        probes = pdf.inspect_many([(source, options) for _, source, options in ready], settings)
    except Exception as exc:  # noqa: BLE001 - every document probed here fails as it would alone
        probing = {id(head) for head, _, _ in ready}
        return [exc if id(h) in probing else h for h in heads]
    for (head, _, _), probe in zip(ready, probes):
        if isinstance(probe, InputError):
            head.error = probe
        else:
            head.info = probe
    return heads


def split_document(
    job: JobSpec,
    settings: Settings,
    on_ranges: Callable[[list[tuple[int, int]]], None] | None = None,
    ahead: Callable[[], Head] | None = None,
) -> SplitOutcome:
    """`on_ranges` gets the ranges left for range tasks as soon as the page count is known, before
    this task reads its own pages, so the range tasks start while it works. `ahead`, when given,
    returns the document's head read beforehand (`read_head`)."""
    started = time.monotonic()
    storage = open_storage(job.storage, settings)
    outcome = SplitOutcome(job.job_id)
    read = ahead() if ahead is not None else read_head(job, settings)
    if read.error is not None:
        outcome.error = write_error(
            job, storage, read.error, read.source.hashed().sha256 if read.source else None
        )
        evict(job.job_id, settings)
        return outcome
    assert read.options is not None and read.source is not None
    options, source, info = read.options, read.source, read.info
    outcome.page_count = info["page_count"]
    plan = ranges.plan(outcome.page_count, settings)
    if on_ranges is not None and len(plan) > 1:
        on_ranges(plan[1:])
    source = (
        source.hashed()
    )  # once the range tasks run: 82 MB take ~70 ms, which no core waited for
    pages = pdf.extract_pages(
        source, plan[0][1], settings, already=info.pop("pages", None), structure=options.structure
    )
    # one range: blocks right away; several: once every range is in (structure_plan, a task per range)
    layout = structure.document_layout(pages) if options.structure and len(plan) == 1 else None
    manifest = _manifest(job, source, outcome.page_count, options, info, plan)
    head, records = _decide_range(
        job,
        pages,
        plan[0],
        options,
        settings,
        storage,
        layout=layout,
        path=source.path,
        deferred=options.structure and len(plan) > 1,
        hold=len(plan) == 1,
    )
    outcome.accepted, outcome.pending, outcome.ranges = head.accepted, head.pending, plan[1:]
    outcome.seconds = time.monotonic() - started
    manifest["split_seconds"] = round(outcome.seconds, 4)
    if records is not None:
        outcome.held = Held(manifest, records, storage)
    else:
        storage.put_json(keys.job_manifest(job.job_id), manifest)
    return outcome


def _manifest(
    job: JobSpec,
    source: pdf.SourceFile,
    page_count: int,
    options: Options,
    info: dict[str, Any],
    plan: list[tuple[int, int]],
) -> dict[str, Any]:
    """The job's manifest: what the collection needs to know of the document and its split."""
    return {
        "job": job.model_dump(mode="json"),
        "source": {
            "filename": job.filename,
            "bytes": source.bytes,
            "sha256": source.sha256,
            "uri": job.source,
        },
        "page_count": page_count,
        "artifact_prefix": resolve_prefix(job.artifact_prefix, source.sha256, job.job_id),
        "options": options.model_dump(mode="json"),
        "producer": info.get("producer", ""),
        "repaired": bool(info.get("repaired")),  # MuPDF rebuilt a broken file: every page says so
        "split_seconds": 0.0,
        "ranges": [list(r) for r in plan],
    }


def head_outcome(
    job: JobSpec, first: int, last: int, settings: Settings
) -> work.RangeOutcome | None:
    """The split task's own range, once it finished: its range object and the manifest are stored."""
    storage = open_storage(job.storage, settings)
    if not storage.exists(keys.job_manifest(job.job_id)):
        return None
    return work.stored_outcome(storage, job.job_id, first, last)


def _decide_range(
    job: JobSpec,
    pages: list[dict[str, Any]],
    span: tuple[int, int],
    options: Options,
    settings: Settings,
    storage: Storage,
    *,
    layout: Any = None,
    path: str = "",
    deferred: bool = False,
    hold: bool = False,
) -> tuple[work.RangeOutcome, list[PageRecord] | None]:
    """Rung 1 for the pages of one range, stored as one object (`pagefleet/workers/store/work.py`); `layout`:
    blocks now; `deferred`: the pages' layout evidence is kept for `structure_range`. With `hold`,
    a range none of whose pages climbs is not stored: its records come back for the caller to
    collect in place (else the records are None)."""

    def judge(page: dict[str, Any]) -> PageRecord | PendingPage:
        page.update(referee.settle(page, path))  # rows that read both ways, before the gate
        result = decide_page(page, ocr=options.ocr, gpu=settings.gpu.enabled)
        if layout is not None and isinstance(result, PageRecord):
            result = _with_blocks(result, page, layout, path, options)
        return result

    with tablecheck.within(*span):
        outcome, records, pending = ranges.decide(
            pages, *span, ocr=options.ocr, judge=judge, unread=_unread
        )
    if hold and not pending:
        return outcome, records
    work.store(storage, job.job_id, outcome, records, pending, pages if deferred else None)
    return outcome, None


def split_range(job: JobSpec, first: int, last: int, settings: Settings) -> work.RangeOutcome:
    """Rung 1 for pages first..last of a document the split task already validated (a range task)."""
    storage = open_storage(job.storage, settings)
    options = parse_options(job.options)
    path = local_pdf(job, settings)
    source = pdf.SourceFile(path=path, filename=job.filename, bytes=0, sha256="")
    pages = pdf.extract_pages(source, last, settings, start=first, structure=options.structure)
    return _decide_range(
        job, pages, (first, last), options, settings, storage, path=path, deferred=options.structure
    )[0]


def structure_plan(
    job: JobSpec, settings: Settings
) -> tuple[structure.DocumentLayout, list[tuple[int, int]]]:
    """For a document split into ranges with structure on, once every range is in: font
    statistics and running furniture over every page's layout, and the ranges (first, last) still
    without blocks. Each of those is then structured by its own task (`structure_range`), so every
    core works on the blocks and the table checks."""
    storage = open_storage(job.storage, settings)
    manifest = storage.get_json(keys.job_manifest(job.job_id))
    found = dict(work.states(storage, job.job_id, manifest))
    layout = structure.document_layout(
        [p for state in found.values() for p in state.get("layouts", [])]
    )
    todo = []
    for first, last in manifest.get("ranges") or []:
        state = found.get(work.key(job.job_id, first, last))
        if state is not None and "layouts" in state and not state.get("structured"):
            todo.append((int(first), int(last)))
    return layout, todo


def structure_range(
    job: JobSpec, first: int, last: int, layout: structure.DocumentLayout, settings: Settings
) -> None:
    """Blocks and the table check for the text-layer pages of one range object; the object is
    rewritten once, marked "structured" (a redelivery finds it so and does nothing)."""
    storage = open_storage(job.storage, settings)
    name = work.key(job.job_id, first, last)
    state = storage.get_json(name)
    if state.get("structured"):
        return
    options = parse_options(job.options)
    path = local_pdf(job, settings)
    pages = {int(p["number"]): p for p in state.get("layouts", [])}
    records = []
    with tablecheck.within(first, last):
        for raw in state["records"]:
            record = PageRecord.model_validate(raw)
            if record.number in pages:
                record = _with_blocks(record, pages[record.number], layout, path, options)
            records.append(record.model_dump(mode="json"))
    storage.put_json(name, {**state, "records": records, "structured": True}, compact=True)


def _with_blocks(
    record: PageRecord, page: dict[str, Any], layout: Any, path: str, options: Options
) -> PageRecord:
    """A page rung 1 accepted from the text layer gets its blocks and its table check; any other
    record is left as it is (OCR pages get theirs at collection)."""
    if record.route not in artifacts.TEXT_LAYER_ROUTES:
        return record
    return structure.structure_page(record, page, layout, path, recover=options.structured_recovery)


def _unread(pending: PendingPage) -> PageRecord:
    """OCR is off: a page that failed rung 1 is quarantined as it is."""
    router = RouterInfo(
        source="text_layer", script=pending.hint_script or "unknown", margin=pending.hint_margin
    )
    layer = layer_candidate(pending)
    attempts = [
        layer.attempt(False),
        Attempt(engine="ocr", accepted=False, reasons=["ocr_disabled"], rung=Rung.OCR),
    ]
    if pending.text_layer.strip():
        return review_record(pending.number, layer, router, attempts, layer=pending.layer)
    return failed_record(
        pending.number, router, attempts, ["no_text", "ocr_disabled"], layer=pending.layer
    )
