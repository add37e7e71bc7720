"""A big document collected while its ranges still run (issue 15).

A document of several ranges used to be collected by `split_done`, the chord's body, once the last
range was in: ~0.5 ms a page on one core while the other cores idled (0.55 s of a 1000-page
document's ~6 s). Its split task, once its own range is stored, now collects it range by range as
the range tasks store theirs (`pagefleet.workers.collect.finish.collect_streaming`), in a pool process that would
otherwise wait: the assembly overlaps the extraction, and only the last range's share is left
when the chord ends.

    Lease          the split task's claim on collecting (an owned Redis lock with a TTL it renews
                   while it waits); `split_done` waits while it is held, then finds the job done
    Waiter.ready   blocks until a range is stored (the range tasks push their first page on a
                   Redis list in the round trip that counts their pages: no polling of storage)
    stop(job)      the chord's error callback takes the lease away: the split task gives up

Whatever goes wrong — a range that climbs (OCR), a range that does not come, other documents
waiting on the split queue, the lease lost, any error — the split task gives up (`Abandoned`)
having written nothing, and `split_done` collects as before.
"""

from __future__ import annotations

import time

from redis.lock import Lock

from pagefleet.workers.fleet import jobs

LEASE_TTL_S = 30  # renewed at every wait: a split task that dies frees the document within this
_POLL_S = 0.25  # one blocking pop: how often a waiting split task renews its lease and looks around


class Abandoned(Exception):
    """The split task stops collecting; `split_done` collects the document."""


def lease_name(job_id: str) -> str:
    return f"stream:{job_id}"


def lease(job_id: str) -> Lock | None:
    return jobs.acquire(lease_name(job_id), LEASE_TTL_S)


def held(job_id: str) -> bool:
    """Whether a split task is collecting the document as its ranges come in."""
    return jobs.locked(lease_name(job_id))


def stop(job_id: str) -> None:
    """Take the lease away (the chord failed): the collecting split task gives up at its next wait."""
    jobs.break_lock(lease_name(job_id))


class Waiter:
    """`ready(first)`: returns once the range starting at page `first` is stored. Raises Abandoned
    when the lease is lost, other documents wait on `queue`, no range came for `idle_s`, or the
    `budget_s` is spent."""

    def __init__(
        self,
        job_id: str,
        lock: Lock,
        stored: set[int],
        *,
        queue: str,
        idle_s: float,
        budget_s: float,
    ) -> None:
        self.job_id, self.lock, self.stored, self.queue = job_id, lock, set(stored), queue
        self.idle_s, self.deadline = idle_s, time.monotonic() + budget_s
        self.redis = jobs.client()

    def ready(self, first: int) -> None:
        idle_since = time.monotonic()
        while first not in self.stored:
            self._renew()
            popped = self.redis.blpop([jobs.ranges_stored_key(self.job_id)], timeout=_POLL_S)
            if popped is not None:
                self.stored.add(int(popped[1]))
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > self.idle_s:
                raise Abandoned(f"no range stored for {self.idle_s:.0f} s")

    def _renew(self) -> None:
        if time.monotonic() > self.deadline:
            raise Abandoned("out of time")
        if self.redis.llen(self.queue) > 0:
            raise Abandoned(f"documents wait on queue {self.queue}")
        try:
            self.lock.reacquire()  # its TTL again; fails once the lease was taken away
        except Exception as exc:  # noqa: BLE001 - redis-py's LockNotOwnedError and friends
            raise Abandoned("lease lost") from exc

    def end(self) -> None:
        """The lease and the list go (after the job is marked done, when it was collected here)."""
        jobs.release(self.lock)
        self.redis.delete(jobs.ranges_stored_key(self.job_id))
