"""Drill: Redis reaches its `maxmemory` (noeviction) while documents are in OCR. No worker exits
(an acknowledgement still works at the limit; a refused write waits for memory); a submission is
refused with a clear error, never accepted as a job that cannot run; once memory is freed every
document finishes within 90 s."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from tests.faults.conftest import finish, log_tails, settle, submit
from tests.support.drills import SLOW_ENGINE_ENV, busy_child
from pagefleet.workers.cli.exitcodes import ExitCode

pytestmark = [pytest.mark.faults, pytest.mark.integration]
ROOT = Path(__file__).resolve().parent.parent.parent
FULL_S = 15.0  # below the drills' 25 s soft time limit: a task that waits is not cut off meanwhile
# the default watchdog deadline (15 min): the documents must finish on their own, not be rescued by it
DEFAULT_DEADLINE = {"PAGEFLEET_LIMITS__JOB_DEADLINE_MINUTES": "15"}


def _until(predicate, timeout_s: float = 60, every_s: float = 0.05):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(every_s)
    raise AssertionError("condition not reached")


def test_redis_at_maxmemory_with_documents_in_ocr(drill, tmp_path: Path) -> None:
    with drill(
        env_extra={**SLOW_ENGINE_ENV, **DEFAULT_DEADLINE}, queues=(("split,collect", 1), ("cpu", 2))
    ) as fleet:
        ids = submit(drill, drill.docs(4, 3), pages=3)
        _until(lambda: any(busy_child(w.proc.pid) for w in fleet.workers[1:]), 60)
        client = redis.Redis.from_url(fleet.redis.url)
        used = int(client.info("memory")["used_memory"])
        # every write that needs memory is refused, with room to spare: used_memory moves by hundreds
        # of kB as the fleet's connections fill and drain their buffers
        client.config_set("maxmemory", used // 2)
        full_at = time.monotonic()
        extra = drill.docs(1, 1)[0]
        cli = subprocess.run(
            [
                sys.executable,
                "-m",
                "pagefleet.workers.cli.main",
                "submit",
                str(extra),
                "--storage",
                f"file://{tmp_path / 'refused'}",
            ],
            cwd=ROOT,
            env=fleet.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert cli.returncode == ExitCode.BROKER_FULL and "broker is full" in cli.stderr, (
            cli.returncode,
            cli.stderr,
        )
        time.sleep(max(0.0, FULL_S - (time.monotonic() - full_at)))
        assert [w.name for w in fleet.workers if not w.alive()] == [], (
            "a worker exited at maxmemory"
        )
        client.config_set("maxmemory", 0)
        took = settle(ids, 120)
        assert [w.name for w in fleet.workers if not w.alive()] == [], (
            "a worker exited after memory was freed"
        )
    assert took < 90, f"documents took {took:.1f}s after memory was freed\n{log_tails(fleet.tmp)}"
    finish(
        drill,
        "Redis at maxmemory mid-OCR",
        {"full_s": FULL_S, "settled_s": round(took, 1), "submit_rc": cli.returncode},
    )
