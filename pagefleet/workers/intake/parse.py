"""Bucket events, parsed: one parser for MinIO and AWS S3 notifications, filters, and an
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

`EventFilter` says which created objects become jobs (`output_exclusion`: never our own output).
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from pagefleet.workers.errors import PagefleetError
from pagefleet.workers.store.uri import is_s3, s3_prefix

MAX_DEPTH = 4


class EventParseError(PagefleetError):
    """The body is not JSON, or not any S3 event shape we know. Retrying will not fix it."""

    code = "invalid_event"


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
        return {
            "bucket": self.bucket,
            "key": self.key,
            "etag": self.etag,
            "version_id": self.version_id,
        }


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


def clean_etag(value: Any) -> str | None:
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
        raise EventParseError(
            f"{what} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
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
    result.objects.append(
        ObjectCreated(
            bucket=bucket,
            key=key,
            event_name=name,
            etag=clean_etag(obj.get("eTag") or obj.get("etag")),
            version_id=obj.get("versionId") or None,
            size=_as_int(obj.get("size")),
            sequencer=obj.get("sequencer") or None,
            event_time=record.get("eventTime"),
            origin=origin,
        )
    )


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
    result.objects.append(
        ObjectCreated(
            bucket=bucket,
            key=key,
            event_name="ObjectCreated:" + str(detail.get("reason") or "Put"),
            etag=clean_etag(obj.get("etag")),
            version_id=obj.get("version-id") or None,
            size=_as_int(obj.get("size")),
            sequencer=obj.get("sequencer") or None,
            event_time=payload.get("time"),
            origin="eventbridge",
        )
    )


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
        raise EventParseError(
            "no S3 event records (expected Records[], Event[] or an SNS/SQS wrapper)"
        )


def parse_event_payload(payload: Any) -> ParseResult:
    """An already-decoded JSON value → the created objects it names, plus what was skipped."""
    result = ParseResult()
    _walk(payload, 0, result)
    return result


def parse_body(body: bytes, content_type: str | None = None) -> ParseResult:
    """HTTP body → the created objects it names, plus what was skipped. Any content type is accepted
    if the body is JSON: SNS posts `text/plain`. Raises `EventParseError` for anything that is not
    an event."""
    if not body.strip():
        raise EventParseError("empty event body")
    return parse_event_payload(
        parse_json(body, f"event body ({content_type or 'no content type'})")
    )


def parse_event_body(
    body: bytes, content_type: str | None = None, filters: "EventFilter | None" = None
) -> list[ObjectCreated]:
    """HTTP body → created objects (filtered): `parse_body`'s objects the filters keep."""
    objects = parse_body(body, content_type).objects
    return [o for o in objects if filters is None or filters.reason(o) is None]


def skipped_entry(reason: str, obj: ObjectCreated) -> dict[str, str]:
    """What an answer says of an object that does not become a job."""
    return {"reason": reason, "detail": obj.key[:200]}


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

    def skipped(self, obj: ObjectCreated) -> dict[str, str] | None:
        """`skipped_entry` for an object the filters drop; None for one they keep."""
        reason = self.reason(obj)
        return None if reason is None else skipped_entry(reason, obj)


def output_exclusion(output: str) -> tuple[tuple[str, str], ...]:
    """Keys we write under an `s3://bucket/prefix` output must not trigger jobs themselves."""
    if not is_s3(output):
        return ()
    bucket, prefix = s3_prefix(output)
    prefix = prefix.strip("/")
    return ((bucket, f"{prefix}/" if prefix else ""),)
