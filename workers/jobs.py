"""Job state, attempt counters, locks and dead letters in Redis (the broker's Redis).

    pagefleet:job:<id>          hash: state, filename, pages, pages_done, status, error_code, ...
    pagefleet:jobs              sorted set of job ids by last update
    pagefleet:attempts:<id>     hash: page -> deliveries (the redelivery cap)
    pagefleet:lock:<name>       redis-py Lock (owner token, TTL above the hard time limit)
    pagefleet:deadletter        list of JSON records (job, page, reason, at)
    pagefleet:done              pub/sub channel: one JSON notice per finished job

States (`JobState`): queued → splitting → ocr → collecting → done | error.
"""

from __future__ import annotations

import functools
import json
import time
from enum import StrEnum
from typing import Any

import redis
from redis.exceptions import LockError
from redis.lock import Lock

from workers.errors import BrokerUnavailable
from workers.settings import get_settings

DONE_CHANNEL = "pagefleet:done"
DEADLETTER = "pagefleet:deadletter"


class JobState(StrEnum):
    QUEUED = "queued"
    SPLITTING = "splitting"
    OCR = "ocr"
    COLLECTING = "collecting"
    DONE = "done"
    ERROR = "error"


TERMINAL = (JobState.DONE, JobState.ERROR)


@functools.lru_cache(maxsize=4)
def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, decode_responses=True, socket_timeout=10, socket_connect_timeout=5)


def client(url: str | None = None) -> redis.Redis:
    return _client(url or get_settings().broker_url)


def _key(job_id: str) -> str:
    return f"pagefleet:job:{job_id}"


def _wrap(fn):  # translate redis errors where they enter
    @functools.wraps(fn)
    def inner(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise BrokerUnavailable(f"redis unavailable: {exc}") from exc

    return inner


@_wrap
def update(job_id: str, r: redis.Redis | None = None, **fields: Any) -> None:
    r = r or client()
    now = time.time()
    mapping = {k: (json.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in fields.items() if v is not None}
    mapping["updated"] = now
    pipe = r.pipeline()
    pipe.hset(_key(job_id), mapping=mapping)
    pipe.zadd("pagefleet:jobs", {job_id: now})
    pipe.execute()


@_wrap
def get(job_id: str, r: redis.Redis | None = None) -> dict[str, str]:
    return (r or client()).hgetall(_key(job_id))


@_wrap
def page_done(job_id: str, count: int = 1, r: redis.Redis | None = None) -> int:
    """Count finished pages; progress also moves the job's last-update time (the watchdog's clock)."""
    r = r or client()
    now = time.time()
    pipe = r.pipeline()
    pipe.hincrby(_key(job_id), "pages_done", count)
    pipe.hset(_key(job_id), "updated", now)
    pipe.zadd("pagefleet:jobs", {job_id: now})
    return int(pipe.execute()[0])


@_wrap
def count_delivery(job_id: str, page: int, r: redis.Redis | None = None) -> int:
    """How many times this (job, page) has been delivered, this one included."""
    r = r or client()
    key = f"pagefleet:attempts:{job_id}"
    n = int(r.hincrby(key, str(page), 1))
    r.expire(key, 7 * 86400)
    return n


@_wrap
def acquire(name: str, ttl_s: int, r: redis.Redis | None = None) -> Lock | None:
    """An owned lock (redis-py `Lock`: a token only its owner can release), or None if taken."""
    lock = (r or client()).lock(f"pagefleet:lock:{name}", timeout=ttl_s, blocking=False)
    return lock if lock.acquire() else None


@_wrap
def release(lock: Lock) -> None:
    """Release a lock we hold; one that expired or was taken over is not ours to release."""
    try:
        lock.release()
    except LockError:
        pass


@_wrap
def dead_letter(record: dict[str, Any], r: redis.Redis | None = None) -> None:
    (r or client()).rpush(DEADLETTER, json.dumps({**record, "at": time.time()}, ensure_ascii=False))


@_wrap
def dead_letters(r: redis.Redis | None = None) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (r or client()).lrange(DEADLETTER, 0, -1)]


@_wrap
def announce(notice: dict[str, Any], r: redis.Redis | None = None) -> None:
    (r or client()).publish(DONE_CHANNEL, json.dumps(notice, ensure_ascii=False))
