"""Which worker is alive and which unacknowledged messages it holds, in the broker's Redis: a dead
worker's pages go back on their queues within seconds, not after the visibility timeout.

    pagefleet:workers        sorted set: worker id (`<nodename>/<main pid>/<nonce>`) -> its last beat
    pagefleet:worker:<id>    hash: host, pool (JSON list of its processes' pids), at
    pagefleet:held:<id>      hash: delivery tag -> task id, every message the worker received and
                             kombu still lists as unacknowledged (`unacked`)

Every worker's consumer beats every `broker.worker_heartbeat_s` on its event loop's timer
(`pagefleet.workers.fleet.steps.LivenessStep`, the loop the heartbeat file is written from): its beat, its pool, its
held tags pruned to those still unacknowledged. Then it looks for peers silent for
`broker.worker_dead_after_s`: the first to find one puts that worker's held messages back on
their queues with kombu's own restore (the one the visibility timeout would run much later) and
forgets it. A consumer that connects again puts its own held messages back: Celery abandons them
with the connection it lost (it cancels the running ones).

A lock's owner (`owner()`: worker, pid, host, when) is dead (`owner_dead`) when its pid is gone on
this host, when its worker is silent or forgotten, or when a beat of its worker newer than the claim
lists a pool without it. A redelivered message runs at most once more than it would: the page's
delivery counter and the "already done" guards keep each page done once.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from typing import Any

import redis

from pagefleet.workers.fleet import jobs
from pagefleet.workers.settings import get_settings

log = logging.getLogger(__name__)
WORKERS = "pagefleet:workers"
UNACKED = "unacked"  # kombu's Redis transport: delivery tag -> message, until it is acknowledged
_KEEP_S = 86400  # a worker's records outlive it by at most this (if no peer ever reaps them)
SELF: dict[str, str] = {"worker": ""}  # this process's worker (`start`); pool children inherit it


def _held(worker: str) -> str:
    return f"pagefleet:held:{worker}"


def _info(worker: str) -> str:
    return f"pagefleet:worker:{worker}"


def start(nodename: str) -> str:
    """This process is the worker `nodename`'s main process: its id (its pool inherits it), unique
    even where a restarted container has the same name and pid (its peers reap the one before)."""
    SELF["worker"] = f"{nodename}/{os.getpid()}/{uuid.uuid4().hex[:8]}"
    return SELF["worker"]


def hold(tag: str, task_id: str, r: redis.Redis | None = None) -> None:
    """The worker received a message (its main process, before a pool process runs it)."""
    if SELF["worker"]:
        (r or jobs.client()).hset(_held(SELF["worker"]), tag, task_id)


_BEAT = """
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], 'at', ARGV[1], 'host', ARGV[3], 'pool', ARGV[4])
for _, tag in ipairs(redis.call('HKEYS', KEYS[3])) do
  if redis.call('HEXISTS', KEYS[4], tag) == 0 then redis.call('HDEL', KEYS[3], tag) end
end
redis.call('EXPIRE', KEYS[2], ARGV[5])
redis.call('EXPIRE', KEYS[3], ARGV[5])
return 1
"""


def beat(pool: list[int], r: redis.Redis | None = None) -> None:
    """This worker is alive, with these pool processes; its held tags no longer unacked go."""
    worker = SELF["worker"]
    (r or jobs.client()).eval(
        _BEAT,
        4,
        WORKERS,
        _info(worker),
        _held(worker),
        UNACKED,
        time.time(),
        worker,
        socket.gethostname(),
        json.dumps(sorted({os.getpid(), *pool})),
        _KEEP_S,
    )


def put_back(worker: str, restore: Callable[[str], None], r: redis.Redis | None = None) -> int:
    """Every message `worker` held that is still unacknowledged goes back on its queue
    (`restore(tag)`: kombu's `restore_by_tag`); returns how many."""
    r = r or jobs.client()
    tags = [tag for tag in r.hkeys(_held(worker)) if r.hexists(UNACKED, tag)]
    for tag in tags:
        restore(tag)
    r.delete(_held(worker))
    return len(tags)


def reap(
    restore: Callable[[str], None], r: redis.Redis | None = None, now: float | None = None
) -> dict[str, int]:
    """Workers silent for `worker_dead_after_s`: their held messages put back, their records gone
    (one reaper a worker: a lock). Returns {worker: messages put back}."""
    r = r or jobs.client()
    now = time.time() if now is None else now
    done = {}
    for worker, last in r.zrangebyscore(
        WORKERS, "-inf", now - get_settings().broker.worker_dead_after_s, withscores=True
    ):
        if worker == SELF["worker"] or not r.set(
            f"pagefleet:lock:reap:{worker}", "1", nx=True, ex=60
        ):
            continue
        done[worker] = put_back(worker, restore, r)
        r.delete(_info(worker))
        r.zrem(WORKERS, worker)
        log.warning(
            "worker %s silent for %.0f s: %d unacknowledged message(s) back on their queues",
            worker,
            now - last,
            done[worker],
        )
    return done


def owner(task_id: str = "") -> str:
    """Who claims a lock now: this worker, this process, this host, this time, the task (its
    message) it runs (`owner_dead`)."""
    return json.dumps(
        {
            "worker": SELF["worker"],
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "at": time.time(),
            "task": task_id,
        }
    )


def owner_dead(claimed: str | None, task_id: str = "", r: redis.Redis | None = None) -> bool:
    """Whether the owner `owner()` described is known dead (or gone from the lock's work); an owner
    not described is not. A claim made by an earlier delivery of the message `task_id` is: a message
    goes to one consumer at a time, so that delivery ended without releasing (its worker lost, its
    Redis away when it let go)."""
    try:
        who: dict[str, Any] = json.loads(claimed or "")
    except ValueError:
        return False
    if task_id and who.get("task") == task_id:
        return True
    pid = int(who.get("pid") or 0)
    if who.get("host") == socket.gethostname() and pid and not _alive(pid):
        return True
    if not who.get("worker"):
        return False
    r = r or jobs.client()
    last = r.zscore(WORKERS, who["worker"])
    if last is None or time.time() - last > get_settings().broker.worker_dead_after_s:
        return True
    at, pool = r.hmget(_info(who["worker"]), "at", "pool")
    return float(at or 0) > float(who.get("at") or 0) + 1 and pid not in json.loads(pool or "[]")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (a pool process its worker has not reaped yet) is dead
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


class Keeper:
    """A worker's beats (`__call__(pool)`, on its event loop's timer). It reaps dead peers only once
    it has itself beaten without a gap for `worker_dead_after_s`: after Redis was away, every beat
    in it is old, and the first worker back must not take its live peers for dead."""

    def __init__(self, restore: Callable[[str], None]) -> None:
        self.restore = restore
        self.steady_since: float | None = None  # monotonic: since when the beats land without a gap
        self.last = 0.0

    def __call__(self, pool: list[int]) -> dict[str, int]:
        rel = get_settings().broker
        now = time.monotonic()
        try:
            beat(pool)
        except Exception:
            self.steady_since = None
            raise
        if self.steady_since is None or now - self.last > 2 * rel.worker_heartbeat_s:
            self.steady_since = now
        self.last = now
        return reap(self.restore) if now - self.steady_since >= rel.worker_dead_after_s else {}


class Restorer:
    """kombu's restore of one unacknowledged message, on a connection of its own (`connect()`:
    a kombu connection to the broker), made again after an error."""

    def __init__(self, connect: Callable[[], Any]) -> None:
        self.connect = connect
        self.conn: Any = None

    def __call__(self, tag: str) -> None:
        if self.conn is None:
            self.conn = self.connect()
        try:
            self.conn.default_channel.qos.restore_by_tag(tag)
        except Exception:
            self.close()
            raise

    def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            try:
                conn.release()
            except Exception:  # noqa: BLE001 - a broken connection is gone either way
                pass
