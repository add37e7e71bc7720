"""Heartbeat files for container probes (Kubernetes liveness/readiness, compose healthchecks).

    <dir>/alive      touched every `interval_s` by a worker bootstep on the worker's event-loop
                     timer (so it goes stale when the main loop hangs, not when a task is long:
                     tasks run in pool children)
    <dir>/ready      written on `worker_ready` (connected to the broker, consuming)
    <dir>/stopping   written when a warm shutdown starts; `ready` is removed at the same time

Probes run `python -m pagefleet.workers.fleet.heartbeat live|ready` (no Celery import, ~0.2 s):
    live   alive is younger than max_age_s — or a warm shutdown is in progress (a worker
           finishing its last task must not be killed by its liveness probe)
    ready  ready exists, alive is fresh, and no shutdown has started

This module does not import celery (the dependency rule): the bootstep and signal handlers that
call it live in `pagefleet/workers/app.py`. Disabled unless `PAGEFLEET_OBSERVABILITY__HEARTBEAT__DIR` is set.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from pagefleet.workers.settings import HeartbeatSettings, get_settings


class Heartbeat:
    """The writer side, used by the worker bootstep and signal handlers."""

    def __init__(self, settings: HeartbeatSettings | None = None) -> None:
        self.settings = settings or get_settings().observability.heartbeat
        base = Path(self.settings.dir) if self.settings.dir else None
        self.enabled = base is not None
        self.alive = base / "alive" if base else None
        self.ready_file = base / "ready" if base else None
        self.stopping_file = base / "stopping" if base else None

    def _touch(self, path: Path | None) -> None:
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(f"{time.time():.3f}\n")
        tmp.replace(path)  # atomic: a probe never reads a half-written file

    @staticmethod
    def _remove(path: Path | None) -> None:
        if path is not None:
            path.unlink(missing_ok=True)

    def start(self) -> None:
        """A fresh process: forget a previous run's readiness and shutdown marks."""
        self._remove(self.ready_file)
        self._remove(self.stopping_file)
        self.beat()

    def beat(self) -> None:
        self._touch(self.alive)

    def mark_ready(self) -> None:
        self.beat()
        self._touch(self.ready_file)

    def mark_stopping(self) -> None:
        self._remove(self.ready_file)
        self._touch(self.stopping_file)


def _age(path: Path) -> float | None:
    try:
        return time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return None


def check(kind: str, settings: HeartbeatSettings | None = None) -> tuple[bool, str]:
    """(ok, reason) for `live` or `ready`."""
    settings = settings or get_settings().observability.heartbeat
    if not settings.dir:
        return False, "PAGEFLEET_OBSERVABILITY__HEARTBEAT__DIR is not set"
    base = Path(settings.dir)
    stopping = (base / "stopping").exists()
    age = _age(base / "alive")
    fresh = age is not None and age <= settings.max_age_s
    if kind == "live":
        if fresh or stopping:
            return True, "shutting down" if stopping and not fresh else f"heartbeat {age:.0f}s old"
        return (
            False,
            "no heartbeat yet"
            if age is None
            else f"heartbeat {age:.0f}s old > {settings.max_age_s:.0f}s",
        )
    if kind == "ready":
        if stopping:
            return False, "shutting down"
        if not (base / "ready").exists():
            return False, "worker not ready yet"
        return (True, "ready") if fresh else (False, "heartbeat stale")
    raise ValueError(f"unknown probe {kind!r}: use live or ready")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pagefleet.workers.fleet.heartbeat", description="worker probe"
    )
    parser.add_argument("kind", choices=("live", "ready"))
    parser.add_argument(
        "--max-age",
        type=float,
        help="seconds (default PAGEFLEET_OBSERVABILITY__HEARTBEAT__MAX_AGE_S or 120)",
    )
    args = parser.parse_args(argv)
    settings = get_settings().observability.heartbeat
    if args.max_age is not None:
        settings = settings.model_copy(update={"max_age_s": args.max_age})
    ok, reason = check(args.kind, settings)
    sys.stderr.write(f"{args.kind}: {'ok' if ok else 'FAIL'} ({reason})\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
