"""The bucket-event receiver over real HTTP: a PDF put into the S3 server on loopback (moto), a
MinIO- or AWS-shaped event POSTed to the receiver, the job run end to end by real Celery workers
against real Redis, artifacts read back from the output bucket; duplicates, bad tokens and a
broker outage (a private redis-server stopped and restarted under a receiver subprocess)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.conftest import ROOT, free_port, wait_for_job
from tests.unit.test_event_parser import aws_record, minio_record, minio_webhook_body
from pagefleet.workers.errors import BrokerUnavailable
from pagefleet.workers.intake.events import EventDedup, Outcome, build_intake
from pagefleet.workers.fleet.asgi import AsgiServer
from pagefleet.workers.intake.receiver import BearerAuth, Limits, Receiver, redis_ready
from pagefleet.workers.settings import EventSettings
from pagefleet.workers.store.storage import S3Storage

pytestmark = pytest.mark.integration
TOKEN = "test-token-" + uuid.uuid4().hex[:8]
HEBREW_PDF = "born_digital_hebrew.pdf"


def http(
    url: str,
    payload: Any = None,
    *,
    token: str | None = TOKEN,
    method: str = "POST",
    raw: bytes | None = None,
    timeout: float = 30,
) -> tuple[int, dict[str, Any], Any]:
    data = (
        raw if raw is not None else (json.dumps(payload).encode() if payload is not None else None)
    )
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, body, headers = response.status, response.read(), response.headers
    except urllib.error.HTTPError as exc:
        status, body, headers = exc.code, exc.read(), exc.headers  # case-insensitive lookups
    return status, (json.loads(body) if body else {}), headers


@pytest.fixture
def receiver(service_env: dict[str, str]) -> Iterator[Any]:
    """Start an in-process receiver (uvicorn on loopback, real HTTP) against the session Redis."""
    from pagefleet.workers.fleet import jobs

    servers: list[AsgiServer] = []

    def start(**settings: Any) -> AsgiServer:
        config = EventSettings(host="127.0.0.1", port=0, **settings)
        app = Receiver(
            build_intake(config, jobs.client()),
            BearerAuth(TOKEN),
            limits=Limits(max_body_bytes=config.max_body_bytes),
            ready=redis_ready(jobs.client()),
        ).app()
        servers.append(AsgiServer(app, "127.0.0.1", 0).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


class TaskEvents:
    """Counts `task-received` events per task id, from the workers' real event stream."""

    def __init__(self) -> None:
        from pagefleet.workers.app import app
        from pagefleet.workers.fleet import jobs

        self.counts: Counter[str] = Counter()
        self._redis = jobs.client()
        baseline = int(self._redis.execute_command("PUBSUB", "NUMPAT"))
        self._conn = app.connection_for_read()
        self._recv = app.events.Receiver(self._conn, handlers={"task-received": self._on}, app=app)
        self._thread = threading.Thread(
            target=self._recv.capture, kwargs={"limit": None, "wakeup": False}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 15
        while (
            int(self._redis.execute_command("PUBSUB", "NUMPAT")) <= baseline
        ):  # subscribed for real
            assert time.monotonic() < deadline, "event receiver never subscribed"
            time.sleep(0.05)

    def _on(self, event: dict[str, Any]) -> None:
        self.counts[event["uuid"]] += 1

    def close(self) -> None:
        self._recv.should_stop = True
        self._thread.join(timeout=5)
        self._conn.release()


class CallbackSink:
    """A local HTTP endpoint collecting completion callbacks."""

    def __init__(self) -> None:
        received: "queue.Queue[dict]" = queue.Queue()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                received.put(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.received = received
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/done"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, job_id: str, timeout_s: float = 30) -> dict:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                notice = self.received.get(timeout=0.5)
            except queue.Empty:
                continue
            if notice.get("job_id") == job_id:
                return notice
        raise AssertionError(f"no callback for {job_id}")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def put_pdf(client: Any, bucket: str, key: str, path: Path) -> tuple[str, int]:
    result = client.fput_object(bucket, key, str(path), content_type="application/pdf")
    return result.etag.strip('"'), path.stat().st_size


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_minio_event_runs_once_end_to_end(fleet, fixtures_dir: Path, s3_bucket, receiver) -> None:
    from pagefleet.workers.fleet import jobs

    bucket, client = s3_bucket
    client.make_bucket(bucket + "-out")
    key = "incoming/דוח שנתי + 2024%.pdf"  # unicode, space, '+', '%': all URL-encoded in the event
    etag, size = put_pdf(client, bucket, key, fixtures_dir / HEBREW_PDF)
    record = minio_record(
        key=urllib.parse.quote_plus(key, safe="/"), bucket=bucket, etag=etag, size=size
    )
    event = minio_webhook_body(record)
    sink = CallbackSink()
    server = receiver(
        output=f"s3://{bucket}-out/results", suffix_filters=[".pdf"], callback_url=sink.url
    )
    notices = jobs.client().pubsub(ignore_subscribe_messages=True)
    notices.subscribe(jobs.DONE_CHANNEL)
    events = TaskEvents()
    try:
        status, first, _ = http(server.url + "/events", event)
        assert status == 200, first
        assert len(first["enqueued"]) == 1 and first["duplicates"] == []
        job_id = first["enqueued"][0]["job_id"]
        status, second, _ = http(server.url + "/", event)  # MinIO replays: same event again
        assert (
            status == 200
            and second["enqueued"] == []
            and second["duplicates"][0]["job_id"] == job_id
        )

        info = wait_for_job(job_id, timeout_s=120)
        assert info["state"] == "done" and info["status"] == "accepted", info
        assert info["artifact_prefix"] == f"artifacts/{sha256_of(fixtures_dir / HEBREW_PDF)}"
        out = S3Storage(bucket + "-out", "results")
        document = out.get_json(f"{info['artifact_prefix']}/document.json")
        assert document["source"]["filename"] == "דוח שנתי + 2024%.pdf"
        assert document["status"] == "accepted" and document["pages"][0]["route"] == "text_layer"
        assert out.exists(f"{info['artifact_prefix']}/text.txt")

        status, third, _ = http(server.url + "/events", event)  # after completion: still one job
        assert status == 200 and third["duplicates"][0]["job_id"] == job_id
        callback = sink.wait_for(job_id)
        assert (
            callback["status"] == "accepted"
            and callback["artifact_prefix"] == info["artifact_prefix"]
        )
        announced = _wait_notice(notices, job_id)
        assert announced["storage"] == f"s3://{bucket}-out/results"
        time.sleep(
            1.5
        )  # a wrongly enqueued duplicate would be received by the idle split worker by now
        assert events.counts[f"{job_id}-split"] == 1, dict(events.counts)
    finally:
        events.close()
        notices.close()
        sink.close()


def _wait_notice(pubsub: Any, job_id: str, timeout_s: float = 30) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        message = pubsub.get_message(timeout=0.5)
        if message and json.loads(message["data"]).get("job_id") == job_id:
            return json.loads(message["data"])
    raise AssertionError(f"no completion notice on the Redis channel for {job_id}")


def test_aws_events_end_to_end(fleet, fixtures_dir: Path, s3_bucket, receiver) -> None:
    bucket, client = s3_bucket
    client.make_bucket(bucket + "-out")
    pdf = fixtures_dir / HEBREW_PDF
    etag, _ = put_pdf(client, bucket, "in/aws report.pdf", pdf)
    put_pdf(client, bucket, "in/no etag+1.pdf", pdf)  # same bytes, another key: another job
    records = [
        aws_record(key="in/aws+report.pdf", bucket=bucket, etag=etag, version_id=None),
        aws_record(
            key="in/no+etag%2B1.pdf", bucket=bucket, etag="", version_id=None
        ),  # ETag looked up
        aws_record(key="in/gone.pdf", bucket=bucket, name="ObjectRemoved:Delete"),
        aws_record(key="in/notes.txt", bucket=bucket),
    ]
    server = receiver(output=f"s3://{bucket}-out", suffix_filters=[".pdf"])
    status, summary, _ = http(server.url + "/events", {"Records": records})
    assert status == 200, summary
    assert [e["key"] for e in summary["enqueued"]] == ["in/aws report.pdf", "in/no etag+1.pdf"]
    assert summary["enqueued"][1]["etag"] == etag, "the missing ETag came from a HEAD on the object"
    assert sorted(s["reason"] for s in summary["skipped"]) == [
        "not_object_created",
        "suffix_filter",
    ]
    out = S3Storage(bucket + "-out")
    names = {entry["key"].split("/")[-1] for entry in summary["enqueued"]}
    for entry in summary["enqueued"]:
        info = wait_for_job(entry["job_id"], timeout_s=120)
        assert info["state"] == "done", info
        # same bytes → same artifacts/<sha256>/: whichever job finished last named the file
        assert (
            out.get_json(f"{info['artifact_prefix']}/document.json")["source"]["filename"] in names
        )


def test_auth_and_bad_requests(service_env, receiver) -> None:
    server = receiver(output="s3://nowhere/out", max_body_bytes=1024)
    event = {"Records": [minio_record(bucket="uploads")]}
    for token in ("wrong", None, TOKEN + "x"):
        status, body, headers = http(server.url + "/events", event, token=token)
        assert (
            status == 401
            and body["error"]["code"] == "unauthorized"
            and "Bearer" in headers["WWW-Authenticate"]
        )
    assert http(server.url + "/events", method="HEAD")[0] == 200
    assert http(server.url + "/events", method="HEAD", token="nope")[0] == 401
    assert http(server.url + "/healthz", method="GET", token=None)[:2] == (200, {"ok": True})
    assert http(server.url + "/readyz", method="GET", token=None)[:2] == (
        200,
        {"ok": True, "reason": "ok"},
    )
    status, body, _ = http(server.url + "/events", raw=b'{"Records": [')
    assert status == 400 and body["error"]["code"] == "invalid_event"
    assert "Traceback" not in json.dumps(body)
    status, body, _ = http(server.url + "/events", {"hello": "world"})
    assert status == 400 and "no S3 event records" in body["error"]["message"]
    status, body, _ = http(
        server.url + "/events", {"Service": "Amazon S3", "Event": "s3:TestEvent"}
    )
    assert status == 200 and body["skipped"][0]["reason"] == "test_event"
    assert http(server.url + "/nope", event)[0] == 404
    assert http(server.url + "/events", method="GET")[0] == 405
    assert http(server.url + "/events", raw=b" " * 4096)[0] == 413
    chunked = urllib.request.Request(
        server.url + "/events",
        data=iter([b" " * 800, b" " * 800]),
        method="POST",
        headers={"Authorization": f"Bearer {TOKEN}", "Transfer-Encoding": "chunked"},
    )
    with pytest.raises(
        urllib.error.HTTPError
    ) as too_large:  # no Content-Length: counted while streaming
        urllib.request.urlopen(chunked, timeout=10)
    assert too_large.value.code == 413


def test_dedup_protocol(service_env) -> None:
    from pagefleet.workers.fleet import jobs

    dedup = EventDedup(jobs.client(), claim_ttl_s=30, dedup_ttl_s=60)
    job_id = "dedup-" + uuid.uuid4().hex
    calls: list[str] = []

    def failing() -> None:
        calls.append("fail")
        raise BrokerUnavailable("broker down")

    with pytest.raises(BrokerUnavailable):
        dedup.enqueue_once(job_id, failing)
    assert dedup.state(job_id) is None, "a failed enqueue must not leave a marker behind"

    def slow() -> None:  # while one delivery enqueues, a concurrent one is told to retry
        calls.append("ok")
        assert dedup.enqueue_once(job_id, lambda: calls.append("concurrent")) == Outcome.IN_PROGRESS

    assert dedup.enqueue_once(job_id, slow) == Outcome.ENQUEUED
    assert dedup.enqueue_once(job_id, lambda: calls.append("again")) == Outcome.DUPLICATE
    assert calls == ["fail", "ok"]
    assert (
        dedup.state(job_id).startswith("enqueued")
        and 0 < jobs.client().ttl(dedup.key(job_id)) <= 60
    )


def _start_redis(port: int, workdir: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [
            shutil.which("redis-server") or "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    client = redis.Redis(port=port, socket_connect_timeout=0.5)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if client.ping():
                return proc
        except redis.RedisError:
            time.sleep(0.05)
    proc.kill()
    raise AssertionError("private redis-server did not start")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        proc.wait(timeout=10)


@contextlib.contextmanager
def events_process(
    service_env: dict[str, str], tmp_path: Path, redis_port: int, *args: str, **env: str
) -> Iterator[tuple[str, Path]]:
    """`pagefleet events` as deployed: a subprocess on the private Redis at `redis_port`, with
    `args` added; yields (its URL, its log) once it serves, and must exit 0 on SIGTERM. Its events
    name objects never written (the drills here are the broker's): it does not HEAD them."""
    http_port = free_port()
    log_path = tmp_path / "events.log"
    receiver = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pagefleet.workers.cli.main",
            "events",
            "--host",
            "127.0.0.1",
            "--port",
            str(http_port),
            "--token-env",
            "EVENTS_TOKEN",
            "--output",
            "s3://results/out",
            "--broker",
            f"redis://127.0.0.1:{redis_port}/0",
            *args,
        ],
        cwd=ROOT,
        env=dict(
            os.environ,
            **service_env,
            EVENTS_TOKEN=TOKEN,
            PAGEFLEET_OBSERVABILITY__LOGLEVEL="INFO",
            PAGEFLEET_EVENTS__HEAD_OBJECTS="false",
            **env,
        ),
        stdout=subprocess.DEVNULL,
        stderr=open(log_path, "wb"),
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{http_port}"
    try:
        _wait_http(url + "/healthz", receiver, log_path)
        yield url, log_path
    finally:
        receiver.send_signal(signal.SIGTERM)
        try:
            assert receiver.wait(timeout=15) == 0, log_path.read_text()
        finally:
            if receiver.poll() is None:
                receiver.kill()


def test_broker_outage_gives_503_then_200(service_env, tmp_path: Path) -> None:
    """`pagefleet events` as a subprocess on a private Redis: stop it → 503 (MinIO keeps the event
    and retries), start it again on the same port → the retry is accepted and enqueued once; the
    Redis-target bridge in the same process rides out the outage too."""
    redis_port = free_port()
    private = _start_redis(redis_port, tmp_path)
    try:
        with events_process(
            service_env, tmp_path, redis_port, "--redis-bridge-list", "bucketevents"
        ) as (url, log_path):
            event = {
                "Records": [minio_record(key="in/outage.pdf", bucket="uploads", etag="e" * 32)]
            }
            status, summary, _ = http(
                url + "/events", {"Records": [minio_record(key="in/before.pdf", bucket="uploads")]}
            )
            assert status == 200 and len(summary["enqueued"]) == 1, summary

            _stop(private)
            status, body, headers = http(url + "/events", event)
            assert (
                status == 503
                and body["error"]["code"] == "broker_unavailable"
                and headers["Retry-After"]
            )
            assert http(url + "/readyz", method="GET", token=None)[0] == 503

            private = _start_redis(
                redis_port, tmp_path
            )  # a fresh, empty broker on the same address
            status, summary = _retry_until_accepted(url + "/events", event)
            assert status == 200 and len(summary["enqueued"]) == 1, summary
            assert (
                http(url + "/events", event)[1]["duplicates"][0]["job_id"]
                == summary["enqueued"][0]["job_id"]
            )
            client = redis.Redis(port=redis_port)
            assert client.llen("split") == 1, "exactly one split message for the retried event"

            # the same process also drains MinIO's Redis target list, and survived the outage
            element = [
                {
                    "Event": [
                        minio_record(key="in/via+redis.pdf", bucket="uploads", etag="f" * 32)
                    ],
                    "EventTime": "2025-01-02T03:04:05.678Z",
                }
            ]
            client.rpush("bucketevents", json.dumps(element))
            deadline = time.monotonic() + 20
            while (
                client.llen("split") < 2
                or client.llen("bucketevents")
                or client.llen("bucketevents:pagefleet-processing")
            ):
                assert time.monotonic() < deadline, log_path.read_text()
                time.sleep(0.1)
    finally:
        _stop(private)


def _wait_http(url: str, proc: subprocess.Popen, log_path: Path, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"receiver exited: {log_path.read_text()}"
        try:
            if http(url, method="GET", token=None, timeout=2)[0] == 200:
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"receiver did not come up: {log_path.read_text()}")


def _retry_until_accepted(url: str, event: dict, timeout_s: float = 20) -> tuple[int, dict]:
    """What MinIO does with its queue_dir: replay the event until it gets a 2xx (bounded here)."""
    deadline = time.monotonic() + timeout_s
    status, body = 0, {}
    while time.monotonic() < deadline:
        status, body, _ = http(url, event)
        if status == 200:
            return status, body
        time.sleep(0.5)
    return status, body
