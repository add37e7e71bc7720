"""`pagefleet.workers.app.send` keeps one broker connection per process and broker (issue 15: a connection
per message cost a producer ~20 ms of CPU per document): messages land on the queue, the
connection is reused, a restarted Redis is reconnected to, another broker or a forked child
gets its own connection, and a broker that is down still fails as a broker error."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from pagefleet.workers.fleet.launcher import RedisServer
from pagefleet.workers import app as appmod
from pagefleet.workers.app import send, use_broker

pytestmark = pytest.mark.integration


@pytest.fixture()
def broker(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path, aof=True)
    server.start()
    before = (
        os.environ.get("PAGEFLEET_BROKER__URL"),
        os.environ.get("PAGEFLEET_BROKER__RESULT_BACKEND"),
    )
    use_broker(server.url)
    try:
        yield server
    finally:
        server.stop()
        for name, value in zip(
            ("PAGEFLEET_BROKER__URL", "PAGEFLEET_BROKER__RESULT_BACKEND"), before
        ):
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        use_broker(os.environ.get("PAGEFLEET_BROKER__URL", "redis://127.0.0.1:6379/0"))


def _queued(url: str, queue: str) -> list[str]:
    """Task ids waiting on a queue (kombu's Redis transport: a list named after the queue)."""
    with redis.Redis.from_url(url) as r:
        return [json.loads(m)["headers"]["id"] for m in r.lrange(queue, 0, -1)]


def test_messages_land_on_one_kept_connection(broker: RedisServer) -> None:
    send("pagefleet.callback", ["http://x", {}], queue="collect", task_id="t-1", label="(test)")
    first = appmod._producer["conn"]
    with redis.Redis.from_url(broker.url) as reader:
        newest = max(
            int(c["id"]) for c in reader.client_list()
        )  # Redis numbers connections in order
        for n in range(2, 7):
            send(
                "pagefleet.callback",
                ["http://x", {}],
                queue="collect",
                task_id=f"t-{n}",
                label="(test)",
            )
        assert appmod._producer["conn"] is first
        opened = [c for c in reader.client_list() if int(c["id"]) > newest]
        assert opened == []  # five more messages, no new connection (others may close meanwhile)
    assert sorted(_queued(broker.url, "collect")) == [f"t-{n}" for n in range(1, 7)]


def test_a_restarted_redis_is_reconnected_to(broker: RedisServer) -> None:
    send("pagefleet.callback", ["http://x", {}], queue="collect", task_id="before", label="(test)")
    broker.kill()  # the kept socket is dead now
    broker.start()  # same port; AOF keeps the first message
    send("pagefleet.callback", ["http://x", {}], queue="collect", task_id="after", label="(test)")
    assert sorted(_queued(broker.url, "collect")) == ["after", "before"]


def test_a_forked_child_and_another_broker_get_their_own(
    broker: RedisServer, tmp_path: Path
) -> None:
    send("pagefleet.callback", ["http://x", {}], queue="collect", task_id="parent", label="(test)")
    parent = appmod._producer["conn"]
    pid = os.fork()
    if pid == 0:  # the child must not write on the parent's socket
        try:
            send(
                "pagefleet.callback",
                ["http://x", {}],
                queue="collect",
                task_id="child",
                label="(test)",
            )
            os._exit(0 if appmod._producer["conn"] is not parent else 3)
        except BaseException:  # noqa: BLE001 — any failure is the child's exit status
            os._exit(4)
    assert os.waitpid(pid, 0)[1] == 0
    assert sorted(_queued(broker.url, "collect")) == ["child", "parent"]
    other = RedisServer(tmp_path / "other", aof=True)
    (tmp_path / "other").mkdir()
    other.start()
    try:
        use_broker(other.url)
        send(
            "pagefleet.callback", ["http://x", {}], queue="collect", task_id="other", label="(test)"
        )
        assert _queued(other.url, "collect") == ["other"]
        assert appmod._producer["conn"] is not parent
    finally:
        other.stop()
        use_broker(broker.url)


def test_a_broker_that_is_down_fails_as_a_broker_error(broker: RedisServer) -> None:
    send("pagefleet.callback", ["http://x", {}], queue="collect", task_id="up", label="(test)")
    broker.kill()
    with pytest.raises(Exception) as failure:
        send(
            "pagefleet.callback", ["http://x", {}], queue="collect", task_id="down", label="(test)"
        )
    assert isinstance(failure.value, (OSError, appmod.OperationalError, redis.ConnectionError))
    assert "conn" not in appmod._producer  # nothing stale is kept for the next send
