"""A document's collection as a job: one collect of a job at a time (an owned lock), the job's
state and its notice. The chord body (`pagefleet.collect`), its error callback and the watchdog's
`pagefleet.collect_final` run `finish`; a split task that collects a big document while its ranges
come in runs `collect_streaming`, and one that decided a document whole runs `finish_held`.

Nothing here finalizes a document with missing pages unless asked to (`final_attempt`): a page may
still be redelivered or running.
"""

from __future__ import annotations

import logging

from redis.lock import Lock

from pagefleet.workers import metrics
from pagefleet.workers.collect.document import Held, PagesMissing, collect_document, collect_held
from pagefleet.workers.collect.stream import Abandoned, Waiter
from pagefleet.workers.fleet import jobs
from pagefleet.workers.fleet.jobs import JobState
from pagefleet.workers.model import JobSpec
from pagefleet.workers.notify import call_back, notice_for, notify
from pagefleet.workers.settings import Settings, get_settings

log = logging.getLogger(__name__)


def finish(spec: dict, *, final_attempt: bool) -> dict:
    """Collect a job whose pages are all in (the chord's body, the watchdog's last word); a job
    already done or being collected is skipped. Raises PagesMissing while a page is not recorded
    (unless `final_attempt`: missing pages are then `failed`)."""
    job = JobSpec.model_validate(spec)
    settings = get_settings()
    if jobs.get(job.job_id).get("state") == JobState.DONE:
        return {"job_id": job.job_id, "skipped": "already done"}
    lock = collect_lock(job, settings)
    if lock is None:
        return {"job_id": job.job_id, "skipped": "already collecting"}
    try:
        return _collect(job, settings, final_attempt)
    finally:
        jobs.release(lock)


def collect_lock(job: JobSpec, settings: Settings) -> Lock | None:
    """One collect of a job at a time (`finish`, `collect_streaming`)."""
    return jobs.acquire(f"collect:{job.job_id}", settings.limits.task_time_limit + 60)


def _collect(job: JobSpec, settings: Settings, final_attempt: bool) -> dict:
    if jobs.get(job.job_id).get("state") == JobState.DONE:  # finished while we waited
        return {"job_id": job.job_id, "skipped": "already done"}
    # `collecting` (and the watchdog's clock) only once every page is there: a collect that waits
    # for missing pages is no progress
    result = collect_document(
        job,
        settings,
        final_attempt=final_attempt,
        on_complete=lambda: jobs.update(job.job_id, state=JobState.COLLECTING),
    )
    return _done(job, result, None)


def collect_streaming(spec: dict, waiter: Waiter) -> dict | None:
    """A document of several ranges collected by its split task as the range tasks store them
    (`pagefleet.workers.collect.stream`); None where it gave up, having written nothing (`split_done` collects it
    then). The collect lock is taken once every page is in, as `finish` takes it."""
    job = JobSpec.model_validate(spec)
    settings = get_settings()
    locks: list[Lock] = []

    def complete() -> None:
        lock = collect_lock(job, settings)
        if lock is None:
            raise Abandoned("another collect runs")
        locks.append(lock)
        if jobs.get(job.job_id).get("state") == JobState.DONE:
            raise Abandoned("already done")
        jobs.update(job.job_id, state=JobState.COLLECTING)

    try:
        result = collect_document(
            job, settings, final_attempt=False, on_complete=complete, ready=waiter.ready
        )
        return _done(job, result, None)
    except (Abandoned, PagesMissing) as exc:
        log.info("job %s: collected after its ranges instead (%s)", job.job_id, exc)
    except Exception as exc:  # noqa: BLE001 - the chord's body collects it as before
        log.warning(
            "job %s: collecting with the ranges failed (%s: %s); collected after them",
            job.job_id,
            type(exc).__name__,
            exc,
        )
    finally:
        for lock in locks:
            jobs.release(lock)
        waiter.end()  # after the job is marked done: `split_done` then finds it done
    return None


def finish_held(
    spec: dict, held: Held, record: dict[str, str], accepted: int, lock: Lock | None
) -> dict:
    """A document its split task decided whole, collected in place from memory (`Held`), under
    the split task's `lock`: no collect task exists for it, so none takes the collect lock, and its
    state stays `splitting` until it is done — a split that dies here is redelivered, or re-sent
    by the watchdog, and does it all again. Done, notice, metrics and the lock's release go in
    one round trip."""
    job = JobSpec.model_validate(spec)
    result, counted = collect_held(job, get_settings(), held)
    notice = notice_for(job, result, record.get("run", ""))
    keys, args = metrics.counted_once(job.job_id, *counted)
    jobs.done(
        job.job_id,
        notice,
        lock=lock,
        script=(metrics.COUNT_ONCE, keys, args),
        **_finished(job, result),
        pages=result["page_count"],
        pages_done=accepted,
    )
    call_back(job, notice)
    return result


def _done(job: JobSpec, result: dict, run: str | None) -> dict:
    jobs.update(job.job_id, state=JobState.DONE, **_finished(job, result))
    notify(job, result, run=run)
    return result


def _finished(job: JobSpec, result: dict) -> dict[str, str]:
    """A collected document's last fields on its job record (logged: no file names at INFO)."""
    log.info("job %s: %s %s", job.job_id, result["status"], result["routes"])
    return {
        "status": result["status"],
        "routes": result["routes"],
        "artifact_prefix": result["artifact_prefix"],
        "review": result.get("review"),
    }  # reviewed / pending / rejected pages when the document has a review.json
