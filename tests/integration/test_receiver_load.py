"""The event receiver under load and under a full broker, over real HTTP (uvicorn on loopback)
against a private redis-server:

- 200 concurrent POSTs (50 uploads, each delivered 4 times at once, as MinIO does after a
  restart): every answer is 2xx or 503 + Retry-After; replaying the 503s as MinIO would, every
  upload ends up enqueued exactly once (counted in the split queue itself).
- Redis at maxmemory (noeviction), or right below it: a POST gets 503 (`broker_full`) and /readyz 503
  saying why, until memory frees.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.conftest import PrivateFleet
from tests.unit.test_event_parser import minio_record
from pagefleet.workers.fleet.asgi import AsgiServer
from pagefleet.workers.intake.events import build_intake
from pagefleet.workers.intake.receiver import BearerAuth, Limits, Receiver, redis_ready
from pagefleet.workers.metrics import Recorder
from pagefleet.workers.settings import EventSettings

pytestmark = pytest.mark.integration
TOKEN = "load-" + uuid.uuid4().hex[:8]


def post(url: str, payload: Any, timeout: float = 60) -> tuple[int, dict[str, Any], str | None]:
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read()), response.headers.get("Retry-After")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}"), exc.headers.get("Retry-After")


def get(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def start_receiver(client: redis.Redis, *, max_concurrency: int) -> tuple[AsgiServer, Recorder]:
    # the load's events name objects never written: no HEAD (tests/integration/test_intake_sources.py)
    settings = EventSettings(
        host="127.0.0.1", port=0, output="file:///tmp/pagefleet-load-out", head_objects=False
    )
    recorder = Recorder(client, flush_s=0.2)
    receiver = Receiver(
        build_intake(settings, client),
        BearerAuth(TOKEN),
        limits=Limits(max_concurrency=max_concurrency, retry_after_s=1),
        ready=redis_ready(client),
        observe=recorder.receiver_request,
    )
    return AsgiServer(receiver.app(), "127.0.0.1", 0).start(), recorder


def split_messages(client: redis.Redis) -> Counter[str]:
    """Task ids of the split messages waiting in Redis (kombu keeps one JSON message per element)."""
    return Counter(json.loads(m)["headers"]["id"] for m in client.lrange("split", 0, -1))


def event(n: int) -> dict[str, Any]:
    return {"Records": [minio_record(key=f"load/doc-{n}.pdf", bucket="uploads", etag=f"{n:032x}")]}


def test_200_concurrent_posts_answer_2xx_or_503_and_enqueue_each_upload_once(
    tmp_path: Path,
) -> None:
    with PrivateFleet(tmp_path, {}, ()) as fleet:
        client = redis.Redis.from_url(fleet.url)
        server, recorder = start_receiver(client, max_concurrency=8)
        try:
            deliveries = [n % 50 for n in range(200)]
            with ThreadPoolExecutor(max_workers=200) as pool:
                answers = list(
                    pool.map(lambda n: (n, *post(server.url + "/events", event(n))), deliveries)
                )
            statuses = Counter(status for _, status, _, _ in answers)
            assert set(statuses) <= {200, 503}, statuses
            assert statuses[503] and statuses[200], f"the cap must have been reached: {statuses}"
            assert all(retry for _, status, _, retry in answers if status == 503), (
                "503 without Retry-After"
            )
            pending = sorted(
                {n for n, status, _, _ in answers if status == 503}
                - {n for n, s, _, _ in answers if s == 200}
            )
            for n in pending:  # what MinIO does with its queue_dir: replay until a 2xx
                deadline = time.monotonic() + 30
                while post(server.url + "/events", event(n))[0] != 200:
                    assert time.monotonic() < deadline
                    time.sleep(0.2)
            messages = split_messages(client)
            assert len(messages) == 50 and set(messages.values()) == {1}, messages.most_common(3)
            recorder.flush()
            outcomes = {k.decode(): int(v) for k, v in client.hgetall("pagefleet:metrics").items()}
            assert (
                outcomes.get("receiver_requests_total|outcome=overloaded", 0)
                + outcomes.get("receiver_requests_total|outcome=in_progress", 0)
                >= statuses[503]
            )
        finally:
            server.stop()


def test_redis_at_maxmemory_gives_503_and_readyz_says_why(tmp_path: Path) -> None:
    with PrivateFleet(tmp_path, {}, ()) as fleet:
        client = redis.Redis.from_url(fleet.url)
        server, _ = start_receiver(client, max_concurrency=8)
        try:
            assert get(server.url + "/readyz") == (200, {"ok": True, "reason": "ok"})
            client.config_set(
                "maxmemory", "4mb"
            )  # noeviction (RedisServer's policy): writes refused at the limit
            with pytest.raises(redis.exceptions.OutOfMemoryError):
                for n in range(10_000):
                    client.set(f"ballast:{n}", b"x" * 4096)
            status, body, retry = post(server.url + "/events", event(1))
            assert status == 503 and body["error"]["code"] == "broker_full" and retry, body
            assert "broker is full" in body["error"]["message"], body
            status, body = get(server.url + "/readyz")
            assert status == 503 and "maxmemory" in body["reason"], body
            assert client.llen("split") == 0
            client.delete(*client.keys("ballast:*"))
            # hovering right below the limit: writes still pass, but a job accepted now might not run
            client.config_set("maxmemory", int(client.info("memory")["used_memory"]) + 32 * 1024)
            status, body, retry = post(server.url + "/events", event(1))
            assert status == 503 and body["error"]["code"] == "broker_full" and retry, body
            assert get(server.url + "/readyz")[0] == 503 and client.llen("split") == 0
            client.config_set("maxmemory", "4mb")
            assert post(server.url + "/events", event(1))[0] == 200
            assert get(server.url + "/readyz")[0] == 200 and client.llen("split") == 1
        finally:
            server.stop()
