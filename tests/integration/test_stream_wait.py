"""The split task's wait for its document's ranges (`pagefleet.workers.collect.stream.Waiter`), on a real Redis: it
returns as soon as a range task says its range is stored, and gives up — so `split_done` collects —
when its lease is taken away, when other documents wait on the split queue, or when no range comes."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from pagefleet.workers.fleet import jobs
from pagefleet.workers.collect import stream

pytestmark = pytest.mark.integration


def _waiter(
    service_env: dict[str, str], queue: str = "split-test", idle_s: float = 30.0
) -> stream.Waiter:
    job_id = uuid.uuid4().hex
    lease = stream.lease(job_id)
    assert lease is not None and stream.held(job_id)
    assert stream.lease(job_id) is None  # one split task collects a document
    return stream.Waiter(job_id, lease, {1}, queue=queue, idle_s=idle_s, budget_s=60.0)


def test_returns_once_the_range_is_stored(service_env: dict[str, str]) -> None:
    waiter = _waiter(service_env)
    waiter.ready(1)  # the split task's own range
    later = threading.Timer(0.3, lambda: jobs.page_done(waiter.job_id, 3, stored_range=4))
    started = time.monotonic()
    later.start()
    waiter.ready(4)
    assert 0.25 < time.monotonic() - started < 5.0
    assert int(jobs.get(waiter.job_id)["pages_done"]) == 3  # the count went in the same round trip
    waiter.end()
    assert not stream.held(waiter.job_id)
    assert not jobs.client().exists(jobs.ranges_stored_key(waiter.job_id))


def test_gives_up_when_the_lease_is_taken_away(service_env: dict[str, str]) -> None:
    waiter = _waiter(service_env)
    threading.Timer(0.3, lambda: stream.stop(waiter.job_id)).start()
    with pytest.raises(stream.Abandoned, match="lease lost"):
        waiter.ready(4)
    waiter.end()


def test_gives_up_when_documents_wait_on_the_split_queue(service_env: dict[str, str]) -> None:
    queue = f"split-test-{uuid.uuid4().hex[:6]}"
    waiter = _waiter(service_env, queue=queue)
    jobs.client().rpush(queue, "a message")
    try:
        with pytest.raises(stream.Abandoned, match="documents wait"):
            waiter.ready(4)
    finally:
        jobs.client().delete(queue)
        waiter.end()


def test_gives_up_when_no_range_comes(service_env: dict[str, str]) -> None:
    waiter = _waiter(service_env, idle_s=0.5)
    with pytest.raises(stream.Abandoned, match="no range stored"):
        waiter.ready(4)
    waiter.end()


def test_a_range_counted_without_redis_is_a_typed_error() -> None:
    """The range task's count (and its 'stored' mark) meets an unreachable Redis as BrokerUnavailable,
    the retryable error every job call raises, not redis-py's own."""
    import redis

    from tests.conftest import free_port
    from pagefleet.workers.errors import BrokerUnavailable

    unreachable = redis.Redis(port=free_port(), socket_connect_timeout=1)
    with pytest.raises(BrokerUnavailable):
        jobs.page_done(uuid.uuid4().hex, 3, unreachable, stored_range=4)
