"""Every source is accounted for, on the test S3 server (moto on loopback) and the test Redis: an
event for an object that is gone is answered so and ends in a typed error.json; a split whose
source is gone writes one too; `submit`'s lookups of many sources go at once, each with a short
timeout, while S3 is away (`tests/support/tcp_proxy.py` cuts or stalls it)."""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_events import TOKEN, http, put_pdf
from tests.support.drills import make_docs
from tests.support.tcp_proxy import TcpProxy
from tests.unit.test_event_parser import minio_record, minio_webhook_body
from pagefleet.workers.store.storage import S3Storage

pytestmark = pytest.mark.integration


@pytest.fixture
def receiver(service_env: dict[str, str]) -> Iterator[Any]:
    """An in-process receiver (real HTTP) on the session Redis and S3, HEADing every object."""
    from pagefleet.workers.fleet import jobs
    from pagefleet.workers.fleet.asgi import AsgiServer
    from pagefleet.workers.intake.events import build_intake
    from pagefleet.workers.intake.receiver import BearerAuth, Receiver
    from pagefleet.workers.settings import EventSettings

    servers = []

    def start(output: str) -> str:
        intake = build_intake(EventSettings(output=output), jobs.client())
        servers.append(
            AsgiServer(Receiver(intake, BearerAuth(TOKEN)).app(), "127.0.0.1", 0).start()
        )
        return servers[-1].url + "/events"

    yield start
    for server in servers:
        server.stop()


def _errors_counted() -> int:
    from pagefleet.workers.fleet import jobs
    from pagefleet.workers.metrics import HASH, field

    return int(jobs.client().hget(HASH, field("documents_total", status="error")) or 0)


def test_an_event_for_a_missing_object_is_answered_and_ends_in_source_missing(
    receiver, s3_bucket
) -> None:
    from pagefleet.workers.fleet import jobs

    bucket, client = s3_bucket
    client.make_bucket(bucket + "-out")
    url = receiver(f"s3://{bucket}-out/results")
    event = minio_webhook_body(
        minio_record(
            key=urllib.parse.quote_plus("incoming/gone report.pdf", safe="/"),
            bucket=bucket,
            etag="a" * 32,
            size=1234,
        )
    )
    counted = _errors_counted()
    status, body, _ = http(url, event)
    assert status == 200, body
    assert (
        body["accepted"] is False and body["reason"] == "source_missing" and body["enqueued"] == []
    )
    job_id = body["refused"][0]["job_id"]
    assert (
        body["refused"][0]["code"] == "source_missing"
        and body["refused"][0]["key"] == "incoming/gone report.pdf"
    )
    error = S3Storage(bucket + "-out", "results").get_json(f"artifacts/{job_id}/error.json")
    assert error["code"] == "source_missing" and "gone report.pdf" in error["message"]
    info = jobs.get(job_id)
    assert info["state"] == "error" and info["error_code"] == "source_missing"
    assert _errors_counted() == counted + 1
    status, again, _ = http(url, event)  # MinIO replays it: the same answer, counted once
    assert (
        status == 200
        and again["refused"][0]["job_id"] == job_id
        and _errors_counted() == counted + 1
    )


def test_an_event_whose_object_was_overwritten_is_source_changed(
    receiver, s3_bucket, tmp_path: Path
) -> None:
    bucket, client = s3_bucket
    client.make_bucket(bucket + "-out")
    first, second = make_docs(tmp_path, 2, 1)
    etag, size = put_pdf(client, bucket, "in/report.pdf", first)
    put_pdf(client, bucket, "in/report.pdf", second)  # overwritten before the first event arrives
    url = receiver(f"s3://{bucket}-out")
    status, body, _ = http(
        url,
        minio_webhook_body(minio_record(key="in/report.pdf", bucket=bucket, etag=etag, size=size)),
    )
    assert status == 200 and body["accepted"] is False and body["reason"] == "source_changed", body
    error = S3Storage(bucket + "-out").get_json(
        f"artifacts/{body['refused'][0]['job_id']}/error.json"
    )
    assert error["code"] == "source_changed"


def test_a_split_whose_source_is_gone_writes_source_missing(service_env, s3_bucket) -> None:
    from pagefleet.workers.settings import Options, get_settings
    from pagefleet.workers.split.pages import split_document
    from pagefleet.workers.split.submit import spec_for_object

    bucket, _ = s3_bucket
    for version in (None, "3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY"):
        spec = spec_for_object(
            bucket,
            f"incoming/never-{version}.pdf",
            f"s3://{bucket}",
            Options(),
            etag="b" * 32,
            version_id=version,
            prefix_template="out/{sha256}",
        )
        outcome = split_document(spec, get_settings())
        assert outcome.error is not None and outcome.error["code"] == "source_missing", outcome
        assert S3Storage(bucket).get_json(f"out/{spec.job_id}/error.json") == outcome.error


def test_submit_looks_up_many_sources_at_once_with_a_short_timeout(
    service_env, s3_bucket, tmp_path: Path, monkeypatch
) -> None:
    from pagefleet.workers.settings import get_settings
    from pagefleet.workers.store import lookup

    bucket, client = s3_bucket
    path = make_docs(tmp_path, 1, 1)[0]
    put_pdf(client, bucket, "in/there.pdf", path)
    uris = [f"s3://{bucket}/in/there.pdf", f"s3://{bucket}/in/not-there.pdf"]
    assert lookup.sizes(uris) == [path.stat().st_size, None]

    host, port = get_settings().storage.s3_endpoint.split(":")
    proxy = TcpProxy(host, int(port)).start()
    try:
        monkeypatch.setenv("PAGEFLEET_STORAGE__S3_ENDPOINT", proxy.endpoint)
        monkeypatch.setenv("PAGEFLEET_STORAGE__S3_LOOKUP_TIMEOUT_S", "1")
        get_settings.cache_clear()
        many = [f"s3://{bucket}/in/doc{i}.pdf" for i in range(8)]
        for hurt in (proxy.cut, proxy.stall):  # refused at once / accepted and never answered
            hurt()
            started = time.monotonic()
            assert lookup.sizes(many) == [None] * len(many)
            took = time.monotonic() - started
            assert took < 3.5, f"{hurt.__name__}: {took:.1f}s for {len(many)} lookups"
            print(
                json.dumps(
                    {"lookups": len(many), "fault": hurt.__name__, "seconds": round(took, 2)}
                )
            )
            proxy.restore()
    finally:
        proxy.cut()
        get_settings.cache_clear()
