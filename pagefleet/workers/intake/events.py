"""Bucket events → jobs: an exactly-once-per-upload enqueue on top of at-least-once delivery,
shared by the HTTP receiver and the Redis bridge (the parser: `pagefleet.workers.intake.parse`).

Deduplication: the job id already hashes bucket/key/ETag/versionId (+ options), so a marker
`pagefleet:event:<job_id>` in the broker's Redis says "this upload was enqueued", and a
redis-py `Lock` on `pagefleet:event-claim:<job_id>` (an owned SET NX PX; release and expiry
checked against the owner's token by redis-py's own scripts) says "someone is enqueueing it":

    GET marker                    → "enqueued…": a duplicate
    Lock(claim).acquire(non-blocking, timeout=claim_ttl)  → held elsewhere: "in progress"
    GET marker again              → enqueued meanwhile: a duplicate
    enqueue the split task (durable in Redis when it returns)
    SET marker "enqueued:<time>" EX dedup_ttl; release the lock
    on failure: release the lock (only if still ours), so a retry can succeed

A duplicate that arrives while the first delivery is still enqueueing gets "in progress" (a
non-2xx, so the sender retries) rather than a 2xx: a 2xx promises the job is enqueued. A Redis
that refuses writes (maxmemory with noeviction: OOM; a read-only replica) or cannot be reached
raises `BrokerUnavailable`: the receiver answers 503 and the sender replays.

Every object is looked up (a HEAD of the event's version, else of its key) before the event is
answered. One that is gone ends at once in a typed `error.json` (`source_missing`; `source_changed`
when it no longer has the event's ETag) where its artifacts would go, its job record `error` and
counted in the metrics, so the answer can be a 2xx that says so (`refused`) and nothing is retried.
"""

from __future__ import annotations

import enum
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import redis
from redis.exceptions import LockError

from pagefleet.workers.errors import (
    BrokerFull,
    BrokerUnavailable,
    InputError,
    PagefleetError,
    SourceChangedError,
)
from pagefleet.workers.intake.parse import (
    EventFilter,
    ObjectCreated,
    clean_etag,
    output_exclusion,
    parse_body,
    parse_event_payload,
)
from pagefleet.workers.model import JobSpec
from pagefleet.workers.pdf.fetch import missing
from pagefleet.workers.settings import EventSettings, Options

log = logging.getLogger(__name__)

MARKER = "pagefleet:event:{job_id}"
CLAIM = "pagefleet:event-claim:{job_id}"
# Redis errors that mean "not now": unreachable, or refusing writes (OOM under noeviction, a
# read-only replica, still loading its data set)
REDIS_UNAVAILABLE: tuple[type[BaseException], ...] = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.exceptions.OutOfMemoryError,
    redis.exceptions.ReadOnlyError,
    redis.exceptions.BusyLoadingError,
    redis.exceptions.MasterDownError,
)


@contextmanager
def redis_guard(what: str) -> Iterator[None]:
    """Redis errors that a retry can fix → `BrokerUnavailable` (with what Redis said)."""
    try:
        yield
    except REDIS_UNAVAILABLE as exc:
        if isinstance(exc, redis.exceptions.OutOfMemoryError):
            raise BrokerFull(f"the broker is full (Redis at maxmemory) ({what}): {exc}") from exc
        refuses = isinstance(exc, redis.exceptions.ReadOnlyError)
        raise BrokerUnavailable(
            f"redis {'refuses writes' if refuses else 'unavailable'} ({what}): {exc}"
        ) from exc


class EventConfigError(PagefleetError):
    """The receiver is misconfigured (no output, no token, …): it refuses to start."""

    code = "invalid_config"


class Outcome(str, enum.Enum):
    ENQUEUED = "enqueued"
    DUPLICATE = "duplicate"
    IN_PROGRESS = "in_progress"


class EventDedup:
    """The per-upload marker and claim in Redis (see the module docstring for the protocol)."""

    def __init__(
        self, client: redis.Redis, *, claim_ttl_s: int = 120, dedup_ttl_s: int = 7 * 86400
    ) -> None:
        self.client = client
        self.claim_ttl_s = claim_ttl_s
        self.dedup_ttl_s = dedup_ttl_s

    def key(self, job_id: str) -> str:
        return MARKER.format(job_id=job_id)

    def state(self, job_id: str) -> str | None:
        with redis_guard("read marker"):
            value = self.client.get(self.key(job_id))
        return value.decode() if isinstance(value, bytes) else value

    def _enqueued(self, job_id: str) -> bool:
        return (self.state(job_id) or "").startswith("enqueued")

    def enqueue_once(self, job_id: str, enqueue: Callable[[], Any]) -> Outcome:
        return self.enqueue_once_many([job_id], lambda _: enqueue())[0]

    def enqueue_once_many(
        self, job_ids: list[str], enqueue: Callable[[list[int]], Any]
    ) -> list[Outcome]:
        """The protocol above for several uploads at once (the bridge's batch of elements): each
        is checked and claimed in turn, `enqueue` gets the indexes of those to enqueue — all in
        one call, so a submission's small documents go in batches — then each is marked and
        every claim released. An upload named twice is enqueued once."""
        outcomes: list[Outcome | None] = [None] * len(job_ids)
        claims: dict[str, Any] = {}
        try:
            for i, job_id in enumerate(job_ids):
                if job_id in claims or self._enqueued(job_id):
                    outcomes[i] = Outcome.DUPLICATE
                    continue
                claim = self.client.lock(
                    CLAIM.format(job_id=job_id), timeout=self.claim_ttl_s, blocking=False
                )
                with redis_guard("claim"):
                    if not claim.acquire():
                        outcomes[i] = Outcome.IN_PROGRESS
                        continue
                claims[job_id] = claim
                if self._enqueued(
                    job_id
                ):  # finished by another delivery between our GET and the claim
                    outcomes[i] = Outcome.DUPLICATE
            todo = [i for i, outcome in enumerate(outcomes) if outcome is None]
            if todo:
                with redis_guard("enqueue"):
                    enqueue(todo)
            for i in todo:
                self._mark(job_ids[i])
                outcomes[i] = Outcome.ENQUEUED
            return [outcome or Outcome.DUPLICATE for outcome in outcomes]
        finally:
            for claim in claims.values():
                _release(claim)

    def _mark(self, job_id: str) -> None:
        try:
            self.client.set(self.key(job_id), f"enqueued:{time.time():.3f}", ex=self.dedup_ttl_s)
        except redis.RedisError as exc:
            # The job *is* enqueued; only the marker is missing. A later duplicate may enqueue it
            # again once the claim is released, and the split task skips a job that is already done.
            log.warning("job %s enqueued but its dedup marker was not written: %s", job_id, exc)


def _release(claim: Any) -> None:
    try:
        claim.release()
    except LockError as exc:  # expired (claim_ttl_s passed) or taken over: not ours to delete
        log.warning("event claim %s was no longer ours: %s", claim.name, exc)
    except redis.RedisError as exc:  # the claim expires by itself after claim_ttl_s
        log.warning("could not release event claim %s: %s", claim.name, exc)


@dataclass
class IntakeResult:
    enqueued: list[dict[str, Any]] = field(default_factory=list)
    duplicates: list[dict[str, Any]] = field(default_factory=list)
    in_progress: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(
        default_factory=list
    )  # ended at once in a typed error.json

    @property
    def retry_later(self) -> bool:
        return bool(self.in_progress)

    @property
    def accepted(self) -> bool:
        """Some object of the event is (or already was) a job that runs."""
        return bool(self.enqueued or self.duplicates or self.in_progress)

    def summary(self) -> dict[str, Any]:
        out = {
            "accepted": self.accepted,
            "enqueued": self.enqueued,
            "duplicates": self.duplicates,
            "in_progress": self.in_progress,
            "skipped": self.skipped,
            "refused": self.refused,
        }
        if not self.accepted and self.refused:
            out["reason"] = self.refused[0]["code"]
        return out


Enqueue = Callable[
    [list[JobSpec], bool], Any
]  # one call for the objects of a submission (+ taper its batches)
Head = Callable[
    [str, str, "str | None"], "tuple[int, str | None] | None"
]  # (size, ETag) by HEAD; None: gone


class Intake:
    """Created objects → deduplicated jobs. Shared by the HTTP receiver and the Redis bridge."""

    def __init__(
        self,
        *,
        output: str,
        options: Options,
        dedup: EventDedup,
        filters: EventFilter,
        prefix_template: str = "artifacts/{sha256}",
        callback_url: str | None = None,
        enqueue: Enqueue | None = None,
        head: Head | None = None,
    ) -> None:
        self.output = output
        self.options = options
        self.dedup = dedup
        self.filters = filters
        self.prefix_template = prefix_template
        self.callback_url = callback_url
        self._enqueue = enqueue or _enqueue_many
        self._head = head

    def spec_for(self, obj: ObjectCreated) -> JobSpec:
        from pagefleet.workers.split.submit import spec_for_object

        return spec_for_object(
            obj.bucket,
            obj.key,
            self.output,
            self.options,
            etag=obj.etag,
            version_id=obj.version_id,
            size=obj.size,
            prefix_template=self.prefix_template,
            callback_url=self.callback_url,
        )

    def _checked(self, obj: ObjectCreated) -> tuple[ObjectCreated, InputError | None]:
        """The object as the store has it now (a HEAD of the event's version, else of its key),
        before the event is answered: `source_missing` when it is gone, `source_changed` when it no
        longer has the event's ETag (the newer upload has its own event). An event without ETag or
        version gets the store's ETag: else every upload to a key would be the same job."""
        if self._head is None:
            return obj, None
        found = self._head(obj.bucket, obj.key, obj.version_id)
        if found is None:
            return obj, missing(os.path.basename(obj.key) or obj.key, obj.version_id)
        size, etag = found[0], clean_etag(found[1])
        if obj.etag and not obj.version_id and etag and etag != obj.etag:
            return obj, SourceChangedError(
                f"{os.path.basename(obj.key)} was overwritten after its event (ETag "
                f"{obj.etag[:12]}…, now {etag[:12]}…); the newer upload is its own job"
            )
        filled = obj.etag or obj.version_id or etag
        return ObjectCreated(
            **{
                **obj.__dict__,
                "etag": obj.etag if obj.version_id else filled,
                "size": obj.size if obj.size is not None else size,
            }
        ), None

    def _refuse(self, spec: JobSpec, problem: InputError) -> bool:
        """A job whose source is gone ends now, in its typed error.json (`job.refuse`), unless this
        upload is a job already (a replayed event of one that ran or runs: its outcome stands)."""
        from pagefleet.workers.fleet import jobs
        from pagefleet.workers.split.job import refuse

        if self.dedup.state(spec.job_id) or jobs.get(spec.job_id).get("state") not in (
            None,
            "error",
        ):
            return False
        refuse(spec, problem)
        return True

    def submit(
        self,
        objects: Iterable[ObjectCreated],
        skipped: Iterable[dict[str, str]] = (),
        *,
        taper: bool = True,
    ) -> IntakeResult:
        """Filter, resolve and enqueue the objects (together: `submit.enqueue_many` batches the
        small ones; `taper`: as that says). Raises `BrokerUnavailable`/`StorageError` (retryable): the retry finds the
        objects enqueued before the failure marked, or their runs started, and skips them."""
        result = IntakeResult(skipped=list(skipped))
        found: list[tuple[ObjectCreated, JobSpec]] = []
        for obj in objects:
            if (entry := self.filters.skipped(obj)) is not None:
                result.skipped.append(entry)
                continue
            resolved, problem = self._checked(obj)
            spec = self.spec_for(resolved)
            if problem is None:
                found.append((resolved, spec))
            elif self._refuse(spec, problem):
                result.refused.append(
                    {"job_id": spec.job_id, "code": problem.code, **resolved.describe()}
                )
                log.info("event %s → job %s: %s", resolved.event_name, spec.job_id, problem.code)
            else:
                result.duplicates.append({"job_id": spec.job_id, **resolved.describe()})
        outcomes = self.dedup.enqueue_once_many(
            [spec.job_id for _, spec in found],
            lambda todo: self._enqueue([found[i][1] for i in todo], taper),
        )
        for (resolved, spec), outcome in zip(found, outcomes, strict=True):
            entry = {"job_id": spec.job_id, **resolved.describe()}
            {
                Outcome.ENQUEUED: result.enqueued,
                Outcome.DUPLICATE: result.duplicates,
                Outcome.IN_PROGRESS: result.in_progress,
            }[outcome].append(entry)
            log.info(
                "event %s → job %s: %s", resolved.event_name, spec.job_id, outcome.value
            )  # no keys at INFO
            log.debug("job %s is s3://%s/%s", spec.job_id, resolved.bucket, resolved.key)
        return result

    def submit_payload(self, payload: Any) -> IntakeResult:
        parsed = parse_event_payload(payload)
        return self.submit(parsed.objects, parsed.skipped)

    def submit_body(self, body: bytes, content_type: str | None = None) -> IntakeResult:
        parsed = parse_body(body, content_type)
        return self.submit(parsed.objects, parsed.skipped)


def _enqueue_many(specs: list[JobSpec], taper: bool) -> list[str]:
    from pagefleet.workers.split.submit import enqueue_many

    return enqueue_many(specs, taper=taper)


def s3_head(bucket: str, key: str, version_id: str | None) -> tuple[int, str | None] | None:
    """The object's (size, ETag) through the workers' S3 settings; None when it does not exist."""
    from pagefleet.workers.store.lookup import head

    return head(bucket, key, version_id)


def build_intake(settings: EventSettings, client: redis.Redis) -> Intake:
    """An `Intake` from `EventSettings` and a Redis client on the broker."""
    if not settings.output:
        raise EventConfigError("no output configured: pass --output s3://bucket/prefix")
    filters = EventFilter(
        prefixes=tuple(settings.prefix_filters),
        suffixes=tuple(settings.suffix_filters),
        buckets=tuple(settings.buckets),
        exclude=output_exclusion(settings.output),
    )
    dedup = EventDedup(client, claim_ttl_s=settings.claim_ttl_s, dedup_ttl_s=settings.dedup_ttl_s)
    return Intake(
        output=settings.output,
        options=settings.options,
        dedup=dedup,
        filters=filters,
        prefix_template=settings.prefix_template,
        callback_url=settings.callback_url,
        head=s3_head if settings.head_objects else None,
    )
