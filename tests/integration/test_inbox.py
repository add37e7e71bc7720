"""Gathering bucket events into batches: a bridge holds a burst's events while split tasks wait
on the broker (real Redis, real timing of a sender pushing one event at a time), and the
receiver's inbox (real HTTP) queues each POSTed event for such a bridge; the jobs run end to end
on real workers against the S3 server on loopback."""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_batches import one_page
from tests.integration.test_events import TOKEN, http
from tests.integration.test_redis_bridge import access_element
from tests.unit.test_event_parser import minio_record, minio_webhook_body
from pagefleet.workers import metrics
from pagefleet.workers.intake.bridge import RedisBridge, bridge_client, split_backlog
from pagefleet.workers.intake.events import EventDedup, Intake
from pagefleet.workers.intake.parse import EventFilter
from pagefleet.workers.settings import Options

pytestmark = pytest.mark.integration


class Sent:
    """An `Intake` enqueue that records each submission (its job count and whether it tapers)."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, bool]] = []

    def __call__(self, specs: list[Any], taper: bool) -> list[str]:
        self.calls.append((len(specs), taper))
        return [spec.job_id for spec in specs]


def _intake(client: Any, sent: Sent) -> Intake:
    return Intake(
        output="file:///tmp/pagefleet-inbox-test",
        options=Options(),
        dedup=EventDedup(client),
        filters=EventFilter(),
        enqueue=sent,
    )


def _element(i: int, tag: str) -> bytes:
    return access_element(minio_record(key=f"in/{tag}-{i}.pdf", etag=f"{uuid.uuid4().hex}"))


def _push_slowly(client: Any, name: str, elements: list[bytes], gap_s: float) -> threading.Thread:
    """A sender delivering one event at a time (MinIO's webhook: a request after the last answer)."""

    def push() -> None:
        for element in elements:
            client.rpush(name, element)
            time.sleep(gap_s)

    thread = threading.Thread(target=push, daemon=True)
    thread.start()
    return thread


def _bridge_counts(client: Any) -> dict[str, int]:
    return {
        k.decode(): int(v)
        for k, v in client.hgetall(metrics.HASH).items()
        if k.startswith(b"bridge_")
    }


def test_a_burst_is_held_while_split_tasks_wait_and_sent_at_once_when_idle(
    redis_server: str,
) -> None:
    client = bridge_client(redis_server, block_s=0.5)
    tag = uuid.uuid4().hex[:8]
    name, queue = f"inbox-{tag}", f"split-{tag}"
    sent = Sent()
    recorder = metrics.Recorder(client)
    before = _bridge_counts(client)
    bridge = RedisBridge(
        client,
        name,
        _intake(client, sent),
        block_s=0.5,
        batch=16,
        hold=split_backlog(client, queue),
        hold_s=2.0,
        poll_s=0.02,
        observe=recorder.bridge_submission,
    )
    try:
        # busy: a split task waits, and 20 events come 10 ms apart
        client.rpush(queue, b"a waiting split task")
        pusher = _push_slowly(client, name, [_element(i, tag) for i in range(20)], 0.01)
        assert bridge.step() and bridge.step()
        pusher.join()
        assert sent.calls == [
            (16, False),
            (4, False),
        ]  # one batch of the cap, then the rest when hold_s ran out
        assert (bridge.stats.submissions, bridge.stats.gathered, bridge.stats.enqueued) == (
            2,
            2,
            20,
        )

        # idle: nothing waits on the queue, so each event goes as it comes (no added latency)
        client.delete(queue)
        pusher = _push_slowly(client, name, [_element(i, tag + "-idle") for i in range(3)], 0.15)
        for _ in range(3):  # each step waits for the next event and sends it, not hold_s more
            started = time.monotonic()
            assert bridge.step()
            assert time.monotonic() - started < 0.45
        pusher.join()
        assert sent.calls[2:] == [(1, True), (1, True), (1, True)]
        assert bridge.stats.gathered == 2

        # the backlog drains while the bridge holds: it sends what it has at once
        client.rpush(queue, b"a waiting split task")
        client.rpush(name, _element(0, tag + "-drain"))
        threading.Timer(0.2, lambda: client.delete(queue)).start()
        started = time.monotonic()
        assert bridge.step()
        assert 0.15 < time.monotonic() - started < 1.5
        assert sent.calls[-1] == (1, False)
        assert client.llen(name) == 0 and client.llen(bridge.processing) == 0
        recorder.flush()  # what `pagefleet metrics` exports: submissions and their events, gathered or not
        after = _bridge_counts(client)
        assert {k: after.get(k, 0) - before.get(k, 0) for k in after} == {
            "bridge_submissions_total|gathered=true": 3,
            "bridge_events_total|gathered=true": 21,
            "bridge_submissions_total|gathered=false": 3,
            "bridge_events_total|gathered=false": 3,
        }
    finally:
        client.delete(name, queue, bridge.processing, bridge.dead)


def test_a_bridge_stopped_while_it_holds_a_burst_sends_it_first(redis_server: str) -> None:
    """SIGTERM (a receiver scaled down) mid-gather: the held events go out before the thread ends,
    not left in the processing list for a restart that may never come."""
    from pagefleet.workers.intake.bridge import start_bridge, stop_bridges

    client = bridge_client(redis_server, block_s=0.2)
    tag = uuid.uuid4().hex[:8]
    name, queue = f"inbox-{tag}", f"split-{tag}"
    sent = Sent()
    bridge = RedisBridge(
        client,
        name,
        _intake(client, sent),
        block_s=0.2,
        batch=16,
        hold=split_backlog(client, queue),
        hold_s=30.0,
        poll_s=0.02,
    )
    try:
        client.rpush(queue, b"a waiting split task")
        client.rpush(name, *[_element(i, tag) for i in range(3)])
        start_bridge(bridge)
        deadline = time.monotonic() + 5
        while client.llen(name):  # taken and held: the backlog stays, hold_s is long
            assert time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(0.2)
        assert sent.calls == [] and client.llen(bridge.processing) == 3
        started = time.monotonic()
        stop_bridges([bridge])
        assert (
            time.monotonic() - started < 5
            and bridge.thread is not None
            and not bridge.thread.is_alive()
        )
        assert sent.calls == [(3, False)] and client.llen(bridge.processing) == 0
    finally:
        client.delete(name, queue, bridge.processing, bridge.dead)


def test_a_gathered_submission_goes_as_whole_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """16 documents of a burst go as one `split_batch` of 16 (8 + 4 + 4 when tapered, the end
    of a submission an idle fleet spreads over its processes)."""
    from pagefleet.workers.settings import get_settings
    from pagefleet.workers.split.submit import batch_plan

    settings = get_settings()
    assert batch_plan(16, settings, taper=False) == [16]
    assert batch_plan(16, settings) == [8, 4, 4]
    assert batch_plan(40, settings, taper=False) == [14, 13, 13]


@pytest.fixture
def inbox_receiver(service_env: dict[str, str]):
    """An in-process receiver with an inbox and the bridges `pagefleet events` starts beside it."""
    from pagefleet.workers.fleet import jobs
    from pagefleet.workers.fleet.asgi import AsgiServer
    from pagefleet.workers.cli.event_receiver import start_bridges
    from pagefleet.workers.intake.bridge import stop_bridges
    from pagefleet.workers.intake.events import build_intake
    from pagefleet.workers.intake.receiver import BearerAuth, Inbox, Receiver, redis_ready
    from pagefleet.workers.settings import EventSettings, get_settings

    started: list[tuple[AsgiServer, list[RedisBridge]]] = []

    def start(**settings: Any) -> tuple[AsgiServer, list[RedisBridge]]:
        config = EventSettings(
            host="127.0.0.1", port=0, inbox_list=f"inbox-{uuid.uuid4().hex[:8]}", **settings
        )
        intake = build_intake(config, jobs.client())
        app = Receiver(
            intake,
            BearerAuth(TOKEN),
            ready=redis_ready(jobs.client()),
            inbox=Inbox(jobs.client(), config.inbox_list, intake.filters),
        ).app()
        started.append(
            (
                AsgiServer(app, "127.0.0.1", 0).start(),
                start_bridges(config, get_settings().broker.url, intake),
            )
        )
        return started[-1]

    yield start
    for server, bridges in started:
        server.stop()
        stop_bridges(bridges)
        for bridge in bridges:
            jobs.client().delete(bridge.list_name, bridge.processing, bridge.dead)


def test_inbox_queues_each_post_and_its_bridge_runs_the_jobs_once(
    fleet, tmp_path: Path, s3_bucket, inbox_receiver
) -> None:
    from pagefleet.workers.fleet import jobs
    from pagefleet.workers.intake.parse import parse_event_payload
    from pagefleet.workers.store.storage import S3Storage

    bucket, client = s3_bucket
    client.make_bucket(bucket + "-out")
    server, bridges = inbox_receiver(output=f"s3://{bucket}-out/r", suffix_filters=[".pdf"])
    bodies = []
    for i in range(6):
        path = one_page(tmp_path / f"up{i}.pdf", f"inbox document {i} hello world")
        etag = client.fput_object(bucket, f"in/up{i}.pdf", str(path)).etag.strip('"')
        bodies.append(
            minio_webhook_body(
                minio_record(
                    key=f"in/up{i}.pdf", bucket=bucket, etag=etag, size=path.stat().st_size
                )
            )
        )
    for body in [*bodies, bodies[0]]:  # MinIO replays the first one
        status, answer, _ = http(server.url + "/events", body)
        assert status == 200 and answer == {"queued": 1, "skipped": []}, answer
    status, answer, _ = http(server.url + "/events", raw=b"{not json")
    assert status == 400 and answer["error"]["code"] == "invalid_event"
    status, answer, _ = http(
        server.url + "/events", {"Records": [minio_record(name="s3:TestEvent")]}
    )
    assert status == 200 and answer["queued"] == 0
    notes = minio_webhook_body(
        minio_record(key="in/notes.txt", bucket=bucket)
    )  # the receiver's suffix filter
    status, answer, _ = http(server.url + "/events", notes)
    assert status == 200 and answer == {
        "queued": 0,
        "skipped": [{"reason": "suffix_filter", "detail": "in/notes.txt"}],
    }
    status, _, _ = http(server.url + "/events", bodies[1], token="wrong")
    assert status == 401

    intake = bridges[0].intake
    for body in bodies:
        obj = parse_event_payload(body).objects[0]
        info = jobs.get(intake.spec_for(obj).job_id) or {}
        deadline = time.monotonic() + 120
        while info.get("state") not in ("done", "failed"):
            assert time.monotonic() < deadline, info
            time.sleep(0.2)
            info = jobs.get(intake.spec_for(obj).job_id) or {}
        assert info["state"] == "done", info
        document = S3Storage(bucket + "-out", "r").get_json(
            f"{info['artifact_prefix']}/document.json"
        )
        assert f"inbox document {obj.key[5]} hello world" in document["pages"][0]["text"]
    bridge = bridges[0]
    assert (bridge.stats.enqueued, bridge.stats.duplicates) == (6, 1)
    assert jobs.client().llen(bridge.list_name) == 0 and jobs.client().llen(bridge.processing) == 0
    assert bridge.stats.elements == 7, "the TestEvent and the filtered upload were never queued"


def test_inbox_answers_503_when_redis_refuses(service_env: dict[str, str]) -> None:
    """A 2xx promises the event is on the list: where the push fails the sender must retry."""
    import redis

    from pagefleet.workers.errors import BrokerUnavailable
    from pagefleet.workers.intake.receiver import Inbox

    dead = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.5)
    body = json.dumps(minio_webhook_body(minio_record())).encode()
    with pytest.raises(BrokerUnavailable):
        Inbox(dead, "inbox-nowhere").put(body, "application/json")


def test_inbox_rides_out_a_broker_outage_and_queues_each_upload_once(
    service_env, tmp_path: Path
) -> None:
    """`pagefleet events --inbox-list` as deployed (a subprocess on a private Redis that no worker
    consumes): an event is queued and its bridge enqueues it; with Redis stopped a POST is 503
    (MinIO keeps it), after the restart its replay is queued and enqueued once, a second replay
    is queued and found a duplicate by the bridge; SIGTERM ends it cleanly."""
    import redis

    from tests.conftest import free_port
    from tests.integration.test_events import (
        _retry_until_accepted,
        _start_redis,
        _stop,
        events_process,
    )

    redis_port = free_port()
    private = _start_redis(redis_port, tmp_path)
    try:
        with events_process(
            service_env,
            tmp_path,
            redis_port,
            "--inbox-list",
            "inbox",
            PAGEFLEET_EVENTS__GATHER_S="0.2",
        ) as (url, log_path):

            def drained(client: redis.Redis, messages: int) -> None:
                deadline = time.monotonic() + 20
                while (
                    client.llen("split") < messages
                    or client.llen("inbox")
                    or client.llen("inbox:pagefleet-processing")
                ):
                    assert time.monotonic() < deadline, log_path.read_text()
                    time.sleep(0.1)

            status, answer, _ = http(
                url + "/events", {"Records": [minio_record(key="in/before.pdf", bucket="uploads")]}
            )
            assert status == 200 and answer == {"queued": 1, "skipped": []}, answer
            drained(redis.Redis(port=redis_port), 1)

            _stop(private)
            event = {
                "Records": [minio_record(key="in/outage.pdf", bucket="uploads", etag="e" * 32)]
            }
            status, body, headers = http(url + "/events", event)
            assert (
                status == 503
                and body["error"]["code"] == "broker_unavailable"
                and headers["Retry-After"]
            )

            private = _start_redis(
                redis_port, tmp_path
            )  # a fresh, empty broker on the same address
            status, answer = _retry_until_accepted(url + "/events", event)
            assert status == 200 and answer["queued"] == 1, answer
            client = redis.Redis(port=redis_port)
            drained(client, 1)
            assert (
                http(url + "/events", event)[0] == 200
            )  # MinIO replays once more: queued, then a duplicate
            drained(client, 1)
            time.sleep(0.5)
            assert client.llen("split") == 1, (
                "exactly one split message for the event and its replays"
            )
    finally:
        _stop(private)
