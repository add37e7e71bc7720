"""`pagefleet watchdog`, the process compose and Kubernetes run apart from every worker: a broker
that does not answer skips a sweep and never ends the process (it must be there when the broker
comes back); `--once` reports the broker error with its exit code."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from tests.conftest import ROOT, free_port
from pagefleet.workers.cli.exitcodes import for_error
from pagefleet.workers.errors import BrokerUnavailable


def _watchdog(*args: str) -> list[str]:
    broker = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    return [
        sys.executable,
        "-m",
        "pagefleet.workers.cli.main",
        "watchdog",
        "--broker",
        broker,
        *args,
    ]


def test_the_watchdog_outlives_a_broker_that_does_not_answer(tmp_path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PAGEFLEET_OBSERVABILITY__LOG_FORMAT": "plain"}
    log = tmp_path / "watchdog.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            _watchdog("--interval", "0.2"),
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while (
            log.read_text().count("sweep skipped") < 3
            and proc.poll() is None
            and time.monotonic() < deadline
        ):
            time.sleep(0.2)
        assert proc.poll() is None, log.read_text()
        assert log.read_text().count("sweep skipped") >= 3, log.read_text()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    once = subprocess.run(
        _watchdog("--once"),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert once.returncode == for_error(BrokerUnavailable("x")), once.stdout + once.stderr
