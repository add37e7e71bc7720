"""tests/support/warm_fleet.py's CPU by role, on real processes: a sandbox server orphaned by its pool
process (a pool process recycled after 200 tasks leaves its server to init) keeps the CPU it spent,
and a server its pool process reaps is counted once, in the sandbox role.

    worker main (M) ── pool process (P, role "cpu") ── "forkserver" (S, role "sandbox": burns CPU)

No timing is asserted: S burns a fixed amount of its own CPU, the test reads where it lands."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import psutil

from tests.support.warm_fleet import WarmFleet

BURN_S = 0.3

# S: burns BURN_S of CPU, says so, then lives a while (an orphan when its parent has left)
SERVER = f"""
import sys, time
while time.process_time() < {BURN_S}:
    pass
print("burnt", flush=True)
time.sleep(float(sys.argv[1]))
"""

# P: starts S (a script whose file name says forkserver: the bench's sandbox mark; P's own command
# line must not hold the word), waits until S has burnt, then either reaps S ("reap") or leaves it
# behind ("orphan"); then says so and exits
POOL = """
import os, subprocess, sys
stub = os.path.join(sys.argv[1], "fork" + "server_stub.py")
server = subprocess.Popen([sys.executable, stub, sys.argv[3]], stdout=subprocess.PIPE)
server.stdout.readline()
print("ready", flush=True)
sys.stdin.readline()
if sys.argv[2] == "reap":
    server.kill()
    server.wait()
print("done", flush=True)
"""

# M: starts P with a pipe to it, relays one line to it, and reaps it only when told (till then a
# finished P is a zombie, as a recycled pool process is until the worker's main process reaps it)
MAIN = """
import subprocess, sys
pool = subprocess.Popen([sys.executable, sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]],
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
print(pool.stdout.readline().strip(), flush=True)
sys.stdin.readline()
pool.stdin.write("go\\n"); pool.stdin.flush()
print(pool.stdout.readline().strip(), flush=True)
sys.stdin.readline()
pool.wait()
"""


def _fleet(main: subprocess.Popen[str], tmp: Path) -> WarmFleet:
    fleet = WarmFleet(tmp, s3=False)
    fleet.workers = [SimpleNamespace(name="cpu-test", proc=main)]
    fleet.redis = SimpleNamespace(proc=main)  # the "redis" figure: not one the tests read
    return fleet


def _run(tmp: Path, mode: str) -> tuple[dict[str, float], dict[str, float]]:
    """CPU by role once S has burnt (under P) and again after P has reaped or left S (P still a
    zombie, unreaped by M)."""
    (tmp / "forkserver_stub.py").write_text(SERVER)
    (tmp / "pool.py").write_text(POOL)
    main = subprocess.Popen(
        [sys.executable, "-c", MAIN, str(tmp / "pool.py"), str(tmp), mode, "5"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert main.stdout is not None and main.stdin is not None
        assert main.stdout.readline().strip() == "ready"
        fleet = _fleet(main, tmp)
        before = fleet._cpu_roles()
        main.stdin.write("go\n")
        main.stdin.flush()
        assert main.stdout.readline().strip() == "done"
        pool = [p for p in psutil.Process(main.pid).children()]
        deadline = time.monotonic() + 10
        while pool and pool[0].status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
            time.sleep(0.02)  # P has said it is done: wait until it has exited
        after = fleet._cpu_roles()
        main.stdin.write("end\n")
        main.stdin.flush()
        return before, after
    finally:
        main.kill()
        main.wait()
        for proc in psutil.process_iter(["cmdline"]):
            if str(tmp / "forkserver_stub.py") in (proc.info["cmdline"] or []):
                proc.kill()  # an orphaned S still sleeping


def test_an_orphaned_sandbox_server_keeps_its_cpu(tmp_path: Path) -> None:
    before, after = _run(tmp_path, "orphan")
    assert before["sandbox"] >= BURN_S * 0.9
    assert after["sandbox"] >= BURN_S * 0.9  # not dropped as if its zombie parent had reaped it
    assert after["cpu"] < BURN_S * 0.5  # nor counted in the pool process's role


def test_a_reaped_sandbox_server_is_counted_once_in_its_own_role(tmp_path: Path) -> None:
    before, after = _run(tmp_path, "reap")
    assert before["sandbox"] >= BURN_S * 0.9
    assert after["sandbox"] >= BURN_S * 0.9  # given back from the pool process's reaped CPU
    assert after["sandbox"] + after["cpu"] < 2 * BURN_S  # once, not twice
    assert after["cpu"] < BURN_S * 0.5
