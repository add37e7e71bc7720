"""Job state, attempt counters, locks and dead letters in Redis (the broker's Redis).

    pagefleet:job:<id>          hash: state, filename, pages, pages_done, status, error_code, ...
    pagefleet:jobs              sorted set of job ids by last update (trimmed: age and count)
    pagefleet:active            sorted set of jobs in a non-final state (what the watchdog sweeps)
    pagefleet:progress          when any job last moved (a backlog is not a loss)
    pagefleet:attempts:<id>     hash: page -> deliveries of its current message (the redelivery
                                cap), page:retry -> which retry that message is; reset per run
    pagefleet:lock:<name>       redis-py Lock (owner token, TTL above the hard time limit)
    pagefleet:deadletter        list of JSON records (job, page, reason, at)
    pagefleet:done              pub/sub channel: one JSON notice per finished job

States (`JobState`): queued → splitting → ocr → collecting → done | error; never back from done.
"""

from __future__ import annotations

import functools
import json
import logging
import time
import uuid
from enum import StrEnum
from typing import Any

import redis
from redis.exceptions import LockError
from redis.lock import Lock

from pagefleet.workers.errors import BrokerUnavailable
from pagefleet.workers.fleet import broker
from pagefleet.workers.settings import get_settings

log = logging.getLogger(__name__)
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
NONFINAL = (JobState.QUEUED, JobState.SPLITTING, JobState.OCR, JobState.COLLECTING)


@functools.lru_cache(maxsize=4)
def _client(url: str) -> redis.Redis:
    # in a worker, a write refused at maxmemory waits for memory (pagefleet.workers.fleet.broker)
    return redis.Redis.from_url(
        url,
        decode_responses=True,
        socket_timeout=10,
        socket_connect_timeout=5,
        **broker.client_options(),
    )


def client(url: str | None = None) -> redis.Redis:
    return _client(url or get_settings().broker.url)


def job_key(job_id: str) -> str:
    return f"pagefleet:job:{job_id}"


def translate_redis_errors(fn):  # translate redis errors where they enter
    @functools.wraps(fn)
    def inner(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise BrokerUnavailable(f"redis unavailable: {exc}") from exc

    return inner


ACTIVE = "pagefleet:active"
PROGRESS = "pagefleet:progress"  # when any job last changed state or finished a page


# A job record's update, the same steps wherever it is made (`update`, `claim`'s mark, `done`): a
# Lua function every script of this module that changes a record starts with. KEYS[1..5]: the
# record, its attempts, the index, the active set, the progress mark; from ARGV[o] (`record(o)`):
# now, the job id, what the update does to the state ('' none, 'active' a non-final state, 'done',
# 'error'; a record in `done` takes no other), whether a state change counts as progress ('1'), the
# finished record's TTL, the index's size, the number of fields n, then the fields, name and value in
# turn. Returns the index of the ARGV after them (the calling script's own arguments).
_RECORD = """
local function record(o)
  local now, id, kind, n = ARGV[o], ARGV[o + 1], ARGV[o + 2], tonumber(ARGV[o + 6])
  if kind ~= '' and kind ~= 'done' and redis.call('HGET', KEYS[1], 'state') == 'done' then
    return o + 7 + 2 * n  -- a state never goes back from done: the whole update is dropped
  end
  redis.call('HSET', KEYS[1], 'updated', now, unpack(ARGV, o + 7, o + 6 + 2 * n))
  redis.call('ZADD', KEYS[3], now, id)
  if kind == 'done' or kind == 'error' then
    local ttl = tonumber(ARGV[o + 4])
    redis.call('EXPIRE', KEYS[1], ttl)
    redis.call('EXPIRE', KEYS[2], ttl)
    redis.call('ZREM', KEYS[4], id)
    redis.call('ZREMRANGEBYSCORE', KEYS[3], 0, tonumber(now) - ttl)
    redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -tonumber(ARGV[o + 5]) - 1)
  else
    redis.call('PERSIST', KEYS[1])
    if kind == 'active' then
      redis.call('ZADD', KEYS[4], now, id)
    end
  end
  if kind ~= '' and ARGV[o + 3] == '1' then
    redis.call('SET', KEYS[5], now)
  end
  return o + 7 + 2 * n
end
"""


def _record(
    job_id: str, fields: dict[str, Any], progress: bool = True
) -> tuple[list[str], list[Any]]:
    """(KEYS[1..5], the ARGV `record(o)` reads from o) for setting `fields` on the job's record."""
    rel = get_settings().broker
    mapping = _mapping(fields)
    state = fields.get("state")
    kind = "" if state is None else str(state) if state in TERMINAL else "active"
    keys = [job_key(job_id), f"pagefleet:attempts:{job_id}", "pagefleet:jobs", ACTIVE, PROGRESS]
    args = [
        time.time(),
        job_id,
        kind,
        "1" if progress else "0",
        rel.job_record_ttl_s,
        rel.jobs_index_max,
        len(mapping),
        *(x for pair in mapping.items() for x in pair),
    ]
    return keys, args


_UPDATE = _RECORD + "record(1)\nreturn 1\n"


@translate_redis_errors
def update(
    job_id: str, r: redis.Redis | None = None, *, progress: bool = True, **fields: Any
) -> None:
    """Set fields (and `updated`). A final state starts the record's TTL and trims the index.
    A state change counts as the fleet's progress unless `progress=False` (the watchdog's own)."""
    keys, args = _record(job_id, fields, progress)
    (r or client()).eval(_UPDATE, len(keys), *keys, *args)


def _mapping(fields: dict[str, Any]) -> dict[str, Any]:
    """A job record's fields as stored: lists and dicts as JSON, None left out."""
    return {
        k: (json.dumps(v) if isinstance(v, (dict, list)) else v)
        for k, v in fields.items()
        if v is not None
    }


_CLAIM = (
    _RECORD
    + """
if not redis.call('SET', KEYS[6], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {0, redis.call('HGETALL', KEYS[1])}
end
local found = redis.call('HGETALL', KEYS[1])
local state = nil
for i = 1, #found, 2 do
  if found[i] == 'state' then state = found[i + 1] end
end
if ARGV[4] == '1' and not (state and string.find(ARGV[3], ',' .. state .. ',', 1, true)) then
  record(5)
end
return {1, found}
"""
)


@translate_redis_errors
def claim(
    job_id: str,
    name: str,
    ttl_s: int,
    r: redis.Redis | None = None,
    *,
    mark: dict[str, Any] | None = None,
    unless: tuple[str, ...] = (),
) -> tuple[dict[str, str], Lock | None]:
    """The job's record and the lock `name` (as `acquire`), in one round trip: the split task's
    start. With `mark` (fields with a non-final `state`), a record whose state is not one of
    `unless` gets them too, as `update` would set them, in the same round trip; the record comes
    back as it was found. A caller that finds the record says there is nothing to do releases the
    lock."""
    r = r or client()
    lock = r.lock(_lock_key(name), timeout=ttl_s, blocking=False)
    token = uuid.uuid1().hex  # what redis-py's Lock.acquire would set
    assert not mark or mark.get("state") in NONFINAL, "claim marks a non-final state only"
    keys, args = _record(job_id, mark or {})
    found = r.eval(
        _CLAIM,
        6,
        *keys,
        lock.name,
        token,
        int(ttl_s * 1000),
        "," + ",".join(unless) + ",",
        "1" if mark else "0",
        *args,
    )
    taken, flat = found
    record = dict(zip(flat[::2], flat[1::2], strict=True))
    if not taken:
        return record, None
    lock.local.token = token.encode()
    return record, lock


_DONE = (
    _RECORD
    + """
local at = record(1)
local k = tonumber(ARGV[at + 3])
redis.call('PUBLISH', ARGV[at], ARGV[at + 1])
if k >= 0 then
  also({unpack(KEYS, 7, 6 + k)}, {unpack(ARGV, at + 4)})
end
if ARGV[at + 2] ~= '' and redis.call('GET', KEYS[6]) == ARGV[at + 2] then
  redis.call('DEL', KEYS[6])
end
return 1
"""
)


@functools.lru_cache(maxsize=8)
def _done_script(also: str) -> str:
    """`_DONE` with `also` (a script's text, its own KEYS and ARGV) as the function it runs."""
    return f"local function also(KEYS, ARGV)\n{also}\nend\n{_DONE}"


@translate_redis_errors
def done(
    job_id: str,
    notice: dict[str, Any],
    *,
    lock: Lock | None = None,
    script: tuple[str, list[str], list[Any]] | None = None,
    **fields: Any,
) -> None:
    """A job's last update (state done and `fields`, as `update` sets them), its done notice, a
    `script` (Lua, keys, args: the document's metrics) and the release of its `lock`, in one
    round trip and one script — a one-task document's fixed cost (a pipeline of the same fourteen
    commands cost the worker twice the CPU). The lock is released only if it is still this owner's."""
    keys, args = _record(job_id, {**fields, "state": JobState.DONE})
    token = lock.local.token if lock is not None else None
    lua, extra_keys, extra_args = script if script is not None else ("", [], [])
    client().eval(
        _done_script(lua),
        6 + len(extra_keys),
        *keys,
        lock.name if lock is not None else _lock_key("-"),
        *extra_keys,
        *args,
        DONE_CHANNEL,
        _notice(notice),
        token or "",
        len(extra_keys) if script is not None else -1,
        *extra_args,
    )
    if lock is not None:
        lock.local.token = None  # released: the caller's `release` is a no-op


@translate_redis_errors
def get(job_id: str, r: redis.Redis | None = None) -> dict[str, str]:
    return (r or client()).hgetall(job_key(job_id))


def ranges_stored_key(job_id: str) -> str:
    """The first pages of a document's ranges stored so far (`pagefleet.workers.collect.stream`: its split task waits on it)."""
    return f"pagefleet:ranges-stored:{job_id}"


@translate_redis_errors
def page_done(
    job_id: str, count: int = 1, r: redis.Redis | None = None, *, stored_range: int | None = None
) -> int:
    """Count finished pages; progress also moves the job's last-update time (the watchdog's clock).
    `stored_range`: a range task stored its object (its first page), for a split task that
    collects the document as its ranges come in (`pagefleet.workers.collect.stream`)."""
    r = r or client()
    now = time.time()
    pipe = r.pipeline()
    if stored_range is not None:
        pipe.rpush(ranges_stored_key(job_id), stored_range)
        pipe.expire(ranges_stored_key(job_id), 3600)
    pipe.hincrby(job_key(job_id), "pages_done", count)
    pipe.hset(job_key(job_id), "updated", now)
    pipe.zadd("pagefleet:jobs", {job_id: now})
    pipe.zadd(ACTIVE, {job_id: now}, xx=True)
    pipe.set(PROGRESS, now)
    return int(pipe.execute()[-5])


_COUNT_DELIVERY = """
local last = redis.call('HGET', KEYS[1], ARGV[1] .. ':retry')
local n
if last ~= ARGV[2] then
  redis.call('HSET', KEYS[1], ARGV[1] .. ':retry', ARGV[2], ARGV[1], 1)
  n = 1
else
  n = redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
end
redis.call('EXPIRE', KEYS[1], ARGV[3])
return n
"""


@translate_redis_errors
def count_delivery(job_id: str, page: int, retries: int = 0, r: redis.Redis | None = None) -> int:
    """How many times the current message of this (job, page) has been delivered, this one
    included: a redelivery (worker lost) counts, a retry (a new message) starts again at 1. The
    counters belong to one run of the job (`start_run` resets them)."""
    r = r or client()
    ttl = get_settings().broker.job_record_ttl_s
    return int(
        r.eval(
            _COUNT_DELIVERY, 1, f"pagefleet:attempts:{job_id}", str(page), str(retries), str(ttl)
        )
    )


@translate_redis_errors
def acquire(name: str, ttl_s: int, r: redis.Redis | None = None) -> Lock | None:
    """An owned lock (redis-py `Lock`: a token only its owner can release), or None if taken."""
    lock = (r or client()).lock(_lock_key(name), timeout=ttl_s, blocking=False)
    return lock if lock.acquire() else None


@translate_redis_errors
def release(lock: Lock) -> None:
    """Release a lock we hold; one that expired or was taken over is not ours to release."""
    try:
        lock.release()
    except LockError:
        pass


@translate_redis_errors
def break_lock(name: str, r: redis.Redis | None = None) -> None:
    """Remove a lock whose owner is known to be dead (only the watchdog, past the deadline)."""
    (r or client()).delete(_lock_key(name))


@translate_redis_errors
def locked(name: str, r: redis.Redis | None = None) -> bool:
    """Whether someone holds the lock `name`."""
    return bool((r or client()).exists(_lock_key(name)))


def _lock_key(name: str) -> str:
    return f"pagefleet:lock:{name}"


@translate_redis_errors
def dead_letter(record: dict[str, Any], r: redis.Redis | None = None) -> None:
    """Append a record; the list keeps the newest `broker.deadletter_max`."""
    pipe = (r or client()).pipeline()
    pipe.rpush(DEADLETTER, json.dumps({**record, "at": time.time()}, ensure_ascii=False))
    pipe.ltrim(DEADLETTER, -get_settings().broker.deadletter_max, -1)
    pipe.execute()


@translate_redis_errors
def dead_letters(r: redis.Redis | None = None) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (r or client()).lrange(DEADLETTER, 0, -1)]


@translate_redis_errors
def announce(notice: dict[str, Any], r: redis.Redis | None = None) -> None:
    (r or client()).publish(DONE_CHANNEL, _notice(notice))


def _notice(notice: dict[str, Any]) -> str:
    """A done notice as it goes out on `DONE_CHANNEL` (`announce`, and `done`'s pipeline)."""
    return json.dumps(notice, ensure_ascii=False)
