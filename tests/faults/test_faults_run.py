"""Drills on `pagefleet run` (the embedded fleet): its Redis dies, it gets SIGTERM or SIGKILL, two
runs share one --out. Every input ends in artifacts or a typed error.json, nothing it started outlives it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.faults.conftest import RESULTS
from tests.support.drills import (
    FAST_ENV,
    SLOW_ENGINE_ENV,
    busy_child,
    children,
    make_docs,
    process_group_alive,
)
from pagefleet.workers.cli.exitcodes import ExitCode

pytestmark = [pytest.mark.faults, pytest.mark.integration]
ROOT = Path(__file__).resolve().parent.parent.parent


def _run(paths: list[Path], out: Path, log: Path, slow: bool = True) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        **FAST_ENV,
        **(SLOW_ENGINE_ENV if slow else {}),
        "PAGEFLEET_LIMITS__JOB_DEADLINE_S": "300",
    }
    for key in ("PAGEFLEET_BROKER__URL", "PAGEFLEET_BROKER__RESULT_BACKEND"):
        env.pop(key, None)
    argv = [
        sys.executable,
        "-m",
        "pagefleet.workers.cli.main",
        "run",
        *map(str, paths),
        "--out",
        str(out),
        "--ocr",
        "force",
        "--workers",
        "1",
    ]
    return subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT
    )


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        kids = children(todo.pop())
        found += kids
        todo += kids
    return found


def _wait_busy(run: subprocess.Popen[bytes], timeout_s: float = 120) -> None:
    """Until one of the run's workers is reading a page."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(busy_child(k) for k in children(run.pid) if children(k)):
            return
        assert run.poll() is None, "the run ended before the drill"
        time.sleep(0.1)
    raise AssertionError("no page was ever being read")


def _wait_locked(out: Path, run: subprocess.Popen[bytes], timeout_s: float = 120) -> None:
    """Until `run` holds the output folder's lock (its pid is in the lock file): a fixed sleep lost
    the race on a slow machine, and then the second run took the lock first."""
    lock = out / ".pagefleet" / "run.lock"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if lock.exists() and lock.read_text().strip() == str(run.pid):
            return
        assert run.poll() is None, "the first run ended before it took the lock"
        time.sleep(0.05)
    raise AssertionError("the first run never took the output folder's lock")


def _outcome(
    paths: list[Path],
    out: Path,
    pages: int,
    name: str,
    rc: int | None,
    groups: set[int],
    extra: dict | None = None,
) -> dict:
    tally = {
        "drill": name,
        "documents_in": len(paths),
        "pages_in": len(paths) * pages,
        "artifacts": 0,
        "errors": 0,
        "dead_lettered": 0,
        "pages_out": 0,
        "lost": 0,
        "problems": [],
        "exit": rc,
    }
    for path in paths:
        folder = out / path.stem
        has_doc, has_err = (folder / "report.json").exists(), (folder / "error.json").exists()
        if has_doc == has_err:
            tally["problems"].append(f"{path.stem}: artifacts={has_doc} error.json={has_err}")
        if has_doc:
            numbers = sorted(
                p["number"] for p in json.loads((folder / "document.json").read_text())["pages"]
            )
            tally["artifacts"] += 1
            tally["pages_out"] += len(numbers)
            if numbers != list(range(1, pages + 1)):
                tally["problems"].append(f"{path.stem}: pages {numbers}")
        elif has_err:
            code = json.loads((folder / "error.json").read_text()).get("code")
            tally["errors"] += 1
            if not code:
                tally["problems"].append(f"{path.stem}: untyped error.json")
        else:
            tally["lost"] += pages
    time.sleep(1)
    orphans = [p for g in groups for p in process_group_alive(g)]
    tally.update(orphans=len(orphans), **(extra or {}))
    with RESULTS.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(tally) + "\n")
    assert tally["problems"] == [] and tally["lost"] == 0 and orphans == [], tally
    return tally


def test_embedded_redis_dies(tmp_path: Path) -> None:
    paths = make_docs(tmp_path / "in", 3, 2)
    run = _run(paths, tmp_path / "out", tmp_path / "run.log")
    _wait_busy(run)
    groups = set(_descendants(run.pid))
    redis_pid = next(
        p for p in children(run.pid) if b"redis-server" in Path(f"/proc/{p}/cmdline").read_bytes()
    )
    os.kill(redis_pid, signal.SIGKILL)
    started = time.monotonic()
    rc = run.wait(timeout=120)
    assert rc == ExitCode.BROKER_LOST
    tally = _outcome(
        paths,
        tmp_path / "out",
        2,
        "the embedded run's Redis dies",
        rc,
        groups,
        {"stopped_s": round(time.monotonic() - started, 1)},
    )
    assert tally["errors"] >= 1  # the unfinished ones got `aborted`


def test_sigterm_to_run_leaves_nothing_behind(tmp_path: Path) -> None:
    paths = make_docs(tmp_path / "in", 3, 2)
    run = _run(paths, tmp_path / "out", tmp_path / "run.log")
    _wait_busy(run)
    groups = set(_descendants(run.pid))
    started = time.monotonic()
    run.send_signal(signal.SIGTERM)
    rc = run.wait(timeout=90)
    assert rc == ExitCode.TERMINATED
    _outcome(
        paths,
        tmp_path / "out",
        2,
        "SIGTERM to pagefleet run",
        rc,
        groups,
        {"stopped_s": round(time.monotonic() - started, 1)},
    )
    for path in paths:
        error = tmp_path / "out" / path.stem / "error.json"
        assert not error.exists() or json.loads(error.read_text())["code"] == "aborted"


def test_two_runs_over_one_out(tmp_path: Path) -> None:
    paths = make_docs(tmp_path / "in", 2, 2)
    started = time.monotonic()
    first = _run(paths, tmp_path / "out", tmp_path / "first.log", slow=False)
    _wait_locked(tmp_path / "out", first)
    second = _run(paths, tmp_path / "out", tmp_path / "second.log", slow=False)
    rcs = (first.wait(timeout=240), second.wait(timeout=240))
    assert all(rc in (0, 2) for rc in rcs), rcs
    assert "waiting for another run" in (tmp_path / "second.log").read_text()
    _outcome(
        paths,
        tmp_path / "out",
        2,
        "two pagefleet run over the same --out",
        max(rcs),
        set(),
        {"settled_s": round(time.monotonic() - started, 1)},
    )


def test_sigkill_of_run_is_accounted_for_by_the_next_run(tmp_path: Path) -> None:
    """SIGKILL (what the OOM killer sends): the run cannot clean up, so the kernel's parent-death
    signal stops what it started, and the next run over the same --out (here with another document)
    takes over the lock and writes `aborted` for each document the killed one left with nothing."""
    paths = make_docs(tmp_path / "in", 4, 2)
    out = tmp_path / "out"
    run = _run(paths, out, tmp_path / "run.log")
    _wait_busy(run)
    groups = set(_descendants(run.pid))
    run.kill()
    killed = time.monotonic()
    run.wait(timeout=10)
    while any(process_group_alive(g) for g in groups) and time.monotonic() - killed < 10:
        time.sleep(0.1)
    stopped_s = round(time.monotonic() - killed, 1)
    assert not [p for g in groups for p in process_group_alive(g)], (
        "a process of the killed run outlived it by 10 s"
    )
    other = make_docs(tmp_path / "other", 1, 1)
    started = time.monotonic()
    rc = _run(other, out, tmp_path / "next.log", slow=False).wait(timeout=240)
    assert rc in (0, 2), (tmp_path / "next.log").read_text()[-2000:]
    assert "earlier run" in (tmp_path / "next.log").read_text()
    _outcome(
        paths,
        out,
        2,
        "SIGKILL of pagefleet run, then the next run",
        -9,
        groups,
        {"stopped_s": stopped_s, "next_run_s": round(time.monotonic() - started, 1)},
    )
    for path in paths:
        error = out / path.stem / "error.json"
        assert not error.exists() or json.loads(error.read_text())["code"] == "aborted"
