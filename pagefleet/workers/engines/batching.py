"""Pages of concurrent tasks read in one batch (issue 15: the GPU path).

A gpu worker runs its tasks on threads (Celery's threads pool: `pagefleet worker --queues gpu`),
and a bucket of one-page scans arrives as one task a document. Read one task at a time, every
generate call would hold one page: an H200 reads 0.06 LightOnOCR pages/s at batch 1 and 0.42 at
batch 8 (bench/gpu_bench.py). Here the tasks' reads of one engine and prompt queue up; when no
call of theirs runs, the thread whose request heads the queue takes it and the requests behind
it, up to the engine's batch size of pages, and reads them in one call; the others wait for their
rows or their turn. While a batch runs on the GPU the next one gathers, so batches fill without a
waiting window (a single thread reads at once, as before). A request larger than the batch goes
alone (the engine splits it).

Every waiting request of a batch that fails gets the failure (its own copy of the exception). A
task's deadline (`pagefleet.workers.fleet.deadline`) bounds both: a request still queued at its deadline leaves
with `TaskDeadline`, and a call runs under the earliest deadline of its requests.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from pagefleet.workers.fleet import deadline

__all__ = ["Batcher", "BATCHES"]

log = logging.getLogger(__name__)


@dataclass(eq=False)  # requests are told apart by identity (two may hold equal items)
class _Request:
    items: list[Any]
    deadline: float | None = (
        None  # its task's (`pagefleet.workers.fleet.deadline`): it leaves the queue then
    )
    results: list[Any] = field(default_factory=list)
    error: BaseException | None = None
    done: bool = False


class Batcher:
    """Requests (lists of items) under one key read together, `size` items at most a call."""

    def __init__(self, observe: Callable[[Hashable, int, int], None] | None = None) -> None:
        self.observe = observe  # (key, items, requests) of every call that read, for the metrics
        self._cond = threading.Condition()
        self._queues: dict[Hashable, list[_Request]] = {}
        self._running: set[Hashable] = set()

    def run(
        self, key: Hashable, items: list[Any], size: int, read: Callable[[list[Any]], list[Any]]
    ) -> list[Any]:
        """`read(items)` for these items and whatever else is queued under `key`; this request's rows.
        The thread whose request heads the queue reads its batch (so a call never outlasts the
        deadline of the thread that makes it); the others wait for their rows or their turn."""
        mine = _Request(list(items), deadline.get())
        with self._cond:
            self._queues.setdefault(key, []).append(mine)
            batch = self._wait_turn(key, mine, max(1, size))
        if batch:
            try:
                self._serve(key, batch, read)
            finally:
                with self._cond:
                    self._running.discard(key)
                    if not self._queues.get(key):
                        self._queues.pop(key, None)
                    self._cond.notify_all()
        return _outcome(mine)

    def _wait_turn(self, key: Hashable, mine: _Request, size: int) -> list[_Request]:
        """Under the lock: the batch this thread reads (its request first), or [] once another
        thread's call has read it. A request still queued at its task's deadline leaves."""
        while not mine.done:
            queue = self._queues.get(key, [])
            queued = mine in queue
            if queued and queue[0] is mine and key not in self._running:
                self._running.add(key)
                return self._take(key, size)
            left = deadline.remaining() if queued else None  # once taken, its call ends it
            if left is not None and left <= 0:
                queue.remove(mine)
                if not queue and key not in self._running:
                    self._queues.pop(key, None)
                self._cond.notify_all()  # the queue may have a new head
                deadline.check("a read waiting for its batch")
            self._cond.wait(timeout=None if left is None else max(left, 0.01))
        return []

    def _take(self, key: Hashable, size: int) -> list[_Request]:
        queue = self._queues[key]
        batch = [queue.pop(0)]
        count = len(batch[0].items)
        while queue and count + len(queue[0].items) <= size:
            count += len(queue[0].items)
            batch.append(queue.pop(0))
        return batch

    def _serve(
        self, batch_key: Hashable, batch: list[_Request], read: Callable[[list[Any]], list[Any]]
    ) -> None:
        items = [item for request in batch for item in request.items]
        ends = [r.deadline for r in batch if r.deadline is not None]
        try:
            with deadline.until(min(ends) if ends else None):  # the call ends by its first deadline
                rows = read(items)
            if len(rows) != len(items):
                raise RuntimeError(f"a batch of {len(items)} items read {len(rows)} rows")
        except (
            Exception
        ) as exc:  # every request of the batch gets it, the runner's too (`_outcome`)
            self._finish(batch, error=exc)
            return
        except (
            BaseException
        ) as exc:  # an interrupt or exit stops the runner: its batch is not left waiting
            self._finish(batch, error=exc)
            raise
        if len(batch) > 1:
            log.info("batched %d requests, %d items in one call", len(batch), len(items))
        if self.observe is not None:
            self.observe(batch_key, len(items), len(batch))
        self._finish(batch, rows=rows)

    def _finish(
        self,
        batch: list[_Request],
        rows: list[Any] | None = None,
        error: BaseException | None = None,
    ) -> None:
        with self._cond:
            at = 0
            for request in batch:
                if rows is not None:
                    request.results = rows[at : at + len(request.items)]
                    at += len(request.items)
                request.error, request.done = error, True
            self._cond.notify_all()


def _outcome(request: _Request) -> list[Any]:
    if request.error is not None:
        try:  # one exception object raised in several threads would share (and grow) one traceback
            error = copy.copy(request.error).with_traceback(None)
        except Exception:  # noqa: BLE001 - an exception that cannot be copied is raised as it is
            raise request.error from None
        raise error from request.error
    return request.results


def count_calls(key: Hashable, pages: int, tasks: int) -> None:
    """A gpu worker's observer (`pagefleet.workers.app` sets it): the Prometheus counters of each call
    (`pagefleet.workers.metrics`), labelled by engine, the key's first part."""
    from pagefleet.workers.metrics import shared_recorder

    shared_recorder().generate_call(
        str(key[0]) if isinstance(key, tuple) else str(key), pages, tasks
    )


BATCHES = Batcher()  # the process's: every engine instance of a model shares its queue
