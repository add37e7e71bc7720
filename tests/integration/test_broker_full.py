"""Redis at its `maxmemory` (noeviction), on a real redis-server: the broker transport still
acknowledges and a worker's writes wait for memory (`pagefleet.workers.fleet.broker`); producers — the
transport outside a worker, `check_room`, the studio's upload — refuse with `broker_full`."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from kombu import Queue

from tests.integration.test_review_studio import StudioProcess, _request
from pagefleet.workers.errors import BrokerFull
from pagefleet.workers.fleet import broker
from pagefleet.workers.fleet.launcher import RedisServer

pytestmark = pytest.mark.integration


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[tuple[str, redis.Redis]]:
    server = RedisServer(tmp_path)
    url = server.start()
    try:
        yield url, redis.Redis.from_url(url)
    finally:
        server.stop()


def _ballast(client: redis.Redis) -> None:
    """A few MB in use, so that a limit can go below what is used."""
    for n in range(600):
        client.set(f"pagefleet:test:ballast:{n}", b"x" * 4096)


def _fill(client: redis.Redis) -> None:
    """Every write that needs memory is refused from now on."""
    _ballast(client)
    used = int(client.info("memory")["used_memory"])
    client.config_set("maxmemory", max(used - 200_000, 1_000_000))
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        client.set("pagefleet:test:probe", "x" * 1000)


def test_ack_at_maxmemory_and_a_producer_is_refused(
    private_redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pagefleet.workers.app import app

    url, client = private_redis
    monkeypatch.setitem(broker._WAIT, "on", False)
    with app.connection_for_write(url) as conn:
        producer = conn.Producer()
        for n in range(2):
            producer.publish(
                {"n": n}, routing_key="drill", declare=[Queue("drill")], serializer="json"
            )
        got: list = []
        consumer = conn.Consumer(
            [Queue("drill")],
            callbacks=[lambda _body, message: got.append(message)],
            accept=["json"],
        )
        consumer.qos(prefetch_count=1)
        consumer.consume()
        conn.drain_events(timeout=5)
        assert len(got) == 1 and client.hlen("unacked") == 1
        _fill(client)
        got[0].ack()  # kombu's own ack (ZREM + HDEL in MULTI) raised OutOfMemoryError here
        assert client.hlen("unacked") == 0
        with pytest.raises(BrokerFull, match="broker is full"):
            producer.publish({"n": 9}, routing_key="drill", serializer="json")
        with pytest.raises(BrokerFull, match="maxmemory"):
            broker.check_room(client)


def test_a_worker_waits_for_memory(private_redis, monkeypatch: pytest.MonkeyPatch) -> None:
    from pagefleet.workers.app import app

    url, client = private_redis
    monkeypatch.setitem(broker._WAIT, "on", True)
    _fill(client)
    threading.Timer(1.5, lambda: client.config_set("maxmemory", 0)).start()
    started = time.monotonic()
    with app.connection_for_write(url) as conn:
        conn.Producer().publish(
            {"n": 1}, routing_key="drill", declare=[Queue("drill")], serializer="json"
        )
    assert 1.0 < time.monotonic() - started < 10 and client.llen("drill") == 1
    _fill(client)
    threading.Timer(1.5, lambda: client.config_set("maxmemory", 0)).start()
    waiting = redis.Redis.from_url(url, **broker.client_options())
    started = time.monotonic()
    waiting.hset("pagefleet:test:job", "state", "ocr")
    assert 1.0 < time.monotonic() - started < 10


def test_check_room_refuses_right_below_the_limit(private_redis) -> None:
    _url, client = private_redis
    broker.check_room(client)  # no maxmemory: never full
    _ballast(client)
    client.config_set("maxmemory", int(client.info("memory")["used_memory"]) + 128 * 1024)
    client.set("pagefleet:test:small", "1")  # writes still pass …
    with pytest.raises(BrokerFull):  # … but a job accepted now might not run
        broker.check_room(client)


def test_studio_upload_answers_503_when_the_broker_is_full(
    private_redis, fixtures_dir: Path, tmp_path: Path
) -> None:
    url, client = private_redis
    served = tmp_path / "served"
    served.mkdir()
    with StudioProcess(str(served), tmp_path, "--broker", url) as studio:
        _, _, body = _request(studio.base, "/")
        csrf = re.search(rb'data-csrf="([^"]+)"', body).group(1).decode()
        _fill(client)
        pdf = (fixtures_dir / "born_digital_hebrew.pdf").read_bytes()
        status, headers, answer = _request(
            studio.base,
            "/upload?name=a.pdf",
            "POST",
            {"x-csrf-token": csrf, "content-type": "application/pdf"},
            pdf,
        )
    assert status == 503 and headers.get("retry-after"), (status, answer)
    assert json.loads(answer)["code"] == "broker_full"


def test_a_workers_chord_writes_wait_for_memory(
    private_redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A split applies its OCR chord (the chord's size in the result backend) and an OCR task counts
    itself into it: at maxmemory both wait for memory. A refused chord size would fail the split
    with an error no retry covers, and the document would wait for the watchdog's deadline."""
    from pagefleet.workers.app import ResultBackend, app

    url, client = private_redis
    monkeypatch.setitem(broker._WAIT, "on", True)
    backend = ResultBackend(app=app, url=url)
    _fill(client)
    threading.Timer(1.5, lambda: client.config_set("maxmemory", 0)).start()
    started = time.monotonic()
    backend.set_chord_size("drill-group", 3)
    assert 1.0 < time.monotonic() - started < 10
    assert client.get(backend.get_key_for_group("drill-group", ".s")) == b"3"
