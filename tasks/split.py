"""pagefleet.split: rung 1 for every page in this task, then one chord per document for the rest."""

from __future__ import annotations

import contextvars
import functools
import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from celery import chord
from redis.lock import Lock

from tasks.collect import _finish, collect, collect_after_error, collect_streaming, finish_held
from workers.fleet import jobs, logs
from workers.collect import stream
from workers.app import task
from workers.fleet.jobs import JobState
from workers.model import JobSpec
from workers.split import ranges
from workers.store import work
from workers.ladder.structure import DocumentLayout
from workers.collect.document import PagesMissing
from workers.split.document import (Head, SplitOutcome, head_outcome, parse_options, read_heads,
                              split_document, split_range as split_pages, structure_plan,
                              structure_range as structure_pages)
from workers.settings import Settings, get_settings

log = logging.getLogger(__name__)


@task("pagefleet.split")
def split(spec: dict) -> dict:
    return split_one(spec)


@task("pagefleet.split_batch")
def split_batch(specs: list[dict], submission: str = "") -> list[dict]:
    """The small documents of one submission (`submit.enqueue_many`), one after another in this
    task, sharing one sandbox child. Each is its own job as if it came alone: a redelivered batch
    skips the documents already split, and a document that fails does not stop the next ones —
    the first failure is raised once every document had its turn (a transient one retries the
    batch, which then finds the others done). The batches of one `submission` (one producer call,
    `submit.enqueue_many`) that a worker process runs one after another share that child too (a
    fresh child's fork, page faults and cold first page cost ~15 ms of CPU, ~1 ms a document of a
    batch of 16); another submission's batch gets a fresh one, and a failed command, `IDLE_S`
    without a command, its memory or `sandbox_share_max` commands end it (`workers.pdf.forkserver`)."""
    from workers.app import send
    from workers.pdf.sandbox import shared_child

    results: list[dict] = []
    failure: BaseException | None = None
    settings = get_settings()
    budget = time.monotonic() + settings.task_soft_time_limit / 2
    token = f"{os.getpid()}:{submission or (specs[0]['job_id'] if specs else '')}"
    with shared_child(token), ThreadPoolExecutor(1, thread_name_prefix="heads") as reader:
        # heads read in order in one thread, a chunk ahead: the sandbox child probes the next
        # chunk's documents while this process gates and stores this chunk's
        heads = _Heads(specs, reader, settings.sandbox_probe_batch)
        for i, spec in enumerate(specs):
            if i and time.monotonic() > budget:  # slow documents: the rest go on as a batch of their own
                send("pagefleet.split_batch", [specs[i:], submission], queue="split",
                     label=f"({len(specs) - i} jobs)")
                heads.cancel()  # their documents go with the rest (a chunk already being read is waited for)
                break
            ahead = heads.of(i)
            try:
                with logs.bound(job_id=spec.get("job_id")):
                    results.append(split_one(spec, may_stream=False, ahead=ahead))
            except Exception as exc:  # noqa: BLE001 - re-raised below, after the batch's other documents
                log.warning("job %s: split failed in a batch: %s", spec.get("job_id"), type(exc).__name__)
                results.append({"job_id": spec.get("job_id"), "failed": type(exc).__name__})
                failure = failure or exc
    if failure is not None:
        raise failure
    return results


class _Heads:
    """A batch's documents' heads, read in its reader thread a chunk at a time, each chunk's probes
    in one sandbox command (`pipeline.read_heads`), and the next chunk asked for as this one's first
    document is decided. Chunks grow 1, 2, 4 … up to `size` documents, so the first document waits
    for one probe, not `size`."""

    def __init__(self, specs: list[dict], reader: ThreadPoolExecutor, size: int) -> None:
        self.specs, self.reader = specs, reader
        self.bounds: list[tuple[int, int]] = []
        first, n = 0, 1
        while first < len(specs):
            self.bounds.append((first, min(first + n, len(specs))))
            first, n = first + n, min(n * 2, max(size, 1))
        self.futures: dict[int, Future[list[Head | Exception]]] = {}

    def _chunk(self, c: int) -> Future[list[Head | Exception]]:
        if c not in self.futures:  # read in this context: the sandbox child's token
            first, last = self.bounds[c]
            self.futures[c] = self.reader.submit(contextvars.copy_context().run, _heads_of, self.specs[first:last])
        return self.futures[c]

    def of(self, i: int) -> Callable[[], Head]:
        """Document i's head, as `split_one` asks for it."""
        c = next(c for c, (first, last) in enumerate(self.bounds) if first <= i < last)
        future = self._chunk(c)
        if i == self.bounds[c][0] and c + 1 < len(self.bounds):
            self._chunk(c + 1)
        return functools.partial(_pick, future, i - self.bounds[c][0])

    def cancel(self) -> None:
        for future in self.futures.values():
            future.cancel()


def _pick(future: Future[list[Head | Exception]], j: int) -> Head:
    found = future.result()[j]
    if isinstance(found, Exception):
        raise found
    return found


def _heads_of(specs: list[dict]) -> list[Head | Exception]:
    """`pipeline.read_heads` of one chunk of a batch (in the batch's reader thread); a spec that is
    not a valid job is that document's exception."""
    valid: list[JobSpec] = []
    found: list[Head | Exception | None] = []
    for spec in specs:
        try:
            valid.append(JobSpec.model_validate(spec))
            found.append(None)
        except Exception as exc:  # noqa: BLE001 - raised again when its document is split
            found.append(exc)
    read = iter(read_heads(valid, get_settings()))
    return [next(read) if f is None else f for f in found]


def split_one(spec: dict, may_stream: bool = True, ahead: Callable[[], Head] | None = None) -> dict:
    """Rung 1 for one document: validate, read every page of the split task's own range (a big
    document's other ranges go out as a chord first, and with `may_stream` this task then collects
    it as they come in: `workers.collect.stream`), then its OCR chord or, when nothing climbs, its
    collection in place. `ahead`: the document's head, read beforehand (`split_batch`); a document
    skipped here ignores it (a cached S3 source it fetched goes when idle: `fetch.prune`)."""
    job = JobSpec.model_validate(spec)
    settings = get_settings()
    settled = (JobState.OCR, JobState.COLLECTING, *jobs.TERMINAL)  # a redelivery or a duplicate finds these
    record, lock = jobs.claim(job.job_id, f"split:{job.job_id}", settings.task_time_limit + 60, unless=settled,
                              mark={"state": JobState.SPLITTING, "filename": job.filename, "storage": job.storage})
    state = record.get("state")
    if state in settled:
        if lock is not None:
            jobs.release(lock)
        return {"job_id": job.job_id, "skipped": f"already {state}"}
    if lock is None:
        return {"job_id": job.job_id, "skipped": "already splitting"}
    leases: list[Lock] = []  # this task's claim on collecting the document with its ranges
    try:
        def start_ranges(left: list[tuple[int, int]]) -> None:  # before this task reads its own pages
            if may_stream and streams(job, settings) and (lease := stream.lease(job.job_id)) is not None:
                leases.append(lease)
            dispatch_ranges(spec, job.job_id, left, settings.split_range_queue)

        outcome = split_document(job, settings, on_ranges=start_ranges, ahead=ahead)
        log.info("job %s: %d pages, %d accepted from the text layer, pending %s",  # no file names at INFO
                 job.job_id, outcome.page_count, outcome.accepted, outcome.pending)
        if outcome.error:
            jobs.update(job.job_id, state=JobState.ERROR, status="error", error_code=outcome.error["code"],
                        error_message=outcome.error["message"])
            jobs.announce({"job_id": job.job_id, "status": "error", "error": outcome.error, "storage": job.storage})
            return outcome.as_dict()
        if outcome.held is not None:  # decided whole here, nothing climbs: collected in place
            finish_held(spec, outcome.held, record, outcome.accepted, lock)
            return outcome.as_dict()
        if outcome.ranges:  # a big document: the other ranges already run as a chord on every core
            jobs.update(job.job_id, pages=outcome.page_count)
            jobs.page_done(job.job_id, outcome.accepted)
            if leases and not outcome.pending:  # collected here as they come in, or by split_done
                waiter = stream.Waiter(job.job_id, leases.pop(), {1}, queue="split", idle_s=60.0,
                                       budget_s=settings.task_soft_time_limit / 2)
                collect_streaming(spec, waiter)
            return outcome.as_dict()
        jobs.update(job.job_id, state=JobState.OCR if outcome.pending else JobState.COLLECTING,
                    pages=outcome.page_count, pages_done=outcome.accepted)
        dispatch(spec, outcome, settings.vlm.batch_size)
        return outcome.as_dict()
    finally:
        for lease in leases:  # not collecting after all (its own pages climb, or it failed)
            jobs.release(lease)
        jobs.release(lock)


def streams(job: JobSpec, settings: Settings) -> bool:
    """Whether a document of several ranges is collected by its split task as they come in: not
    with structure on (its blocks need every range first), nor where the range tasks share the
    split queue (they would wait behind the split task that waits for them)."""
    return settings.stream_collect and settings.split_range_queue != "split" and \
        not parse_options(job.options).structure


def dispatch(spec: dict, outcome: SplitOutcome, gpu_batch: int) -> None:
    """One chord per document: a CPU task per page, GPU tasks per batch; the collector as body."""
    from tasks.ocr import ocr_cpu, ocr_gpu

    job_id = outcome.job_id
    hidden = _hidden(job_id)
    header = [ocr_cpu.si(spec, [n]).set(task_id=f"{job_id}-p{n}", **hidden) for n in outcome.pending.get("cpu", [])]
    gpu_pages = outcome.pending.get("gpu", [])
    for i in range(0, len(gpu_pages), gpu_batch):
        batch = gpu_pages[i:i + gpu_batch]
        header.append(ocr_gpu.si(spec, batch).set(task_id=f"{job_id}-g{batch[0]}", **hidden))
    body = collect.si(spec).set(task_id=f"{job_id}-collect", **hidden).on_error(_after_error(spec))
    if header:
        chord(header)(body)
        return
    try:  # nothing climbs (a document of several ranges): collect here and now, not in a second task
        _finish(spec, final_attempt=False)
    except PagesMissing:
        body.apply_async()


def dispatch_ranges(spec: dict, job_id: str, left: list[tuple[int, int]], queue: str) -> None:
    """A chord of range tasks (rung 1 for the pages the split task leaves); `split_done` merges
    them with the split task's own range (pages 1 .. the first range's start - 1)."""
    hidden = _hidden(job_id)
    header = [split_range.si(spec, first, last).set(task_id=f"{job_id}-r{first}", queue=queue, **hidden)
              for first, last in left]
    body = split_done.s(spec, [1, left[0][0] - 1]).set(task_id=f"{job_id}-ranges", **hidden)
    chord(header)(body.on_error(_after_error(spec)))


@task("pagefleet.split_range")
def split_range(spec: dict, first: int, last: int) -> dict:
    job = JobSpec.model_validate(spec)
    settings = get_settings()
    outcome = split_pages(job, first, last, settings)
    jobs.page_done(job.job_id, outcome.accepted, stored_range=first if streams(job, settings) else None)
    return outcome.as_dict()


@task("pagefleet.split_done", bind=True, max_retries=3000)
def split_done(self, results: list[dict], spec: dict, head: list[int]) -> dict:
    """Every range is decided: with structure on, the ranges get their blocks (a chord of
    `structure_range` tasks, one per range, on every core); then the pages that climb go out as
    the document's OCR chord."""
    job = JobSpec.model_validate(spec)
    if stream.held(job.job_id):  # its split task collects it as the ranges come in: soon done
        raise self.retry(countdown=0.1)
    if (state := jobs.get(job.job_id).get("state")) in jobs.TERMINAL:
        return {"job_id": job.job_id, "skipped": f"already {state}"}
    settings = get_settings()
    own = head_outcome(job, head[0], head[1], settings)
    if own is None:  # the split task is still deciding its own pages
        raise self.retry(countdown=0.2)
    outcomes = [own, *(work.RangeOutcome.from_dict(r) for r in results)]
    accepted, pending = ranges.merge(outcomes)
    outcome = SplitOutcome(job.job_id, page_count=max(o.last for o in outcomes), accepted=accepted, pending=pending)
    if parse_options(job.options).structure:  # blocks need every page's layout: now they are all in
        layout, todo = structure_plan(job, settings)
        if todo:
            dispatch_structure(spec, outcome, layout, todo, settings.split_range_queue)
            return outcome.as_dict()
    return _climb(spec, outcome)


def dispatch_structure(spec: dict, outcome: SplitOutcome, layout: DocumentLayout, todo: list[tuple[int, int]],
                       queue: str) -> None:
    """A chord of structure tasks, one per range still without blocks (each gets the document's
    font statistics and its own pages' furniture); `ranges_structured` sends the OCR chord."""
    job_id = outcome.job_id
    hidden = _hidden(job_id)
    header = [structure_range.si(spec, first, last, layout.as_dict(range(first, last + 1)))
              .set(task_id=f"{job_id}-s{first}", queue=queue, **hidden) for first, last in todo]
    body = ranges_structured.si(spec, outcome.as_dict()).set(task_id=f"{job_id}-structured", **hidden)
    chord(header)(body.on_error(_after_error(spec)))


@task("pagefleet.structure_range")
def structure_range(spec: dict, first: int, last: int, layout: dict) -> dict:
    job = JobSpec.model_validate(spec)
    structure_pages(job, first, last, DocumentLayout.from_dict(layout), get_settings())
    return {"job_id": job.job_id, "range": [first, last]}


@task("pagefleet.ranges_structured")
def ranges_structured(spec: dict, outcome: dict) -> dict:
    """Every range has its blocks: the pages that climb go out as the document's OCR chord."""
    return _climb(spec, SplitOutcome(outcome["job_id"], page_count=outcome["page_count"],
                                     accepted=outcome["accepted"], pending=outcome["pending"]))


def _climb(spec: dict, outcome: SplitOutcome) -> dict:
    jobs.update(outcome.job_id, state=JobState.OCR if outcome.pending else JobState.COLLECTING,
                pages_done=outcome.accepted)
    dispatch(spec, outcome, get_settings().vlm.batch_size)
    return outcome.as_dict()


def _hidden(job_id: str) -> dict[str, str]:
    """Task labels that name the job only: task events and Flower never show file names."""
    return {"argsrepr": f"(job {job_id})", "kwargsrepr": "{}"}


def _after_error(spec: dict) -> Any:
    """A document chord's error callback (collect what there is, record the failure)."""
    return collect_after_error.si(spec).set(**_hidden(spec["job_id"]))
