"""The bucket-event parser: MinIO webhook and Redis-target shapes, AWS S3 records and their SQS,
SNS and EventBridge wrappers, test events, URL-encoded keys, filters, and typed errors."""

from __future__ import annotations

import json
import urllib.parse

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pagefleet.workers.intake.parse import (
    EventFilter,
    EventParseError,
    ObjectCreated,
    decode_key,
    normalise_event_name,
    output_exclusion,
    parse_event_body,
    parse_event_payload,
)
from pagefleet.workers.intake.receiver import BearerAuth


def minio_record(
    key: str = "incoming/report.pdf",
    bucket: str = "uploads",
    name: str = "s3:ObjectCreated:Put",
    etag: str = "d41d8cd98f00b204e9800998ecf8427e",
    size: int = 1234,
) -> dict:
    """Shaped like what MinIO's webhook target marshals (internal/event Event)."""
    return {
        "eventVersion": "2.0",
        "eventSource": "minio:s3",
        "awsRegion": "",
        "eventTime": "2025-01-02T03:04:05.678Z",
        "eventName": name,
        "userIdentity": {"principalId": "minioadmin"},
        "requestParameters": {
            "principalId": "minioadmin",
            "region": "",
            "sourceIPAddress": "10.0.0.7",
        },
        "responseElements": {
            "x-amz-request-id": "1817A2B3C4D5E6F7",
            "x-minio-origin-endpoint": "http://minio:9000",
        },
        "s3": {
            "s3SchemaVersion": "1.0",
            "configurationId": "Config",
            "bucket": {
                "name": bucket,
                "ownerIdentity": {"principalId": "minioadmin"},
                "arn": f"arn:aws:s3:::{bucket}",
            },
            "object": {
                "key": key,
                "size": size,
                "eTag": etag,
                "contentType": "application/pdf",
                "userMetadata": {"content-type": "application/pdf"},
                "sequencer": "1817A2B3C4E0A1B2",
            },
        },
        "source": {"host": "10.0.0.7", "port": "", "userAgent": "MinIO (linux; amd64) minio-go/v7"},
    }


def minio_webhook_body(*records: dict) -> dict:
    first = records[0]
    key = (
        first["s3"]["bucket"]["name"]
        + "/"
        + urllib.parse.unquote_plus(first["s3"]["object"]["key"])
    )
    return {"EventName": first["eventName"], "Key": key, "Records": list(records)}


def aws_record(
    key: str = "incoming/report.pdf",
    bucket: str = "uploads",
    name: str = "ObjectCreated:Put",
    etag: str = "0123456789abcdef0123456789abcdef",
    version_id: str | None = "3HL4kqtJlcpXroDTDmjVBH40Nrjfkd",
) -> dict:
    obj = {"key": key, "size": 2048, "eTag": etag, "sequencer": "0055AED6DCD90281E5"}
    if version_id:
        obj["versionId"] = version_id
    return {
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "awsRegion": "eu-west-1",
        "eventTime": "2025-01-02T03:04:05.000Z",
        "eventName": name,
        "userIdentity": {"principalId": "AWS:AIDAEXAMPLE"},
        "requestParameters": {"sourceIPAddress": "203.0.113.5"},
        "responseElements": {
            "x-amz-request-id": "C3D13FE58DE4C810",
            "x-amz-id-2": "FMyUVURIY8/IgAtTv8xRjskZQpcIZ9KG4V5Wp6S7S",
        },
        "s3": {
            "s3SchemaVersion": "1.0",
            "configurationId": "pdf-uploads",
            "bucket": {
                "name": bucket,
                "ownerIdentity": {"principalId": "A3NL1KOZZKExample"},
                "arn": f"arn:aws:s3:::{bucket}",
            },
            "object": obj,
        },
    }


def body(payload) -> bytes:
    return json.dumps(payload).encode()


def test_minio_webhook_record() -> None:
    [obj] = parse_event_body(body(minio_webhook_body(minio_record())), "application/json")
    assert obj == ObjectCreated(
        bucket="uploads",
        key="incoming/report.pdf",
        event_name="ObjectCreated:Put",
        etag="d41d8cd98f00b204e9800998ecf8427e",
        version_id=None,
        size=1234,
        sequencer="1817A2B3C4E0A1B2",
        event_time="2025-01-02T03:04:05.678Z",
        origin="minio",
    )


def test_aws_record() -> None:
    [obj] = parse_event_body(
        body({"Records": [aws_record(etag='"0123456789abcdef0123456789abcdef"')]})
    )
    assert obj.origin == "aws" and obj.event_name == "ObjectCreated:Put"
    assert obj.etag == "0123456789abcdef0123456789abcdef", "quotes around an ETag are dropped"
    assert obj.version_id == "3HL4kqtJlcpXroDTDmjVBH40Nrjfkd" and obj.size == 2048


@pytest.mark.parametrize(
    "name",
    [
        "s3:ObjectCreated:Put",
        "ObjectCreated:Put",
        "s3:ObjectCreated:CompleteMultipartUpload",
        "ObjectCreated:Copy",
        "S3:ObjectCreated:Post",
    ],
)
def test_created_names_with_or_without_s3_prefix(name: str) -> None:
    assert len(parse_event_body(body({"Records": [minio_record(name=name)]}))) == 1
    assert normalise_event_name(name).startswith("ObjectCreated:")


@pytest.mark.parametrize(
    "name",
    [
        "s3:ObjectRemoved:Delete",
        "ObjectRemoved:DeleteMarkerCreated",
        "s3:ObjectAccessed:Get",
        "s3:ObjectRestore:Completed",
    ],
)
def test_other_events_are_skipped(name: str) -> None:
    result = parse_event_payload({"Records": [minio_record(name=name)]})
    assert result.objects == [] and result.skipped[0]["reason"] == "not_object_created"


def test_aws_test_event_is_skipped() -> None:
    payload = {
        "Service": "Amazon S3",
        "Event": "s3:TestEvent",
        "Time": "2025-01-02T03:04:05.000Z",
        "Bucket": "uploads",
        "RequestId": "5582815E1AEA5ADF",
        "HostId": "8cLeGAmw098X5cv4Zkwcmo8vvZa3eH3eKxsPzbB9wrR+YYGrTqKqTxCgAhpq1iw=",
    }
    assert parse_event_body(body(payload)) == []
    assert parse_event_payload(payload).skipped == [
        {"reason": "test_event", "detail": "s3:TestEvent"}
    ]
    assert parse_event_body(body({"Records": [minio_record(name="s3:TestEvent")]})) == []


def test_sqs_wrapped_records() -> None:
    inner = {"Records": [aws_record(key="a/one.pdf"), aws_record(key="a/two.pdf")]}
    sqs = {
        "Records": [
            {
                "messageId": "059f36b4-87a3-44ab-83d2-661975830a7d",
                "receiptHandle": "AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a",
                "body": json.dumps(inner),
                "attributes": {"ApproximateReceiveCount": "1"},
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:eu-west-1:123456789012:pdfs",
            }
        ]
    }
    assert [o.key for o in parse_event_body(body(sqs))] == ["a/one.pdf", "a/two.pdf"]


def test_sns_wrappers() -> None:
    inner = json.dumps({"Records": [aws_record(key="b/x.pdf")]})
    sns_http = {
        "Type": "Notification",
        "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
        "TopicArn": "arn:aws:sns:eu-west-1:123456789012:pdfs",
        "Message": inner,
    }
    sns_lambda = {
        "Records": [{"EventSource": "aws:sns", "Sns": {"Type": "Notification", "Message": inner}}]
    }
    sqs_of_sns = {"Records": [{"eventSource": "aws:sqs", "body": json.dumps(sns_http)}]}
    for payload in (sns_http, sns_lambda, sqs_of_sns):
        assert [o.key for o in parse_event_body(body(payload), "text/plain; charset=UTF-8")] == [
            "b/x.pdf"
        ]
    confirm = {
        "Type": "SubscriptionConfirmation",
        "SubscribeURL": "https://sns.example/confirm",
        "Token": "t",
    }
    assert parse_event_body(body(confirm)) == []


def test_minio_redis_access_format() -> None:
    element = [{"Event": [minio_record(key="c/y.pdf")], "EventTime": "2025-01-02T03:04:05.678Z"}]
    assert [o.key for o in parse_event_body(body(element))] == ["c/y.pdf"]


def test_eventbridge_object_created() -> None:
    payload = {
        "version": "0",
        "detail-type": "Object Created",
        "source": "aws.s3",
        "time": "2025-01-02T03:04:05Z",
        "detail": {
            "bucket": {"name": "uploads"},
            "reason": "PutObject",
            "object": {
                "key": "d/z+1.pdf",
                "size": 10,
                "etag": "abc",
                "version-id": "v1",
                "sequencer": "s",
            },
        },
    }
    [obj] = parse_event_body(body(payload))
    assert (obj.bucket, obj.key, obj.etag, obj.version_id, obj.origin) == (
        "uploads",
        "d/z 1.pdf",
        "abc",
        "v1",
        "eventbridge",
    )
    assert parse_event_body(body({**payload, "detail-type": "Object Deleted"})) == []


@pytest.mark.parametrize(
    "raw, decoded",
    [
        ("a+b.pdf", "a b.pdf"),
        ("a%2Bb.pdf", "a+b.pdf"),
        ("a%20b.pdf", "a b.pdf"),
        ("100%25+done.pdf", "100% done.pdf"),
        ("dir%2Fsub/x.pdf", "dir/sub/x.pdf"),
        ("%D7%93%D7%95%D7%97+%D7%A9%D7%A0%D7%AA%D7%99.pdf", "דוח שנתי.pdf"),
        ("%D8%AA%D9%82%D8%B1%D9%8A%D8%B1.pdf", "تقرير.pdf"),
        ("already-unicode-דוח.pdf", "already-unicode-דוח.pdf"),
    ],
)
def test_url_encoded_keys(raw: str, decoded: str) -> None:
    [obj] = parse_event_body(body({"Records": [minio_record(key=raw)]}))
    assert obj.key == decoded


@given(st.text(min_size=1, max_size=60).filter(lambda s: "\x00" not in s))
def test_any_key_survives_the_encoding_minio_and_aws_use(key: str) -> None:
    encoded = urllib.parse.quote_plus(
        key, safe=""
    )  # Go's url.QueryEscape: unreserved kept, space → +
    assert decode_key(encoded) == key


def test_invalid_utf8_key_is_skipped_not_fatal() -> None:
    result = parse_event_payload(
        {"Records": [minio_record(key="bad%FF.pdf"), minio_record(key="ok.pdf")]}
    )
    assert [o.key for o in result.objects] == ["ok.pdf"]
    assert result.skipped[0]["reason"] == "invalid_record"


def test_records_without_bucket_or_key_are_skipped() -> None:
    record = minio_record()
    del record["s3"]["object"]["key"]
    result = parse_event_payload({"Records": [record, {"whatever": 1}, "not a record"]})
    assert result.objects == []
    assert [s["reason"] for s in result.skipped] == [
        "invalid_record",
        "unknown_record",
        "invalid_record",
    ]


@pytest.mark.parametrize(
    "raw", [b"", b"   ", b"{not json", b"\xff\xfe\x00", b"42", b'"text"', b'{"foo": 1}']
)
def test_non_events_raise_a_typed_error(raw: bytes) -> None:
    with pytest.raises(EventParseError) as info:
        parse_event_body(raw, "application/json")
    assert info.value.code == "invalid_event" and info.value.message


def test_too_deeply_wrapped_is_an_error() -> None:
    payload: dict = {"Records": [minio_record()]}
    for _ in range(6):
        payload = {"Message": json.dumps(payload)}
    with pytest.raises(EventParseError, match="nested"):
        parse_event_body(body(payload))


def test_filters() -> None:
    objs = [
        ObjectCreated("uploads", "incoming/a.PDF"),
        ObjectCreated("uploads", "incoming/b.txt"),
        ObjectCreated("uploads", "other/c.pdf"),
        ObjectCreated("elsewhere", "incoming/d.pdf"),
        ObjectCreated("results", "out/artifacts/x/document.json"),
        ObjectCreated("uploads", "incoming/dir/"),
    ]
    f = EventFilter(prefixes=("incoming/",), suffixes=(".pdf",), buckets=("uploads",))
    assert [f.reason(o) for o in objs] == [
        None,
        "suffix_filter",
        "prefix_filter",
        "bucket_filter",
        "bucket_filter",
        "suffix_filter",
    ]
    own = EventFilter(exclude=output_exclusion("s3://results/out"))
    assert own.reason(objs[4]) == "own_output" and own.reason(objs[0]) is None
    assert EventFilter().reason(objs[5]) == "folder_marker"
    assert output_exclusion("s3://results") == (("results", ""),)
    filtered = parse_event_body(
        body({"Records": [minio_record(key="incoming/a.pdf"), minio_record(key="x/b.pdf")]}),
        filters=EventFilter(prefixes=("incoming/",)),
    )
    assert [o.key for o in filtered] == ["incoming/a.pdf"]


def test_bearer_auth() -> None:
    auth = BearerAuth("s3cret-token")
    assert auth.check("Bearer s3cret-token") and auth.check("  Bearer s3cret-token ")
    for header in (
        None,
        "",
        "Bearer",
        "Bearer s3cret-tokeN",
        "Basic s3cret-token",
        "s3cret-token",
        "Bearer s3cret-token2",
    ):
        assert not auth.check(header)
    with pytest.raises(ValueError):
        BearerAuth("")


def test_cli_settings_and_their_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    from pagefleet.workers.cli.main import parser
    from pagefleet.workers.intake.events import EventConfigError
    from pagefleet.workers.cli.event_receiver import event_settings, resolve_token
    from pagefleet.workers.settings import get_settings

    for name in ("PAGEFLEET_EVENTS__OUTPUT", "PAGEFLEET_EVENTS__TOKEN"):
        monkeypatch.delenv(name, raising=False)
    get_settings.cache_clear()
    args = parser().parse_args(
        [
            "events",
            "--output",
            "s3://out/prefix/",
            "--suffix-filter",
            ".pdf",
            "--suffix-filter",
            ".PDF",
            "--ocr",
            "off",
            "--token-env",
            "MY_TOKEN",
        ]
    )
    settings = event_settings(args)
    assert settings.output == "s3://out/prefix" and settings.suffix_filters == [".pdf", ".PDF"]
    assert settings.options.ocr == "off"
    with pytest.raises(EventConfigError, match="MY_TOKEN"):
        resolve_token(args, settings)
    monkeypatch.setenv("MY_TOKEN", "t0ken")
    assert resolve_token(args, settings) == "t0ken"
    with pytest.raises(EventConfigError, match="no bearer token"):
        resolve_token(parser().parse_args(["events", "--output", "s3://o"]), settings)
    with pytest.raises(EventConfigError, match="no output"):
        event_settings(parser().parse_args(["events"]))
    with pytest.raises(EventConfigError, match="output"):
        event_settings(parser().parse_args(["events", "--output", "http://not-a-bucket"]))
    monkeypatch.setenv("PAGEFLEET_EVENTS__OUTPUT", "s3://from-env")
    monkeypatch.setenv("PAGEFLEET_EVENTS__BUCKETS", '["in"]')
    get_settings.cache_clear()
    from_env = event_settings(parser().parse_args(["events"]))
    monkeypatch.undo()
    get_settings.cache_clear()
    assert from_env.output == "s3://from-env" and from_env.buckets == ["in"]
