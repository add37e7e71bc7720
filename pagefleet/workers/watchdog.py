"""The per-job deadline watchdog: no job stays in a non-final state forever.

A job in any non-final state (`queued`, `splitting`, `ocr`, `collecting`) whose last progress is
older than the deadline (`limits.job_deadline_minutes`) is stalled: a lost split message, a
split killed mid-way, a lost chord header, a chord that never fired, a collect that gave up while
S3 was down. The watchdog first re-dispatches what is missing — the split, the OCR of pages that
have no record (as a new chord whose body is the collector), or the collect — up to
`limits.max_redispatch` times. Only then is the job finished: the collector runs with what
exists (missing pages become `failed` pages), or a job that never got through its split gets an
`aborted` error.json, and a dead-letter record is written either way (`pagefleet deadletter`).

Runs as its own process, apart from every worker (compose's `watchdog` service, k8s/base/watchdog.yaml),
so a dead collect worker does not take it along; a broker that does not answer skips a sweep, never
ends the process. A Celery beat schedule (`pagefleet.watchdog`, see pagefleet/workers/app.py) can send the same
sweep to the collect queue instead:

    pagefleet watchdog [--once] [--interval S] [--deadline-minutes M]
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from typing import Any

import redis
from rich.console import Console

from pagefleet.workers.fleet import jobs
from pagefleet.workers.store import keys, work
from pagefleet.workers.errors import AbortedError, BrokerUnavailable, StorageError
from pagefleet.workers.fleet.jobs import JobState
from pagefleet.workers.model import JobSpec
from pagefleet.workers.settings import LimitsSettings, Settings, get_settings
from pagefleet.workers.store.storage import open_storage

log = logging.getLogger(__name__)
NONFINAL = (JobState.QUEUED, JobState.SPLITTING, JobState.OCR, JobState.COLLECTING)
SPLIT_STATES = (JobState.QUEUED, JobState.SPLITTING)


def stalled(deadline_s: float, now: float | None = None) -> list[str]:
    """Jobs in a non-final state whose last update is older than the deadline."""
    now = time.time() if now is None else now
    r = jobs.client()
    found = []
    for job_id in r.zrangebyscore(jobs.ACTIVE, 0, now - deadline_s):
        info = jobs.get(job_id, r)
        if info.get("state") in NONFINAL and info.get("spec"):
            found.append(job_id)
    return found


def missing_pages(job: JobSpec, info: dict[str, str], settings: Settings) -> dict[str, list[int]]:
    """Pages without a record, by the queue their pending record names."""
    storage = open_storage(job.storage, settings)
    missing: dict[str, list[int]] = {}
    try:  # the ranges' objects and the OCR'd pages (pagefleet/workers/store/work.py)
        manifest = storage.get_json(keys.job_manifest(job.job_id))
        recorded = {
            n
            for n, record in work.iter_records(storage, job.job_id, manifest)
            if record is not None
        }
    except KeyError:
        recorded = set()
    for number in range(1, int(info.get("pages") or 0) + 1):
        if number in recorded or storage.exists(keys.page(job.job_id, number)):
            continue
        try:
            queue = work.pending_page(storage, job.job_id, number).queue
        except KeyError:
            queue = "gpu" if settings.gpu.enabled else "cpu"
        missing.setdefault(queue, []).append(number)
    return missing


def sweep(deadline_s: float | None = None, now: float | None = None) -> list[tuple[str, str]]:
    """One pass: (job id, what was done) for every stalled job."""
    settings = get_settings()
    rel = settings.limits
    if (
        deadline_s is None
    ):  # never shorter than the visibility timeout: no task of the job can still run
        deadline_s = max(rel.deadline_s, settings.broker.visibility_for(rel.task_time_limit))
    done = []
    for job_id in stalled(deadline_s, now):
        lock = jobs.acquire(f"watchdog:{job_id}", max(60, int(deadline_s)))
        if lock is None:
            continue
        try:
            info = jobs.get(job_id)
            if info.get("state") not in NONFINAL:
                continue
            action = _act(job_id, info, settings, rel, deadline_s, now)
        except (StorageError, BrokerUnavailable) as exc:
            log.warning("watchdog: job %s left for the next sweep: %s", job_id, exc)
            continue
        finally:
            jobs.release(lock)
        if action is None:
            continue
        log.warning(
            "watchdog: job %s stalled in %s for > %.0fs: %s",
            job_id,
            info.get("state"),
            deadline_s,
            action,
        )
        done.append((job_id, action))
    return done


def backlogged(queues: list[str], deadline_s: float, now: float | None = None) -> bool:
    """Work waits in one of these queues while the fleet keeps moving: a job behind a backlog has
    made no progress of its own, but nothing of it is lost (its messages are in the queue)."""
    now = time.time() if now is None else now
    r = jobs.client()
    progress = float(r.get(jobs.PROGRESS) or 0)
    return now - progress < deadline_s and any(r.llen(q) > 0 for q in queues)


def _act(
    job_id: str,
    info: dict[str, str],
    settings: Settings,
    rel: LimitsSettings,
    deadline_s: float,
    now: float | None,
) -> str | None:
    """What to do with one stalled job (None: it only waits behind a backlog)."""
    from pagefleet.workers.app import send

    spec: dict[str, Any] = json.loads(info["spec"])
    job = JobSpec.model_validate(spec)
    tries = int(info.get("redispatched") or 0)
    label = f"(job {job_id})"
    in_split = info.get("state") in SPLIT_STATES
    if not in_split and not open_storage(job.storage, settings).exists(keys.job_manifest(job_id)):
        # past its split, its manifest gone: a collect of this run removed it, or the split never stored it
        if _collected(job, info, settings):
            return "artifacts found: done"
        in_split = True
    if in_split:
        if backlogged(["split"], deadline_s, now):
            return None
        return _split_again(job_id, job, spec, info, settings, tries, rel.max_redispatch)
    missing = missing_pages(job, info, settings)
    if backlogged(list(missing) or ["collect"], deadline_s, now):
        return None
    if tries < rel.max_redispatch:
        jobs.update(job_id, redispatched=tries + 1)
        if missing:
            send("pagefleet.redispatch", [spec, missing], queue="collect", label=label)
            return f"pages re-dispatched: {missing}"
        send(
            "pagefleet.collect",
            [spec],
            queue="collect",
            task_id=f"{job_id}-collect-w{tries + 1}",
            label=label,
        )
        return "collect re-dispatched"
    jobs.dead_letter(
        {
            "job_id": job_id,
            "page": None,
            "reason": "deadline",
            "state": info.get("state"),
            "missing": missing,
            "spec": spec,
        }
    )
    jobs.update(job_id, state=JobState.COLLECTING, watchdog=time.time(), progress=False)
    send("pagefleet.collect_final", [spec], queue="collect", label=label)
    return f"finished with missing pages {missing}, dead-lettered"


def _split_again(
    job_id: str,
    job: JobSpec,
    spec: dict[str, Any],
    info: dict[str, str],
    settings: Settings,
    tries: int,
    max_redispatch: int,
) -> str:
    """A job stalled before its split finished: split again while tries remain, else abandoned."""
    from pagefleet.workers.app import send

    if tries < max_redispatch:
        jobs.update(job_id, state=JobState.QUEUED, redispatched=tries + 1, progress=False)
        jobs.break_lock(f"split:{job_id}")  # its owner is dead: no task outlives the deadline
        send(
            "pagefleet.split",
            [spec],
            queue="split",
            task_id=f"{job_id}-split-w{tries + 1}",
            label=f"(job {job_id})",
        )
        return "split re-dispatched"
    _abandon(job, info, settings)
    return "abandoned: aborted error.json, dead-lettered"


def _collected(job: JobSpec, info: dict[str, str], settings: Settings) -> bool:
    """A job whose artifacts are complete (report.json, stored last) is marked done, not redone."""
    from pagefleet.workers.split.pages import resolve_prefix

    prefix = info.get("artifact_prefix") or resolve_prefix(
        job.artifact_prefix, job.sha256 or None, job.job_id
    )
    try:
        report = open_storage(job.storage, settings).get_json(keys.artifact(prefix, "report.json"))
    except KeyError:
        return False
    jobs.update(
        job.job_id,
        state=JobState.DONE,
        status=report.get("status"),
        artifact_prefix=prefix,
        progress=False,
    )
    jobs.announce({"job_id": job.job_id, "status": report.get("status"), "storage": job.storage})
    return True


def _abandon(job: JobSpec, info: dict[str, str], settings: Settings) -> None:
    """A job that never got through its split: `aborted` error.json, a dead letter, then settled
    as every document that ends in its error.json is (`pagefleet.workers.split.job.settle_error`)."""
    from pagefleet.workers.split.job import settle_error
    from pagefleet.workers.split.pages import write_error

    record = write_error(
        job,
        open_storage(job.storage, settings),
        AbortedError("aborted: the split did not finish within the deadline"),
    )
    jobs.dead_letter(
        {
            "job_id": job.job_id,
            "page": None,
            "reason": "deadline",
            "state": info.get("state"),
            "spec": job.model_dump(mode="json"),
        }
    )
    settle_error(job, record, progress=False)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "watchdog", help="re-dispatch, then finish, jobs that made no progress within the deadline"
    )
    p.add_argument(
        "--once", action="store_true", help="one sweep, then exit (default: sweep every --interval)"
    )
    p.add_argument(
        "--interval",
        type=float,
        help="seconds between sweeps (default: limits.watchdog_interval_s)",
    )
    p.add_argument("--deadline-minutes", type=float, help="default: limits.job_deadline_minutes")
    p.add_argument("--broker", help="Redis broker URL (default: PAGEFLEET_BROKER__URL)")
    p.set_defaults(handler=_handler)


def _handler(args: argparse.Namespace, console: Console) -> int:
    from pagefleet.workers.app import use_broker

    if args.broker:
        use_broker(args.broker)
    rel = get_settings().limits
    deadline_s = args.deadline_minutes * 60 if args.deadline_minutes is not None else rel.deadline_s
    while True:
        try:
            for job_id, action in sweep(deadline_s):
                console.print(f"pagefleet watchdog: job {job_id}: {action}")
        except (BrokerUnavailable, redis.RedisError) as exc:
            if args.once:
                raise BrokerUnavailable(f"watchdog sweep: {exc}") from exc
            # the process that must outlive a broker restart or a full Redis: the next sweep tries again
            log.warning("watchdog: sweep skipped, the broker did not answer: %s", exc)
        if args.once:
            return 0
        time.sleep(args.interval or rel.watchdog_interval_s)
