"""What creating a file costs right now, and a wait until it is cheap again, before a timed run.

This machine's disk is ext4 without a journal. There, a new inode is never one freed in the last
60 s (360 s while its inode-table block is dirty): `find_inode_bit` steps over every such inode of
the group, looking each one up (`recently_deleted`). After a mass deletion nearby (the end of the
last `make bench`, a test run's temporary folders, a `pip install`), every file or folder created
in the same block group pays for that walk: 0.17–0.7 ms of kernel CPU each, against ~0.005 ms on a
quiet disk (`perf record -e ext4:ext4_request_inode,ext4:ext4_allocate_inode`). A
one-page document stores five artifact files in a folder of its own; the limit, `get_text` in two
processes, creates none. So a run started within minutes of such a deletion measures the
deletion, not the fleet.

    create_cost_ms(folder)         the median wall ms of creating a folder or file as a document's
                                   artifacts do: a new folder in `folder` and five files in it, eight
                                   times (all kept: deleting them would start the same walk)
    wait_quiet(folder, ...)        probes until creating one costs at most `threshold_ms`, or the
                                   process's waiting budget (`MAX_WAIT_S` in all) is spent; returns
                                   (the last probe, seconds waited)

`warm_fleet.WarmFleet.measure` waits before every run of the fleet and keeps the probe with the
run (`RunResult.fs_ms`); on a quiet disk that costs one probe, ~1 ms. A `make bench` started
within minutes of another pays the other's clean-up of ~28 000 files once, up to `MAX_WAIT_S`.
"""

from __future__ import annotations

import itertools
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

_probes = itertools.count()

THRESHOLD_MS = (
    0.05  # the probe on a quiet disk here: 0.011–0.016 ms; after a mass deletion 0.04–0.7 (at
)
# 0.05, six inodes a one-page document cost ~0.2 ms more than on a quiet disk: ~2 % of its CPU)
MAX_WAIT_S = 420.0  # past the 360 s a dirty inode-table block keeps a freed inode out of use
STEP_S = 10.0
_budget = [MAX_WAIT_S]  # what this process may still wait, all calls together


def create_cost_ms(folder: Path, folders: int = 8, files: int = 5) -> float:
    """Median wall milliseconds of one creation (a folder, then `files` empty files in it, as a
    document's artifact folder; `folders` times) under `folder`. The folder matters: ext4 puts a
    new folder near its parent and a file in its folder's block group, so the probe meets the
    inodes the fleet's own artifacts would."""
    folder.mkdir(parents=True, exist_ok=True)
    probe = next(_probes)
    spent = []
    for i in range(folders):
        started = time.perf_counter()
        inner = os.path.join(folder, f"p{os.getpid()}-{probe}-{i}")
        os.mkdir(inner)
        spent.append(time.perf_counter() - started)
        for j in range(files):
            started = time.perf_counter()
            os.close(
                os.open(os.path.join(inner, f"f{j}"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            )
            spent.append(time.perf_counter() - started)
    return statistics.median(spent) * 1000


def wait_quiet(
    folder: Path,
    threshold_ms: float = THRESHOLD_MS,
    step_s: float = STEP_S,
    say: Callable[[str], None] = print,
    sleep: Callable[[float], None] = time.sleep,
    budget: list[float] = _budget,
) -> tuple[float, float]:
    """Wait (in `step_s` sleeps) until a new folder or file under `folder` costs at most
    `threshold_ms`, for as long as `budget[0]` seconds allow (what is waited is taken from it).
    Returns (the last probe's ms, seconds waited). Says why it waits, and what came of it."""
    started = time.monotonic()
    cost = create_cost_ms(folder)
    if cost <= threshold_ms or budget[0] <= 0:
        return cost, 0.0
    say(
        f"file system: creating a file costs {cost:.3f} ms (files deleted in the last minutes: ext4 without a "
        f"journal steps over their inodes); waiting up to {budget[0]:.0f} s for it to settle"
    )
    while cost > threshold_ms and time.monotonic() - started < budget[0]:
        sleep(min(step_s, max(0.0, budget[0] - (time.monotonic() - started))))
        cost = create_cost_ms(folder)
    waited = time.monotonic() - started
    budget[0] = max(0.0, budget[0] - waited)
    say(f"file system: {cost:.3f} ms a file after {waited:.0f} s")
    return cost, waited
