"""Producers: turn a local path or an S3 object into a job spec and enqueue the split task.

Only ids and keys travel: the spec names the source (a path the workers can read, or
`s3://bucket/key`) and the storage for artifacts. The job id is a hash of the source (its sha256
when we can read it, else bucket/key/ETag/versionId) + pipeline version + options, so the same
upload is the same job; a completed job is not redone unless forced.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import uuid
from pathlib import Path
from typing import Any

from kombu.exceptions import OperationalError

import redis

from pagefleet.workers.errors import BrokerFull, BrokerUnavailable
from pagefleet.workers.fleet.broker import check_room
from pagefleet.workers.fleet import job_runs, jobs
from pagefleet.workers.model import JobSpec
from pagefleet.workers.pdf.source import sha256_file
from pagefleet.workers.settings import Options, Settings
from pagefleet.workers.split import ranges
from pagefleet.workers.store import keys
from pagefleet.workers.store.uri import s3_uri

# a submission of more than BATCH_SPREAD batches of `advanced.split_batch_documents` gets bigger
# batches, up to BATCH_MAX_DOCUMENTS, as many as BATCH_SPREAD: every split worker gets a batch
BATCH_SPREAD = 8
BATCH_MAX_DOCUMENTS = 32


def _spec(identity: str, options: Options, **fields: Any) -> JobSpec:
    """A job spec: the id is the source's identity + pipeline version + options + output target."""
    opts = options.model_dump(mode="json")
    target = f"{fields.get('storage', '')}|{fields.get('artifact_prefix', '')}"
    return JobSpec(job_id=keys.job_id_for(identity, opts, target), options=opts, **fields)


def spec_for_path(
    path: str,
    storage: str,
    artifact_prefix: str,
    options: Options,
    *,
    force: bool = False,
    callback_url: str | None = None,
) -> JobSpec:
    p = Path(path).resolve()
    size = p.stat().st_size
    sha = sha256_file(p) if 0 < size <= options.max_bytes else None
    identity = sha or hashlib.sha256(f"{p}:{size}:{p.stat().st_mtime_ns}".encode()).hexdigest()
    return _spec(
        identity,
        options,
        source=str(p),
        filename=p.name,
        bytes=size,
        storage=storage,
        sha256=sha if size else hashlib.sha256(b"").hexdigest(),
        artifact_prefix=artifact_prefix,
        force=force,
        callback_url=callback_url,
    )


def spec_for_object(
    bucket: str,
    key: str,
    storage: str,
    options: Options,
    *,
    etag: str | None = None,
    version_id: str | None = None,
    size: int | None = None,
    prefix_template: str = "artifacts/{sha256}",
    force: bool = False,
    callback_url: str | None = None,
) -> JobSpec:
    identity = hashlib.sha256(
        f"s3:{bucket}/{key}:{etag or ''}:{version_id or ''}".encode()
    ).hexdigest()
    return _spec(
        identity,
        options,
        source=s3_uri(bucket, key),
        filename=os.path.basename(key) or key,
        bytes=size,
        storage=storage,
        artifact_prefix=prefix_template,
        etag=etag,
        version_id=version_id,
        force=force,
        callback_url=callback_url,
    )


def enqueue(spec: JobSpec) -> str:
    """Durably enqueue the split task (the message is in Redis when this returns)."""
    return enqueue_many([spec])[0]


def batch_size(documents: int, settings: Settings) -> int:
    """Documents a batch of a submission of `documents` holds at most: `split_batch_documents`
    (16), more for a big submission — as many as makes `BATCH_SPREAD` (8) batches, up to
    `BATCH_MAX_DOCUMENTS` (32): 40 documents go as 16 + 16 + 8, 200 as batches of 25, 500
    of 32 (fewer tasks, and fewer ends of a batch where its sandbox child waits). 1: no batches."""
    if settings.advanced.split_batch_documents <= 1:
        return 1
    spread = -(-documents // BATCH_SPREAD)
    return max(settings.advanced.split_batch_documents, min(BATCH_MAX_DOCUMENTS, spread))


def batch_plan(documents: int, settings: Settings, taper: bool = True) -> list[int]:
    """The sizes of a submission's batches in the order they go out: `documents` cut evenly into
    batches of at most `batch_size`, and the last two batches' documents as batches halving in
    size (`ranges.tapered`: 500 → 32 × 4, 31 × 10, then 31, 16, 8, 7) — the split workers take
    batches in turn, and the last one a worker process takes runs while the other may idle.
    `taper=False`: not the last two (a piece of a stream the bridge gathered while the workers
    were busy: more batches come behind it)."""
    size = batch_size(documents, settings)
    if size <= 1:
        return [1] * documents
    even = ranges.even(documents, size)
    return ranges.tapered(even) if taper else even


class _Batches:
    """A submission's messages as they go out: small documents gathered into `split_batch` tasks
    that end where the plan of its small documents says, counted in small documents added, so a
    big document between them (sent alone, after the batch so far) moves no later cut. The cuts
    lie at most `batch_size` apart and a batch starts empty after each, so none grows past it."""

    def __init__(self, small: int, settings: Settings, taper: bool = True) -> None:
        self.cuts = list(
            itertools.accumulate(batch_plan(small, settings, taper))
        )  # one a batch, rising
        self.submission = (
            uuid.uuid4().hex
        )  # its batches may share a sandbox child (`pagefleet.tasks.split.split_batch`)
        self.batch: list[dict[str, Any]] = []
        self.unsent: dict[str, None] = {}  # runs started here whose message has not gone out yet
        self.added = 0  # small documents added so far

    def add(self, payload: dict[str, Any], small: bool) -> None:
        if not small:
            self.flush()  # a big one goes alone, after the batch so far
            self.batch.append(payload)
            self.flush()
            return
        self.batch.append(payload)
        self.added += 1
        if self.cuts and self.added == self.cuts[0]:  # the plan covers every small document once
            self.cuts.pop(0)
            self.flush()

    def flush(self) -> None:
        from pagefleet.workers.app import send

        batch = self.batch
        if len(batch) == 1:
            send(
                "pagefleet.split",
                batch,
                queue="split",
                task_id=f"{batch[0]['job_id']}-split",
                label=f"(job {batch[0]['job_id']})",
            )
        elif batch:
            ids = [p["job_id"] for p in batch]
            name = hashlib.sha256(":".join(ids).encode()).hexdigest()[:24]
            send(
                "pagefleet.split_batch",
                [batch[:], self.submission],
                queue="split",
                task_id=f"batch-{name}",
                label=f"(jobs {', '.join(ids)})",
            )
        for payload in batch:
            self.unsent.pop(payload["job_id"], None)
        batch.clear()


def enqueue_many(specs: list[JobSpec], *, taper: bool = True) -> list[str]:
    """Durably enqueue many documents of one submission. Small ones (`split_batch_max_bytes`) go
    as `pagefleet.split_batch` tasks of up to `batch_size` each (`batch_plan`, with `taper`): a document's fixed
    cost (a task, a sandbox fork, the consumer's hand-over) is paid once a batch. Every document
    stays its own job (own id, state, artifacts, errors); the others go one task each."""
    from pagefleet.workers.settings import get_settings

    settings = get_settings()
    size = batch_size(len(specs), settings)
    small = [
        spec.bytes is not None and spec.bytes <= settings.advanced.split_batch_max_bytes
        for spec in specs
    ]
    out = _Batches(sum(small), settings, taper)
    check_room(jobs.client())  # a job accepted at Redis's memory limit could not run: refuse it now
    try:
        for first in range(
            0, len(specs), size
        ):  # one round trip starts up to a batch's worth of runs
            chunk = specs[first : first + size]
            payloads = [(spec.model_dump(mode="json"), spec.force) for spec in chunk]
            # a finished job is not redone unless forced; a run under way is shared, not doubled
            started = job_runs.start_runs(payloads, stale_after_s=get_settings().limits.deadline_s)
            fresh = [
                (payload, is_small)
                for (payload, _), how, is_small in zip(
                    payloads, started, small[first : first + size], strict=True
                )
                if how == "started"
            ]
            out.unsent.update((payload["job_id"], None) for payload, _ in fresh)
            for payload, is_small in fresh:
                out.add(payload, is_small)
        out.flush()
    except redis.exceptions.OutOfMemoryError as exc:
        job_runs.abandon_runs(list(out.unsent))
        raise BrokerFull(
            f"cannot enqueue {len(specs)} job(s): the broker is full (Redis at maxmemory)"
        ) from exc
    except (OperationalError, OSError) as exc:
        job_runs.abandon_runs(
            list(out.unsent)
        )  # started, never sent: the producer's retry starts and sends them
        raise BrokerUnavailable(
            f"cannot enqueue {len(specs)} job(s): broker unavailable ({exc})"
        ) from exc
    except Exception:
        job_runs.abandon_runs(list(out.unsent))
        raise
    return [spec.job_id for spec in specs]
