"""The embedded default: a private redis-server on a free loopback port and Celery worker processes
for every queue (`pagefleet.workers.fleet.launcher`), started for one `pagefleet run` and stopped when it
ends, whatever happens: a normal end, an error, SIGINT or SIGTERM (`signals_as_interrupt`), and —
through the kernel's parent-death signal — even a SIGKILL of the run itself. `out_lock`
serializes two runs over one output folder; `record_run` notes the documents a run holds there, so
that the next run over the folder accounts for those of a run that was killed (`left_by_dead_run`)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from pagefleet.workers.errors import PagefleetError
from pagefleet.workers.fleet.launcher import Fleet


class RunLocked(PagefleetError):
    code = "run_locked"


@contextlib.contextmanager
def out_lock(
    outdir: Path, wait_s: float, on_wait: Callable[[], None] | None = None
) -> Iterator[None]:
    """One `pagefleet run` at a time per output folder: a second one waits (up to `wait_s`) for
    the first to finish — then its documents are found done — or is refused (`RunLocked`)."""
    path = outdir / ".pagefleet" / "run.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+")
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if on_wait is not None:
                    on_wait()
                    on_wait = None
                if time.monotonic() > deadline:
                    raise RunLocked(f"another pagefleet run is writing to {outdir}") from None
                time.sleep(0.2)
        handle.truncate(0)
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield
    finally:
        handle.close()  # closing releases the lock


def _record_path(outdir: Path) -> Path:
    return outdir / ".pagefleet" / "run.json"


def record_run(outdir: Path, stems: list[str]) -> None:
    """Under the lock: the documents this run is about to write, until `end_run`."""
    path = _record_path(outdir)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"pid": os.getpid(), "stems": stems}), encoding="utf-8")
    tmp.replace(path)


def end_run(outdir: Path) -> None:
    """The run accounted for each of its documents itself (artifacts or error.json)."""
    _record_path(outdir).unlink(missing_ok=True)


def left_by_dead_run(outdir: Path) -> list[str]:
    """Under the lock: the documents of an earlier run that died before it could account for them
    (SIGKILL, the OOM killer) and that have neither a report nor an error.json. A record can only
    be left by a dead run: a live one still holds the lock."""
    try:
        stems = json.loads(_record_path(outdir).read_text(encoding="utf-8")).get("stems", [])
    except (OSError, ValueError):
        return []
    return [
        s
        for s in stems
        if isinstance(s, str)
        and not (outdir / s / "report.json").exists()
        and not (outdir / s / "error.json").exists()
    ]


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises KeyboardInterrupt; the exit status tells them apart (143, 130)."""


@contextlib.contextmanager
def signals_as_interrupt() -> Iterator[None]:
    """SIGTERM behaves like Ctrl-C (a KeyboardInterrupt: `Terminated`), so `with` blocks stop what they
    started."""

    def interrupt(signum: int, _frame: object) -> None:
        raise Terminated(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class EmbeddedFleet(Fleet):
    """Redis (unless a broker is given) plus split/collect, cpu, notify (and gpu) workers."""

    def __init__(
        self, *, broker_url: str | None, cpu_workers: int, gpu: bool, logdir: Path
    ) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="pagefleet-run-"))
        # callbacks on a worker of their own (task threads): a slow endpoint never holds a collect
        queues: list[tuple[str, int | None]] = [
            ("split,collect", 1),
            ("cpu", cpu_workers),
            ("notify", 2),
        ]
        super().__init__(
            self.tmp,
            [*queues, *([("gpu", None)] if gpu else [])],
            broker_url=broker_url,
            env={"PAGEFLEET_GPU__ENABLED": "1" if gpu else "0", "OMP_THREAD_LIMIT": "1"},
            logdir=logdir,
        )

    def stop(self, timeout_s: float = 20.0) -> None:
        super().stop(timeout_s)
        shutil.rmtree(self.tmp, ignore_errors=True)
