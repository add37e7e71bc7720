"""pagefleet/workers/engines/batching.py: concurrent reads under one key share calls of at most `size` items,
each caller gets its own rows in order, a failure reaches every caller of its batch (and only
those), and a lone caller reads at once."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from pagefleet.workers.engines.batching import Batcher


class Gate:
    """A `read` whose first call waits until the test opens it: the other callers queue meanwhile."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.entered = threading.Event()
        self.calls: list[list[int]] = []
        self.lock = threading.Lock()

    def read(self, items: list[int]) -> list[int]:
        with self.lock:
            self.calls.append(list(items))
            first = len(self.calls) == 1
        if first:
            self.entered.set()
            assert self.opened.wait(10)
        if -1 in items:
            raise ValueError("a bad page")
        return [item * 10 for item in items]


def queued(batcher: Batcher, key: str, count: int) -> bool:
    with batcher._cond:
        return len(batcher._queues.get(key, [])) >= count


def run_concurrently(
    batcher: Batcher, gate: Gate, requests: list[list[int]], size: int
) -> list[object]:
    """The first request enters `read` and holds it; the rest queue; then the gate opens."""
    with ThreadPoolExecutor(len(requests)) as pool:
        futures = [pool.submit(batcher.run, "k", requests[0], size, gate.read)]
        assert gate.entered.wait(10)
        futures += [pool.submit(batcher.run, "k", r, size, gate.read) for r in requests[1:]]
        for _ in range(1000):
            if queued(batcher, "k", len(requests) - 1):
                break
            threading.Event().wait(0.01)
        gate.opened.set()
        results: list[object] = []
        for f in futures:
            try:
                results.append(f.result(timeout=10))
            except ValueError as exc:
                results.append(exc)
    return results


def observed(calls: list[int]) -> Batcher:
    """A batcher whose observer keeps the items of every call that read."""
    return Batcher(lambda key, items, requests: calls.append(items))


def test_a_lone_caller_reads_at_once() -> None:
    sizes: list[int] = []
    batcher, gate = observed(sizes), Gate()
    gate.opened.set()
    assert batcher.run("k", [1, 2, 3], 8, gate.read) == [10, 20, 30]
    assert gate.calls == [[1, 2, 3]] and sizes == [3]


def test_waiting_callers_share_calls_up_to_the_size_and_get_their_own_rows() -> None:
    sizes: list[int] = []
    batcher, gate = observed(sizes), Gate()
    requests = [[i] for i in range(1, 11)]  # ten one-page tasks
    results = run_concurrently(batcher, gate, requests, size=4)
    assert results == [[i * 10] for i in range(1, 11)]
    assert gate.calls[0] == [
        1
    ]  # the first read alone, the nine waiting ones in order, four at a time
    assert gate.calls[1:] == [[2, 3, 4, 5], [6, 7, 8, 9], [10]]
    assert sizes == [1, 4, 4, 1]
    assert not batcher._queues and not batcher._running


def test_a_request_larger_than_the_size_goes_alone() -> None:
    batcher, gate = Batcher(), Gate()
    results = run_concurrently(batcher, gate, [[1], [2, 3, 4, 5, 6], [7]], size=4)
    assert results == [[10], [20, 30, 40, 50, 60], [70]]
    assert gate.calls == [[1], [2, 3, 4, 5, 6], [7]]


def test_a_failed_batch_fails_its_callers_only() -> None:
    batcher, gate = Batcher(), Gate()
    results = run_concurrently(batcher, gate, [[1], [2], [-1], [4], [5], [6]], size=3)
    assert gate.calls == [[1], [2, -1, 4], [5, 6]]
    assert results[0] == [10] and results[4] == [50] and results[5] == [60]
    errors = results[1:4]
    assert all(isinstance(e, ValueError) and str(e) == "a bad page" for e in errors)
    assert len({id(e) for e in errors}) == 3  # each caller raises its own copy


def test_keys_do_not_mix() -> None:
    batcher, gate = Batcher(), Gate()
    gate.opened.set()
    with ThreadPoolExecutor(4) as pool:
        futures = [
            pool.submit(batcher.run, key, [n], 8, gate.read)
            for key, n in (("a", 1), ("b", 2), ("a", 3), ("b", 4))
        ]
        assert [f.result(10) for f in futures] == [[10], [20], [30], [40]]
    for call in gate.calls:
        assert {n % 2 for n in call} in ({0}, {1})  # key a holds odd items, key b even ones


def test_a_wrong_row_count_is_an_error_for_the_batch() -> None:
    batcher = Batcher()
    with pytest.raises(RuntimeError, match="read 1 rows"):
        batcher.run("k", [1, 2], 8, lambda items: items[:1])
    assert batcher.run("k", [3], 8, lambda items: items) == [3]


def test_a_gpu_worker_runs_its_tasks_on_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a worker of the gpu queue alone: every other one keeps the prefork pool (time limits,
    recycling); `PAGEFLEET_GPU__POOL=prefork` turns it back."""
    from pagefleet.workers.fleet.launcher import pool_for
    from pagefleet.workers.settings import get_settings

    get_settings.cache_clear()
    assert pool_for("gpu") == ["-P", "threads"]
    assert pool_for("cpu") == [] and pool_for("split,collect") == [] and pool_for("cpu,gpu") == []
    monkeypatch.setenv("PAGEFLEET_GPU__POOL", "prefork")
    get_settings.cache_clear()
    try:
        assert pool_for("gpu") == ["-P", "prefork"]
    finally:
        monkeypatch.delenv("PAGEFLEET_GPU__POOL")
        get_settings.cache_clear()


def test_pagefleet_worker_gives_a_gpu_worker_vlm_batch_size_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`pagefleet worker --queues gpu` (compose, Kubernetes): the threads pool with as many task
    threads as a generate call takes pages, unless --concurrency says otherwise; others prefork."""
    from pagefleet.workers.cli import main
    from pagefleet.workers.settings import get_settings

    started: list[list[str]] = []
    monkeypatch.setattr(main.os, "execv", lambda exe, argv: started.append(argv))
    monkeypatch.setenv("PAGEFLEET_GPU__VLM__BATCH_SIZE", "16")
    get_settings.cache_clear()
    try:
        assert main.main(["worker", "--queues", "gpu"]) == 0
        assert main.main(["worker", "--queues", "gpu", "--concurrency", "4"]) == 0
        assert main.main(["worker", "--queues", "cpu", "--concurrency", "3"]) == 0
    finally:
        monkeypatch.delenv("PAGEFLEET_GPU__VLM__BATCH_SIZE")
        get_settings.cache_clear()

    def option(argv: list[str], flag: str) -> str | None:
        return argv[argv.index(flag) + 1] if flag in argv else None

    assert [(option(a, "-c"), option(a, "-P")) for a in started] == [
        ("16", "threads"),
        ("4", "threads"),
        ("3", None),
    ]
    monkeypatch.setenv(
        "PAGEFLEET_GPU__POOL", "prefork"
    )  # each pool process would load its own models: one
    get_settings.cache_clear()
    try:
        assert main.main(["worker", "--queues", "gpu"]) == 0
    finally:
        monkeypatch.delenv("PAGEFLEET_GPU__POOL")
        get_settings.cache_clear()
    assert (option(started[-1], "-c"), option(started[-1], "-P")) == ("1", "prefork")


def test_every_call_is_observed_with_its_pages_and_tasks() -> None:
    """The hook a gpu worker sets (pagefleet.workers.app → metrics: pagefleet_generate_*)."""
    seen: list[tuple[object, int, int]] = []
    batcher, gate = (
        Batcher(lambda key, items, requests: seen.append((key, items, requests))),
        Gate(),
    )
    run_concurrently(batcher, gate, [[1], [2], [3, 4]], size=4)
    assert seen == [("k", 1, 1), ("k", 3, 2)]
