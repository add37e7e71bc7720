"""The documented Flower command, for real against the test Redis: basic auth on the UI and API,
while /metrics and /healthcheck answer without it (which is why k8s/ fences them off)."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT, free_port

pytestmark = pytest.mark.integration
pytest.importorskip("flower")


def get(url: str, user: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url)
    if user:
        request.add_header("Authorization", "Basic " + base64.b64encode(user.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_flower_requires_auth_but_serves_metrics(service_env, tmp_path: Path) -> None:
    port = free_port()
    env = dict(os.environ, **service_env, FLOWER_BASIC_AUTH="ops:s3cret")
    log = tmp_path / "flower.log"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "pagefleet.workers.app",
            "flower",
            f"--port={port}",
            "--address=127.0.0.1",
            "--purge-offline-workers=600",
            "--tasks-columns=name,uuid,state,received,started,runtime,worker,retries",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(log, "wb"),
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 45
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                if get(base + "/healthcheck")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.3)
        assert get(base + "/")[0] == 401
        assert get(base + "/api/workers")[0] == 401
        assert get(base + "/", "ops:wrong")[0] == 401
        assert get(base + "/", "ops:s3cret")[0] == 200
        status, metrics = get(base + "/metrics")
        assert status == 200 and b"flower_" in metrics
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
