"""Redis as a broker that can fill up. With `maxmemory` and `noeviction`, Redis refuses writes
(`OutOfMemoryError`) but still serves reads and deletes. The fleet's answer:

    producers   `check_room` refuses a job (`BrokerFull`) once Redis uses `broker_full_ratio` of its
                `maxmemory` or refuses a write: the job would not run, so it is never accepted.
    workers     after `wait_when_full()` (each worker process), a write Redis refuses is tried again
                with backoff for up to `broker_full_wait_s`: the task waits for memory instead of
                failing, and finishes once memory is freed.
    `Transport` kombu's Redis transport with an acknowledgement that works at the limit: kombu
                removes an acked message from its unacked index in a MULTI block, and Redis refuses
                to queue any command in MULTI at `maxmemory` (the worker then died on
                "Unrecoverable error"); ZREM and HDEL sent alone are allowed and free memory. A
                delivery's unacked record and a publish wait out a full Redis in a worker (the
                message would be lost otherwise); a producer's publish raises `BrokerFull`.

`memory` reads `used_memory` and `maxmemory` (0: no limit) for `check_room` and the metrics.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import redis
from kombu.transport import redis as kombu_redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from pagefleet.workers.errors import BrokerFull, BrokerUnavailable

T = TypeVar("T")
_WAIT = {"on": False}
_BACKOFF_CAP_S = 2.0


def wait_when_full() -> None:
    """This process is a worker: its writes wait for a full Redis instead of failing."""
    _WAIT["on"] = True


def waits_when_full() -> bool:
    return _WAIT["on"]


def _wait_s() -> float:
    from pagefleet.workers.settings import get_settings

    return get_settings().broker.full_wait_s


def client_options() -> dict[str, Any]:
    """redis-py options for the fleet's own clients (`pagefleet.workers.fleet.jobs`): in a worker, a command
    refused at `maxmemory` is sent again with backoff, about `broker_full_wait_s` in all."""
    if not waits_when_full():
        return {}
    retries = max(1, int(_wait_s() / _BACKOFF_CAP_S))
    return {
        "retry": Retry(ExponentialBackoff(cap=_BACKOFF_CAP_S, base=0.1), retries),
        "retry_on_error": [redis.exceptions.OutOfMemoryError],
    }


def wait_out_full(call: Callable[[], T]) -> T:
    """`call()`; at `maxmemory` a worker tries again with backoff (up to `broker_full_wait_s`), any
    other process gets `BrokerFull` at once."""
    deadline = time.monotonic() + (_wait_s() if waits_when_full() else 0.0)
    delay = 0.1
    while True:
        try:
            return call()
        except redis.exceptions.OutOfMemoryError as exc:
            if time.monotonic() + delay > deadline:
                raise BrokerFull(f"the broker is full (Redis at maxmemory): {exc}") from exc
            time.sleep(delay * (0.5 + random.random() / 2))
            delay = min(delay * 2, _BACKOFF_CAP_S)


def memory(client: redis.Redis) -> tuple[int, int]:
    """(used_memory, maxmemory) in bytes; maxmemory 0 means no limit."""
    info = client.info("memory")
    return int(info.get("used_memory", 0)), int(info.get("maxmemory", 0))


def check_room(client: redis.Redis, ratio: float | None = None) -> None:
    """`BrokerFull` when Redis is at or near its `maxmemory` (`broker_full_ratio`); `BrokerUnavailable`
    when it cannot be asked."""
    if ratio is None:
        from pagefleet.workers.settings import get_settings

        ratio = get_settings().broker.full_ratio
    try:
        used, limit = memory(client)
    except redis.RedisError as exc:
        raise BrokerUnavailable(f"redis unavailable: {exc}") from exc
    if limit and used >= limit * ratio:
        raise BrokerFull(
            f"the broker is full: Redis uses {used / 2**20:.1f} MiB of its maxmemory "
            f"{limit / 2**20:.1f} MiB (refusing new jobs above {ratio:.0%}); retry later"
        )


class QoS(kombu_redis.QoS):
    def append(self, message: Any, delivery_tag: str) -> None:
        """A delivered message is already off its queue (BRPOP): its unacked record must be written,
        so at maxmemory the worker waits for memory rather than drop the message."""
        wait_out_full(lambda: super(QoS, self).append(message, delivery_tag))

    @contextlib.contextmanager
    def _plain_pipe(self) -> Iterator[Any]:
        with self.channel.conn_or_acquire() as client:
            yield client.pipeline(transaction=False)

    def _remove_from_indices(self, delivery_tag: str, pipe: Any = None) -> Any:
        if pipe is not None:
            return super()._remove_from_indices(delivery_tag, pipe)
        with self._plain_pipe() as plain:  # allowed at maxmemory, unlike the same in MULTI
            return plain.zrem(self.unacked_index_key, delivery_tag).hdel(
                self.unacked_key, delivery_tag
            )


class Channel(kombu_redis.Channel):
    """Reads outside MULTI (at maxmemory Redis refuses to queue even a read in MULTI: a publish's
    queue declaration failed on its LLEN); writes wait out a full Redis in a worker."""

    QoS = QoS

    def _put(self, queue: str, message: Any, **kwargs: Any) -> None:
        wait_out_full(lambda: super(Channel, self)._put(queue, message, **kwargs))

    def _queue_bind(self, exchange: str, routing_key: str, pattern: str, queue: str) -> None:
        wait_out_full(
            lambda: super(Channel, self)._queue_bind(exchange, routing_key, pattern, queue)
        )

    def _reads(self, command: str, queue: str) -> list[Any]:
        with self.conn_or_acquire() as client:
            pipe = client.pipeline(transaction=False)
            for pri in self.priority_steps:
                getattr(pipe, command)(self._q_for_pri(queue, pri))
            return list(pipe.execute())

    def _size(self, queue: str) -> int:
        return sum(n for n in self._reads("llen", queue) if isinstance(n, int))

    def _has_queue(self, queue: str, **kwargs: Any) -> bool:
        return any(self._reads("exists", queue))


class Transport(kombu_redis.Transport):
    Channel = Channel
