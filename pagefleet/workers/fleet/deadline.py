"""A task's own deadline, where Celery cannot enforce the soft time limit: a gpu worker runs its
tasks on threads (`PAGEFLEET_GPU__POOL=threads`), and Celery's time limits need a pool child to
signal. Without one, a task could outlive the hard limit and the broker's visibility timeout
(set just above it, `BrokerSettings.visibility_for`) and be delivered again while it still runs.

`until(t)` sets the deadline for the code it wraps (a context variable: each task thread its own);
`check()` raises `TaskDeadline` once it has passed (between the steps of a page chain); engines
bound a wait by `bounded()` (the VLM's `generate(max_time=…)`, an HTTP request, a Tesseract or
OSD pass), and a read waiting for a shared
batch gives up at its deadline (`pagefleet.workers.engines.batching`). None: no deadline (prefork tasks,
whose limits Celery enforces, and everything outside a task).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar

from pagefleet.workers.errors import TaskDeadline

_DEADLINE: ContextVar[float | None] = ContextVar("pagefleet_deadline", default=None)


@contextlib.contextmanager
def until(deadline: float | None) -> Iterator[None]:
    """`deadline` (time.monotonic()) for the code in the block; None lifts it."""
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def get() -> float | None:
    return _DEADLINE.get()


def remaining() -> float | None:
    """Seconds left (≤ 0 once passed), or None without a deadline."""
    deadline = _DEADLINE.get()
    return None if deadline is None else deadline - time.monotonic()


def check(what: str = "the task") -> None:
    left = remaining()
    if left is not None and left <= 0:
        raise TaskDeadline(f"{what} passed its time limit ({-left:.1f}s ago)")


def bounded(timeout_s: float | None, what: str) -> float | None:
    """A wait's timeout no later than the deadline (`TaskDeadline` once that has passed): an
    engine's own timeout where there is no deadline, the time left where it has none."""
    left = remaining()
    if left is None:
        return timeout_s
    check(what)
    return min(timeout_s, left) if timeout_s else left
