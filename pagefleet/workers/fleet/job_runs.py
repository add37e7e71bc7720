"""Runs of a job in Redis (`pagefleet.workers.fleet.jobs` keeps the job's record): a submission begins a run of
each document atomically unless one is under way or the document is done, and forgets the runs
whose split message was never sent.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any

import redis

from pagefleet.workers.fleet.jobs import (
    ACTIVE,
    NONFINAL,
    JobState,
    client,
    job_key,
    translate_redis_errors,
)

log = logging.getLogger(__name__)


_START_RUNS = """
local n = #KEYS / 2
local now, stale = tonumber(ARGV[1]), tonumber(ARGV[2])
local nonfinal = {}
for state in string.gmatch(ARGV[3], '[^,]+') do nonfinal[state] = true end
local out = {}
for i = 1, n do
  local key, id, force = KEYS[i], ARGV[2 + 3 * i], ARGV[3 + 3 * i] == '1'
  local state = redis.call('HGET', key, 'state')
  local updated = tonumber(redis.call('HGET', key, 'updated') or '0') or 0
  if state == ARGV[4] and not force then
    out[i] = 'done'
  elseif state and nonfinal[state] and now - updated < stale then
    out[i] = 'running'
  else
    redis.call('DEL', key, KEYS[n + i])
    local fields, flat = cjson.decode(ARGV[4 + 3 * i]), {}
    for k, v in pairs(fields) do flat[#flat + 1] = k; flat[#flat + 1] = v end
    redis.call('HSET', key, unpack(flat))
    redis.call('ZADD', 'pagefleet:jobs', now, id)
    redis.call('ZADD', 'pagefleet:active', now, id)
    out[i] = 'started'
  end
end
return out
"""


def start_run(
    spec: dict[str, Any], *, force: bool, stale_after_s: float, r: redis.Redis | None = None
) -> str:
    """Atomically begin a run of a job, unless one is under way or it is done (and not forced):
    "started" (a new run: delivery counters reset), "running" (share it) or "done"."""
    return start_runs([(spec, force)], stale_after_s=stale_after_s, r=r)[0]


@translate_redis_errors
def start_runs(
    specs: list[tuple[dict[str, Any], bool]], *, stale_after_s: float, r: redis.Redis | None = None
) -> list[str]:
    """`start_run` for many jobs (spec, force) in one atomic script: one round trip for a
    submission's batch, not four a document."""
    if not specs:
        return []
    now = time.time()
    ids = [spec["job_id"] for spec, _ in specs]
    keys = [job_key(job_id) for job_id in ids] + [f"pagefleet:attempts:{job_id}" for job_id in ids]
    args: list[Any] = [repr(now), repr(float(stale_after_s)), ",".join(NONFINAL), JobState.DONE]
    for spec, force in specs:
        fields = {
            "state": JobState.QUEUED,
            "filename": spec.get("filename") or "",
            "storage": spec.get("storage") or "",
            "source": spec.get("source") or "",
            "spec": json.dumps(spec),
            "run": uuid.uuid4().hex[:12],
            "updated": repr(now),
        }
        args += [spec["job_id"], "1" if force else "0", json.dumps(fields)]
    return list((r or client()).eval(_START_RUNS, len(keys), *keys, *args))


def abandon_runs(job_ids: list[str], r: redis.Redis | None = None) -> None:
    """Forget runs `start_runs` began whose split message was never sent (the send failed), so
    the producer's retry starts them again instead of finding them "running" with nothing on the
    queue. Deletes only (Redis allows them even at maxmemory); best effort: a Redis that is away
    keeps the records until the deadline makes them stale."""
    if not job_ids:
        return
    try:
        pipe = (r or client()).pipeline(transaction=False)
        pipe.delete(*[job_key(job_id) for job_id in job_ids])
        pipe.zrem(ACTIVE, *job_ids)
        pipe.execute()
    except redis.RedisError as exc:
        log.warning("%d unsent run(s) left until they are stale: %s", len(job_ids), exc)
