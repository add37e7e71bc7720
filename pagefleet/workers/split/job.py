"""A document's split as a job: claimed once (a redelivery or a duplicate finds it settled), split
(`pagefleet.workers.split.pages`), then handed on — its range tasks, its OCR chord, its collection in
place, or its collection while its ranges come in (`pagefleet.workers.collect.stream`). What goes out to the
broker is the caller's (`Dispatch`: the tasks build the chords); this module only decides.
"""

from __future__ import annotations

import logging
from collections import Counter
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from redis.lock import Lock

from pagefleet.workers import metrics
from pagefleet.workers.collect import stream
from pagefleet.workers.collect.finish import collect_streaming, finish_held
from pagefleet.workers.fleet import jobs, liveness
from pagefleet.workers.errors import InputError
from pagefleet.workers.fleet.jobs import JobState
from pagefleet.workers.ladder.structure import DocumentLayout
from pagefleet.workers.model import JobSpec
from pagefleet.workers.settings import Settings, get_settings
from pagefleet.workers.split import ranges
from pagefleet.workers.split.pages import (
    Head,
    SplitOutcome,
    head_outcome,
    parse_options,
    split_document,
    structure_plan,
    write_error,
)
from pagefleet.workers.store import work
from pagefleet.workers.store.storage import open_storage

log = logging.getLogger(__name__)


class Dispatch(Protocol):
    """What a split hands to the broker (`pagefleet.tasks.chords`)."""

    def dispatch(self, spec: dict, outcome: SplitOutcome, gpu_batch: int) -> None:
        """The document's OCR chord (or its collection, when nothing climbs)."""

    def dispatch_ranges(
        self, spec: dict, job_id: str, left: list[tuple[int, int]], queue: str
    ) -> None:
        """A chord of range tasks for the pages the split task leaves."""


def streams(job: JobSpec, settings: Settings) -> bool:
    """Whether a document of several ranges is collected by its split task as they come in: not
    with structure on (its blocks need every range first), nor where the range tasks share the
    split queue (they would wait behind the split task that waits for them)."""
    return (
        settings.advanced.stream_collect
        and settings.advanced.split_range_queue != "split"
        and not parse_options(job.options).structure
    )


def split_one(
    spec: dict,
    send: Dispatch,
    may_stream: bool = True,
    ahead: Callable[[], Head] | None = None,
    task_id: str = "",
) -> dict:
    """Rung 1 for one document: validate, read every page of the split task's own range (a big
    document's other ranges go out as a chord first, and with `may_stream` this task then collects
    it as they come in: `pagefleet.workers.collect.stream`), then its OCR chord or, when nothing climbs, its
    collection in place. `ahead`: the document's head, read beforehand (`split_batch`); a document
    skipped here ignores it (a cached S3 source it fetched goes when idle: `fetch.prune`). `task_id`:
    the message this split runs for (a lock an earlier delivery of it left is taken over)."""
    job = JobSpec.model_validate(spec)
    settings = get_settings()
    settled = (
        JobState.OCR,
        JobState.COLLECTING,
        *jobs.TERMINAL,
    )  # a redelivery or a duplicate finds these
    record, lock = _claim(job, settings, settled, task_id)
    state = record.get("state")
    if state in jobs.TERMINAL or (
        state in settled and record.get(SENT)
    ):  # past the split, its chord out
        if lock is not None:
            jobs.release(lock)
        return {"job_id": job.job_id, "skipped": f"already {state}"}
    if lock is None:  # its owner lives, as far as anyone knows yet: the task asks again soon
        return {"job_id": job.job_id, "skipped": "already splitting", "retry_in": HELD_RETRY_S}
    sent = f"ranges:{record.get('redispatched') or 0}"  # this run's range chord is out (a watchdog re-split sends anew)
    leases: list[Lock] = []  # this task's claim on collecting the document with its ranges
    try:

        def start_ranges(
            left: list[tuple[int, int]],
        ) -> None:  # before this task reads its own pages
            if record.get(
                sent
            ):  # a split that died sent them: its chord waits for this task's manifest
                stream.stop(job.job_id)  # the dead split's lease: `split_done` collects
                return
            if (
                may_stream
                and streams(job, settings)
                and (lease := stream.lease(job.job_id)) is not None
            ):
                leases.append(lease)
            send.dispatch_ranges(spec, job.job_id, left, settings.advanced.split_range_queue)
            jobs.update(
                job.job_id, **{sent: 1}
            )  # after the send: a death between them sends twice, never never

        outcome = split_document(job, settings, on_ranges=start_ranges, ahead=ahead)
        return _hand_on(spec, job, outcome, record, lock, leases, send, settings)
    finally:
        for lease in leases:  # not collecting after all (its own pages climb, or it failed)
            jobs.release(lease)
        jobs.release(lock)


# set once the document's OCR chord (or its collection) went out (`pagefleet.tasks.chords.dispatch`): a job in
# `ocr` or `collecting` without it lost its split between the state and the send, and is split again
SENT = "chord_sent"
HELD_RETRY_S = 3.0  # a split that finds the job's lock taken asks again after this (`owner_dead`)


def held_retries(settings: Settings) -> int:
    """How often a split that finds the job held asks again: until a dead owner's worker is seen dead."""
    return math.ceil(settings.broker.worker_dead_after_s / HELD_RETRY_S) + 2


def _claim(
    job: JobSpec, settings: Settings, settled: tuple[str, ...], task_id: str
) -> tuple[dict[str, str], Lock | None]:
    """The job's split lock and its record (`jobs.claim`), the claim naming its owner. A lock whose
    owner is dead (a pool process killed mid-split, a worker gone: `liveness.owner_dead`) is taken
    over at once: the redelivered split does the work, not the watchdog at the job's deadline."""
    name = f"split:{job.job_id}"
    for _ in range(2):
        mark = {
            "state": JobState.SPLITTING,
            "filename": job.filename,
            "storage": job.storage,
            "split_owner": liveness.owner(task_id),
        }
        record, lock = jobs.claim(
            job.job_id, name, settings.limits.task_time_limit + 60, unless=settled, mark=mark
        )
        if (
            lock is not None
            or record.get("state") in jobs.TERMINAL
            or not liveness.owner_dead(record.get("split_owner"), task_id)
        ):
            break
        log.warning("job %s: the split that held it is dead: taken over", job.job_id)
        jobs.break_lock(name)
    return record, lock


def _hand_on(
    spec: dict,
    job: JobSpec,
    outcome: SplitOutcome,
    record: dict[str, str],
    lock: Lock,
    leases: list[Lock],
    send: Dispatch,
    settings: Settings,
) -> dict:
    """What follows a document's split: its error recorded, its collection in place, its collection
    while its ranges come in, or its OCR chord."""
    log.info(
        "job %s: %d pages, %d accepted from the text layer, pending %s",  # no file names at INFO
        job.job_id,
        outcome.page_count,
        outcome.accepted,
        outcome.pending,
    )
    if outcome.error:
        settle_error(job, outcome.error)
        return outcome.as_dict()
    if outcome.held is not None:  # decided whole here, nothing climbs: collected in place
        finish_held(spec, outcome.held, record, outcome.accepted, lock)
        return outcome.as_dict()
    if outcome.ranges:  # a big document: the other ranges already run as a chord on every core
        jobs.update(job.job_id, pages=outcome.page_count)
        jobs.page_done(job.job_id, outcome.accepted)
        if leases and not outcome.pending:  # collected here as they come in, or by split_done
            waiter = stream.Waiter(
                job.job_id,
                leases.pop(),
                {1},
                queue="split",
                idle_s=60.0,
                budget_s=settings.limits.task_soft_time_limit / 2,
            )
            collect_streaming(spec, waiter)
        return outcome.as_dict()
    jobs.update(
        job.job_id,
        state=JobState.OCR if outcome.pending else JobState.COLLECTING,
        pages=outcome.page_count,
        pages_done=outcome.accepted,
    )
    send.dispatch(spec, outcome, settings.gpu.vlm.batch_size)
    return outcome.as_dict()


def settle_error(job: JobSpec, error: dict[str, str], **fields: Any) -> None:
    """A document that ends in its `error.json` (written): its record final, its notice, and its
    count in the metrics (`documents_total{status="error"}`, once a job)."""
    jobs.update(
        job.job_id,
        state=JobState.ERROR,
        status="error",
        error_code=error["code"],
        error_message=error["message"],
        **fields,
    )
    jobs.announce({"job_id": job.job_id, "status": "error", "error": error, "storage": job.storage})
    metrics.Recorder().document(job.job_id, "error", Counter(), {})


def refuse(job: JobSpec, exc: InputError, settings: Settings | None = None) -> dict[str, str]:
    """A job that ends before any task runs it (its source is gone: the receiver's HEAD): its
    typed `error.json` where its artifacts would go, then as `settle_error`."""
    record = write_error(job, open_storage(job.storage, settings or get_settings()), exc)
    settle_error(job, record, filename=job.filename, storage=job.storage, source=job.source)
    return record


class NotYet(Exception):
    """Asked too early: the caller tries again in `countdown` seconds."""

    def __init__(self, countdown: float) -> None:
        super().__init__(f"not yet: again in {countdown}s")
        self.countdown = countdown


@dataclass
class RangesIn:
    """A big document once every range is decided: its merged outcome, and the ranges still without
    blocks (with the document's layout) when structure is on."""

    outcome: SplitOutcome
    layout: DocumentLayout | None = None
    todo: list[tuple[int, int]] = field(default_factory=list)
    skipped: dict[str, Any] | None = None


def ranges_in(spec: dict, results: list[dict], head: list[int]) -> RangesIn:
    """Every range task is done (`pagefleet.split_done`): their outcomes merged with the split
    task's own range. Raises NotYet while the split task collects the document as the ranges come
    in (it is soon done) or still decides its own pages."""
    job = JobSpec.model_validate(spec)
    if stream.held(job.job_id):
        raise NotYet(0.1)
    if (state := jobs.get(job.job_id).get("state")) in jobs.TERMINAL:
        return RangesIn(
            SplitOutcome(job.job_id), skipped={"job_id": job.job_id, "skipped": f"already {state}"}
        )
    settings = get_settings()
    own = head_outcome(job, head[0], head[1], settings)
    if own is None:
        raise NotYet(0.2)
    outcomes = [own, *(work.RangeOutcome.from_dict(r) for r in results)]
    accepted, pending = ranges.merge(outcomes)
    done = RangesIn(
        SplitOutcome(
            job.job_id, page_count=max(o.last for o in outcomes), accepted=accepted, pending=pending
        )
    )
    if parse_options(job.options).structure:  # blocks need every page's layout: now they are all in
        done.layout, done.todo = structure_plan(job, settings)
    return done


def climbing(outcome: SplitOutcome) -> bool:
    """The job's state once its pages go out to the OCR stage (or straight to collection); False,
    and nothing changed, for a job already final (a second chain of a document: nothing to send)."""
    if jobs.get(outcome.job_id).get("state") in jobs.TERMINAL:
        return False
    jobs.update(
        outcome.job_id,
        state=JobState.OCR if outcome.pending else JobState.COLLECTING,
        pages_done=outcome.accepted,
    )
    return True
