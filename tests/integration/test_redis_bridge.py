"""The bridge for MinIO's Redis target (format=access) against real Redis, real workers and the S3
server on loopback: an element left in the processing list by a "crashed" bridge is replayed,
a redelivered element is a duplicate, a garbage element is dead-lettered, the job runs."""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
import uuid
from pathlib import Path

import pytest

from tests.conftest import wait_for_job
from tests.unit.test_event_parser import minio_record
from pagefleet.workers.intake.events import build_intake
from pagefleet.workers.intake.parse import parse_event_payload
from pagefleet.workers.intake.bridge import RedisBridge, bridge_client, start_bridge
from pagefleet.workers.settings import EventSettings
from pagefleet.workers.store.storage import S3Storage

pytestmark = pytest.mark.integration


def access_element(record: dict) -> bytes:
    """Exactly what MinIO RPUSHes: a JSON array of {"Event": [record], "EventTime": ...}."""
    return json.dumps([{"Event": [record], "EventTime": record["eventTime"]}]).encode()


def test_bridge_replays_dedups_and_dead_letters(
    fleet, fixtures_dir: Path, s3_bucket, service_env
) -> None:
    from pagefleet.workers.fleet import jobs
    from pagefleet.workers.settings import get_settings

    bucket, client = s3_bucket
    client.make_bucket(bucket + "-out")
    key = "scans/ספר + 1.pdf"
    result = client.fput_object(bucket, key, str(fixtures_dir / "born_digital_hebrew.pdf"))
    element = access_element(
        minio_record(
            key=urllib.parse.quote_plus(key, safe="/"), bucket=bucket, etag=result.etag.strip('"')
        )
    )
    list_name = f"bucketevents-{uuid.uuid4().hex[:8]}"
    source = bridge_client(get_settings().broker.url, block_s=0.2)
    intake = build_intake(EventSettings(output=f"s3://{bucket}-out/r"), jobs.client())
    bridge = RedisBridge(
        source, list_name, intake, block_s=0.2, retry_s=0.2, stop=threading.Event()
    )
    source.rpush(bridge.processing, element)  # moved by a bridge that died before acknowledging
    source.rpush(list_name, element, b"{not json")  # MinIO redelivered it; and something broken
    thread = start_bridge(bridge)
    try:
        deadline = time.monotonic() + 30
        while source.llen(list_name) or source.llen(bridge.processing):
            assert time.monotonic() < deadline, (
                source.lrange(list_name, 0, -1),
                source.lrange(bridge.processing, 0, -1),
            )
            time.sleep(0.1)
        assert (bridge.stats.enqueued, bridge.stats.duplicates, bridge.stats.dead) == (1, 1, 1)
        assert source.lrange(bridge.dead, 0, -1) == [b"{not json"]
        job_id = intake.spec_for(parse_event_payload(json.loads(element)).objects[0]).job_id
        info = wait_for_job(job_id, timeout_s=120)
        assert info["state"] == "done", info
        document = S3Storage(bucket + "-out", "r").get_json(
            f"{info['artifact_prefix']}/document.json"
        )
        assert document["source"]["filename"] == "ספר + 1.pdf"
    finally:
        bridge.stop()
        thread.join(timeout=5)
        source.delete(list_name, bridge.processing, bridge.dead)
    assert not thread.is_alive()
