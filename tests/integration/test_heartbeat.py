"""Operations hooks in a real Celery worker (prefork, started like the fleet's): the heartbeat
bootstep and readiness files behind the Kubernetes probes, and Sentry initialised in
`celeryd_init` reporting a failing task from a pool child — with the document text, file name and
task arguments scrubbed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.unit.test_sentry import EnvelopeSink, leaked

pytestmark = pytest.mark.integration
SECRET_TEXT = "שורה סודית מתוך המסמך"
SECRET_FILE = "חוזה לקוח 17.pdf"


def probe(kind: str, env: dict[str, str]) -> int:
    return subprocess.run(
        [sys.executable, "-m", "pagefleet.workers.fleet.heartbeat", kind],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=30,
    ).returncode


@pytest.fixture(scope="module")
def ops_worker(service_env, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One worker on a private queue, with heartbeat files and a Sentry DSN pointing at a sink."""
    from pagefleet.workers.fleet.launcher import WorkerProcess

    tmp = tmp_path_factory.mktemp("ops-worker")
    sink = EnvelopeSink()
    queue = f"ops-{uuid.uuid4().hex[:6]}"  # nothing else sends here
    env = dict(
        os.environ,
        **service_env,
        PAGEFLEET_OBSERVABILITY__HEARTBEAT__DIR=str(tmp / "beat"),
        PAGEFLEET_OBSERVABILITY__HEARTBEAT__INTERVAL_S="0.5",
        PAGEFLEET_OBSERVABILITY__HEARTBEAT__MAX_AGE_S="5",
        SENTRY_DSN=sink.dsn,
    )
    assert probe("live", env) == 1 and probe("ready", env) == 1  # nothing running yet
    worker = WorkerProcess(queue, 1, env, tmp)
    state = {"worker": worker, "env": env, "dir": tmp / "beat", "sink": sink, "queue": queue}
    try:
        deadline = time.monotonic() + 60
        while not (tmp / "beat" / "ready").exists():
            assert worker.alive() and time.monotonic() < deadline, worker.tail()
            time.sleep(0.2)
        yield state
    finally:
        worker.stop()
        sink.close()


def test_failing_task_reaches_sentry_scrubbed(ops_worker: dict[str, Any]) -> None:
    # a fresh connection to the broker configured now, result ignored
    from pagefleet.workers.app import send

    spec = {
        "job_id": "sentry-probe",
        "source": f"s3://uploads/in/{SECRET_FILE}",
        "filename": SECRET_FILE,
        "storage": "s3://out",
        "artifact_prefix": "x",
        "text": SECRET_TEXT,
    }  # `text`: not a JobSpec field
    send("pagefleet.split", [spec], queue=ops_worker["queue"], task_id=f"sentry-{uuid.uuid4().hex}")
    items = ops_worker["sink"].items(1, timeout_s=60)
    events = [i for i in items if isinstance(i.get("exception"), dict)]
    assert events, items
    event = events[0]
    assert event["exception"]["values"][-1]["type"] == "ValidationError"
    assert event["extra"]["celery-job"] == {
        "task_name": "pagefleet.split",
        "args": "[Filtered]",
        "kwargs": "[Filtered]",
    }
    assert event["tags"]["component"] == "worker"
    assert leaked(items, (*SECRET_TEXT.split(), SECRET_FILE, "חוזה", "uploads/in")) == []


def test_heartbeat_and_probes(ops_worker: dict[str, Any]) -> None:
    env, beat = ops_worker["env"], ops_worker["dir"]
    first = (beat / "alive").stat().st_mtime
    time.sleep(1.6)
    assert (beat / "alive").stat().st_mtime > first, "the bootstep keeps beating"
    assert probe("live", env) == 0 and probe("ready", env) == 0
    assert probe("live", dict(env, PAGEFLEET_OBSERVABILITY__HEARTBEAT__MAX_AGE_S="0.001")) == 1, (
        "a stale heartbeat fails liveness"
    )
    ops_worker["worker"].stop()  # warm shutdown
    assert (beat / "stopping").exists() and not (beat / "ready").exists()
    assert probe("ready", env) == 1
    assert probe("live", dict(env, PAGEFLEET_OBSERVABILITY__HEARTBEAT__MAX_AGE_S="0.001")) == 0, (
        "never killed while shutting down"
    )
