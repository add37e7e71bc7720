"""Bucket events → jobs: one parser for MinIO and AWS S3 notifications, filters, and an
exactly-once-per-upload enqueue on top of at-least-once delivery.

Shapes understood (nested wrappers are unwrapped, at most a few levels deep):

    {"Records": [<s3 record>, ...]}                      AWS S3 → SQS/Lambda/SNS, MinIO webhook
    {"EventName": ..., "Key": ..., "Records": [...]}     MinIO webhook (same thing, with a summary)
    [{"Event": [<s3 record>], "EventTime": ...}]         MinIO Redis target, format=access
    {"Records": [{"body": "<json>", ...}]}               SQS messages (e.g. SQS → Lambda)
    {"Records": [{"Sns": {"Message": "<json>"}}]}        SNS → Lambda
    {"Type": "Notification", "Message": "<json>"}        SNS over HTTP, SNS → SQS raw bodies
    {"detail-type": "Object Created", "detail": {...}}   EventBridge
    {"Event": "s3:TestEvent", ...}                       AWS test event: skipped

Event names are compared without a leading `s3:` (MinIO says `s3:ObjectCreated:Put`, AWS says
`ObjectCreated:Put`); only `ObjectCreated:*` becomes a job. Object keys arrive URL-encoded
(`+` for a space, `%2B` for a plus, UTF-8 percent escapes) and are decoded with `unquote_plus`.

Deduplication: the job id already hashes bucket/key/ETag/versionId (+ options), so a marker
`pagefleet:event:<job_id>` in the broker's Redis says "this upload was enqueued":

    SET NX  "pending:<token>"  EX claim_ttl   → we own it; anyone else answers "in progress"
    enqueue the split task (durable in Redis when it returns)
    SET     "enqueued:<time>"  EX dedup_ttl   → later deliveries are duplicates
    on failure: delete the marker only if it is still ours, so a retry can succeed

A duplicate that arrives while the first delivery is still enqueueing gets "in progress" (a
non-2xx, so the sender retries) rather than a 2xx: a 2xx promises the job is enqueued.
"""

from __future__ import annotations

import enum
import json
import logging
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import redis

from workers.errors import BrokerUnavailable, PagefleetError, StorageError
from workers.settings import EventSettings
from workers.model import JobSpec
from workers.settings import Options

log = logging.getLogger(__name__)

MARKER = "pagefleet:event:{job_id}"
MAX_DEPTH = 4
_RELEASE_IF_MINE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


class EventParseError(PagefleetError):
    """The body is not JSON, or not any S3 event shape we know. Retrying will not fix it."""

    code = "invalid_event"


class EventConfigError(PagefleetError):
    """The receiver is misconfigured (no output, no token, …): it refuses to start."""

    code = "invalid_config"


@dataclass(frozen=True)
class ObjectCreated:
    """One object that was created in a bucket (decoded key, normalised event name)."""

    bucket: str
    key: str
    event_name: str = "ObjectCreated:Put"
    etag: str | None = None
    version_id: str | None = None
    size: int | None = None
    sequencer: str | None = None
    event_time: str | None = None
    origin: str = "s3"  # minio | aws | eventbridge | s3 (unknown)

    def describe(self) -> dict[str, Any]:
        return {"bucket": self.bucket, "key": self.key, "etag": self.etag, "version_id": self.version_id}


@dataclass
class ParseResult:
    objects: list[ObjectCreated] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)

    def skip(self, reason: str, detail: str = "") -> None:
        self.skipped.append({"reason": reason, "detail": detail[:200]})


def normalise_event_name(name: Any) -> str:
    """`s3:ObjectCreated:Put` and `ObjectCreated:Put` → `ObjectCreated:Put`."""
    text = str(name or "").strip()
    return text[3:] if text.lower().startswith("s3:") else text


def decode_key(raw: str) -> str:
    """S3/MinIO event keys are form-encoded: `a+b%2Bc%20%D7%90.pdf` → `a b+c א.pdf`."""
    return urllib.parse.unquote_plus(raw, encoding="utf-8", errors="strict")


def _clean_etag(value: Any) -> str | None:
    text = str(value or "").strip().strip('"')
    return text or None


def _as_int(value: Any) -> int | None:
    try:
        return int(value) if value is not None and value != "" else None
    except (TypeError, ValueError):
        return None


def parse_json(text: str | bytes, what: str) -> Any:
    """JSON or a typed `EventParseError` naming what was being read (never the content)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise EventParseError(f"{what} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    except UnicodeDecodeError as exc:
        raise EventParseError(f"{what} is not UTF-8 JSON") from exc


def _s3_record(record: dict[str, Any], result: ParseResult) -> None:
    name = normalise_event_name(record.get("eventName"))
    if name.lower() in ("testevent", ""):
        result.skip("test_event" if name else "no_event_name", name)
        return
    if not name.startswith("ObjectCreated:"):
        result.skip("not_object_created", name)
        return
    s3 = record.get("s3") or {}
    bucket = (s3.get("bucket") or {}).get("name")
    obj = s3.get("object") or {}
    raw_key = obj.get("key")
    if not isinstance(bucket, str) or not bucket or not isinstance(raw_key, str) or not raw_key:
        result.skip("invalid_record", "record without s3.bucket.name or s3.object.key")
        return
    try:
        key = decode_key(raw_key)
    except UnicodeDecodeError:
        result.skip("invalid_record", "object key is not valid percent-encoded UTF-8")
        return
    source = str(record.get("eventSource") or "")
    origin = "minio" if "minio" in source else "aws" if source == "aws:s3" else "s3"
    result.objects.append(ObjectCreated(
        bucket=bucket, key=key, event_name=name, etag=_clean_etag(obj.get("eTag") or obj.get("etag")),
        version_id=obj.get("versionId") or None, size=_as_int(obj.get("size")),
        sequencer=obj.get("sequencer") or None, event_time=record.get("eventTime"), origin=origin))


def _eventbridge(payload: dict[str, Any], result: ParseResult) -> None:
    detail = payload.get("detail") or {}
    bucket = (detail.get("bucket") or {}).get("name")
    obj = detail.get("object") or {}
    if not isinstance(bucket, str) or not isinstance(obj.get("key"), str):
        result.skip("invalid_record", "EventBridge event without bucket.name or object.key")
        return
    try:
        key = decode_key(obj["key"])
    except UnicodeDecodeError:
        result.skip("invalid_record", "object key is not valid percent-encoded UTF-8")
        return
    result.objects.append(ObjectCreated(
        bucket=bucket, key=key, event_name="ObjectCreated:" + str(detail.get("reason") or "Put"),
        etag=_clean_etag(obj.get("etag")), version_id=obj.get("version-id") or None,
        size=_as_int(obj.get("size")), sequencer=obj.get("sequencer") or None,
        event_time=payload.get("time"), origin="eventbridge"))


def _wrapped(text: Any, depth: int, result: ParseResult, what: str) -> None:
    if not isinstance(text, str):
        result.skip("invalid_record", f"{what} is not a JSON string")
        return
    try:
        inner = json.loads(text)
    except json.JSONDecodeError:
        result.skip("invalid_record", f"{what} is not JSON")
        return
    _walk(inner, depth + 1, result)


def _record(record: Any, depth: int, result: ParseResult) -> None:
    if not isinstance(record, dict):
        result.skip("invalid_record", "a record is not an object")
    elif "s3" in record or "eventName" in record:
        _s3_record(record, result)
    elif "body" in record:  # an SQS message
        _wrapped(record["body"], depth, result, "SQS body")
    elif isinstance(record.get("Sns"), dict):
        _wrapped(record["Sns"].get("Message"), depth, result, "SNS message")
    else:
        result.skip("unknown_record", ",".join(sorted(record)[:8]))


def _walk(payload: Any, depth: int, result: ParseResult) -> None:
    if depth > MAX_DEPTH:
        raise EventParseError("event wrappers nested too deeply")
    if isinstance(payload, list):  # MinIO Redis target, access format
        for entry in payload:
            _walk(entry, depth + 1, result)
        return
    if not isinstance(payload, dict):
        raise EventParseError("event body must be a JSON object or list")
    if isinstance(payload.get("Records"), list):
        for record in payload["Records"]:
            _record(record, depth, result)
    elif isinstance(payload.get("Event"), list):  # one access-format entry
        for record in payload["Event"]:
            _record(record, depth, result)
    elif normalise_event_name(payload.get("Event")) == "TestEvent":
        result.skip("test_event", "s3:TestEvent")
    elif payload.get("Type") == "SubscriptionConfirmation":
        result.skip("sns_subscription", "confirm the SNS subscription out of band")
    elif "Message" in payload:
        _wrapped(payload["Message"], depth, result, "SNS message")
    elif payload.get("detail-type") == "Object Created":
        _eventbridge(payload, result)
    elif "detail-type" in payload:
        result.skip("not_object_created", str(payload.get("detail-type")))
    else:
        raise EventParseError("no S3 event records (expected Records[], Event[] or an SNS/SQS wrapper)")


def parse_event_payload(payload: Any) -> ParseResult:
    """An already-decoded JSON value → the created objects it names, plus what was skipped."""
    result = ParseResult()
    _walk(payload, 0, result)
    return result


def parse_event_body(body: bytes, content_type: str | None = None,
                     filters: "EventFilter | None" = None) -> list[ObjectCreated]:
    """HTTP body → created objects (filtered). Any content type is accepted if the body is JSON:
    SNS posts `text/plain`. Raises `EventParseError` for anything that is not an event."""
    if not body.strip():
        raise EventParseError("empty event body")
    payload = parse_json(body, f"event body ({content_type or 'no content type'})")
    objects = parse_event_payload(payload).objects
    return [o for o in objects if filters is None or filters.reason(o) is None]


@dataclass(frozen=True)
class EventFilter:
    """Which created objects become jobs. Empty tuples mean "any"."""

    prefixes: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()
    buckets: tuple[str, ...] = ()
    exclude: tuple[tuple[str, str], ...] = ()  # (bucket, key prefix): our own output, never a job

    def reason(self, obj: ObjectCreated) -> str | None:
        """Why this object is filtered out, or None when it should become a job."""
        if self.buckets and obj.bucket not in self.buckets:
            return "bucket_filter"
        if self.prefixes and not obj.key.startswith(self.prefixes):
            return "prefix_filter"
        if self.suffixes and not obj.key.lower().endswith(tuple(s.lower() for s in self.suffixes)):
            return "suffix_filter"
        for bucket, prefix in self.exclude:
            if obj.bucket == bucket and obj.key.startswith(prefix):
                return "own_output"
        if obj.key.endswith("/") and not obj.size:
            return "folder_marker"
        return None


def output_exclusion(output: str) -> tuple[tuple[str, str], ...]:
    """Keys we write under an `s3://bucket/prefix` output must not trigger jobs themselves."""
    if not output.startswith("s3://"):
        return ()
    bucket, _, prefix = output[len("s3://"):].partition("/")
    prefix = prefix.strip("/")
    return ((bucket, f"{prefix}/" if prefix else ""),)


class Outcome(str, enum.Enum):
    ENQUEUED = "enqueued"
    DUPLICATE = "duplicate"
    IN_PROGRESS = "in_progress"


class EventDedup:
    """The per-upload marker in Redis (see the module docstring for the protocol)."""

    def __init__(self, client: redis.Redis, *, claim_ttl_s: int = 120, dedup_ttl_s: int = 7 * 86400) -> None:
        self.client = client
        self.claim_ttl_s = claim_ttl_s
        self.dedup_ttl_s = dedup_ttl_s
        self._release = client.register_script(_RELEASE_IF_MINE)

    def key(self, job_id: str) -> str:
        return MARKER.format(job_id=job_id)

    def state(self, job_id: str) -> str | None:
        value = self._call(self.client.get, self.key(job_id))
        return value.decode() if isinstance(value, bytes) else value

    def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise BrokerUnavailable(f"redis unavailable: {exc}") from exc

    def _claim(self, key: str, mine: str) -> Outcome | None:
        """None when we own the claim; otherwise what the current holder means for us."""
        for _ in range(3):
            if self._call(self.client.set, key, mine, nx=True, ex=self.claim_ttl_s):
                return None
            current = self._call(self.client.get, key)
            if current is None:
                continue  # expired between SET NX and GET: try again
            text = current.decode() if isinstance(current, bytes) else str(current)
            return Outcome.DUPLICATE if text.startswith("enqueued") else Outcome.IN_PROGRESS
        return Outcome.IN_PROGRESS

    def enqueue_once(self, job_id: str, enqueue: Callable[[], Any]) -> Outcome:
        key = self.key(job_id)
        mine = f"pending:{uuid.uuid4().hex}"
        held = self._claim(key, mine)
        if held is not None:
            return held
        try:
            enqueue()
        except BaseException:
            try:
                self._release(keys=[key], args=[mine])
            except redis.RedisError as exc:  # the claim expires by itself after claim_ttl_s
                log.warning("could not release event claim %s: %s", key, exc)
            raise
        try:
            self.client.set(key, f"enqueued:{time.time():.3f}", ex=self.dedup_ttl_s)
        except redis.RedisError as exc:
            # The job *is* enqueued; only the marker is missing. A later duplicate may enqueue it
            # again once the claim expires, and the split task skips a job that is already done.
            log.warning("job %s enqueued but its dedup marker was not written: %s", job_id, exc)
        return Outcome.ENQUEUED


@dataclass
class IntakeResult:
    enqueued: list[dict[str, Any]] = field(default_factory=list)
    duplicates: list[dict[str, Any]] = field(default_factory=list)
    in_progress: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)

    @property
    def retry_later(self) -> bool:
        return bool(self.in_progress)

    def summary(self) -> dict[str, Any]:
        return {"enqueued": self.enqueued, "duplicates": self.duplicates,
                "in_progress": self.in_progress, "skipped": self.skipped}


Enqueue = Callable[[JobSpec], Any]
StatEtag = Callable[[str, str], "str | None"]


class Intake:
    """Created objects → deduplicated jobs. Shared by the HTTP receiver and the Redis bridge."""

    def __init__(self, *, output: str, options: Options, dedup: EventDedup, filters: EventFilter,
                 prefix_template: str = "artifacts/{sha256}", callback_url: str | None = None,
                 enqueue: Enqueue | None = None, stat_etag: StatEtag | None = None) -> None:
        self.output = output
        self.options = options
        self.dedup = dedup
        self.filters = filters
        self.prefix_template = prefix_template
        self.callback_url = callback_url
        self._enqueue = enqueue or _default_enqueue
        self._stat_etag = stat_etag

    def spec_for(self, obj: ObjectCreated) -> JobSpec:
        from workers.submit import spec_for_object

        return spec_for_object(obj.bucket, obj.key, self.output, self.options, etag=obj.etag,
                               version_id=obj.version_id, size=obj.size, prefix_template=self.prefix_template,
                               callback_url=self.callback_url)

    def _with_etag(self, obj: ObjectCreated) -> ObjectCreated | None:
        """An event without ETag or versionId would make every upload to a key the same job:
        ask the store for the current ETag. None when the object is gone."""
        if obj.etag or obj.version_id or self._stat_etag is None:
            return obj
        etag = self._stat_etag(obj.bucket, obj.key)
        if etag is None:
            return None
        return ObjectCreated(**{**obj.__dict__, "etag": _clean_etag(etag)})

    def submit(self, objects: Iterable[ObjectCreated], skipped: Iterable[dict[str, str]] = ()) -> IntakeResult:
        """Filter, resolve and enqueue each object. Raises `BrokerUnavailable`/`StorageError`
        (retryable): objects enqueued before the failure keep their markers, so the retry skips them."""
        result = IntakeResult(skipped=list(skipped))
        for obj in objects:
            reason = self.filters.reason(obj)
            if reason is not None:
                result.skipped.append({"reason": reason, "detail": obj.key[:200]})
                continue
            resolved = self._with_etag(obj)
            if resolved is None:
                result.skipped.append({"reason": "object_missing", "detail": obj.key[:200]})
                continue
            spec = self.spec_for(resolved)
            outcome = self.dedup.enqueue_once(spec.job_id, lambda spec=spec: self._enqueue(spec))
            entry = {"job_id": spec.job_id, **resolved.describe()}
            {Outcome.ENQUEUED: result.enqueued, Outcome.DUPLICATE: result.duplicates,
             Outcome.IN_PROGRESS: result.in_progress}[outcome].append(entry)
            log.info("event %s s3://%s/%s → job %s: %s", resolved.event_name, resolved.bucket, resolved.key,
                     spec.job_id, outcome.value)
        return result

    def submit_payload(self, payload: Any) -> IntakeResult:
        parsed = parse_event_payload(payload)
        return self.submit(parsed.objects, parsed.skipped)

    def submit_body(self, body: bytes, content_type: str | None = None) -> IntakeResult:
        if not body.strip():
            raise EventParseError("empty event body")
        return self.submit_payload(parse_json(body, f"event body ({content_type or 'no content type'})"))


def _default_enqueue(spec: JobSpec) -> str:
    from workers.submit import enqueue

    return enqueue(spec)


def s3_stat_etag(bucket: str, key: str) -> str | None:
    """The object's current ETag through the workers' S3 settings; None when it does not exist."""
    from minio.error import MinioException, S3Error

    from workers.settings import get_settings
    from workers.storage import s3_client

    try:
        return s3_client(get_settings()).stat_object(bucket, key).etag
    except S3Error as exc:
        if exc.code in ("NoSuchKey", "NoSuchObject", "NoSuchBucket"):
            return None
        raise StorageError(f"stat s3://{bucket}/{key} failed: {exc.code}") from exc
    except (MinioException, OSError) as exc:
        raise StorageError(f"stat s3://{bucket}/{key} failed: {exc}") from exc


def build_intake(settings: EventSettings, client: redis.Redis) -> Intake:
    """An `Intake` from `EventSettings` and a Redis client on the broker."""
    if not settings.output:
        raise EventConfigError("no output configured: pass --output s3://bucket/prefix")
    filters = EventFilter(prefixes=tuple(settings.prefix_filters), suffixes=tuple(settings.suffix_filters),
                          buckets=tuple(settings.buckets), exclude=output_exclusion(settings.output))
    dedup = EventDedup(client, claim_ttl_s=settings.claim_ttl_s, dedup_ttl_s=settings.dedup_ttl_s)
    return Intake(output=settings.output, options=settings.options, dedup=dedup, filters=filters,
                  prefix_template=settings.prefix_template, callback_url=settings.callback_url,
                  stat_etag=s3_stat_etag if settings.stat_missing_etag else None)
