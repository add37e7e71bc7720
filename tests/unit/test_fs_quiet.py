"""tests/support/fs_quiet.py: the probe really creates a document's worth of folders and files (and keeps
them), and the wait stops on a quiet disk at once, or waits out its budget and spends it. No
timing is asserted: the budget is spent by real sleeps, and only what was said and left is checked."""

from __future__ import annotations

import time
from pathlib import Path

from tests.support.fs_quiet import create_cost_ms, wait_quiet


def test_probe_creates_folders_of_five_files_and_keeps_them(tmp_path: Path) -> None:
    cost = create_cost_ms(tmp_path / "probe", folders=3, files=5)
    assert cost > 0
    folders = sorted(p for p in (tmp_path / "probe").iterdir())
    assert len(folders) == 3 and all(p.is_dir() for p in folders)
    assert all(sorted(f.name for f in p.iterdir()) == [f"f{j}" for j in range(5)] for p in folders)
    create_cost_ms(
        tmp_path / "probe", folders=3, files=5
    )  # a second probe: new names, nothing overwritten
    assert len(list((tmp_path / "probe").iterdir())) == 6


def test_quiet_disk_waits_for_nothing(tmp_path: Path) -> None:
    said: list[str] = []
    budget = [60.0]
    cost, waited = wait_quiet(
        tmp_path, threshold_ms=1e9, say=said.append, sleep=lambda s: None, budget=budget
    )
    assert cost > 0 and waited == 0.0 and said == [] and budget == [60.0]


def test_a_disk_that_never_settles_spends_the_budget_once(tmp_path: Path) -> None:
    said: list[str] = []
    budget = [0.2]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        time.sleep(s)

    cost, waited = wait_quiet(
        tmp_path, threshold_ms=-1.0, step_s=0.05, say=said.append, sleep=sleep, budget=budget
    )
    assert waited >= 0.2 and budget == [0.0] and len(slept) >= 2
    assert len(said) == 2 and "waiting up to" in said[0] and "after" in said[1]
    # spent: the next call only probes
    said.clear()
    assert (
        wait_quiet(tmp_path, threshold_ms=-1.0, say=said.append, sleep=sleep, budget=budget)[1]
        == 0.0
    )
    assert said == []
