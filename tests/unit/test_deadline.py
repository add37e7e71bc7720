"""pagefleet/workers/fleet/deadline.py: a task on a thread keeps its own soft time limit. The batcher lets a read
still queued at its deadline go, a shared call runs under the earliest deadline of its requests,
the VLM's generate stops there, and the page chain stops between engines."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from pagefleet.workers.fleet import deadline
from pagefleet.workers.engines.batching import Batcher
from pagefleet.workers.errors import TaskDeadline


def test_until_check_and_remaining() -> None:
    assert deadline.get() is None and deadline.remaining() is None
    deadline.check()  # no deadline: nothing to pass
    with deadline.until(time.monotonic() + 60):
        left = deadline.remaining()
        assert left is not None and 59 < left <= 60
        deadline.check()
        with deadline.until(time.monotonic() - 1):
            with pytest.raises(TaskDeadline, match="passed its time limit"):
                deadline.check("a page")
        assert deadline.remaining() is not None and deadline.remaining() > 59  # the outer one again
    assert deadline.get() is None


def test_each_thread_has_its_own_deadline() -> None:
    seen: list[float | None] = []
    with deadline.until(time.monotonic() + 5):
        thread = threading.Thread(target=lambda: seen.append(deadline.get()))
        thread.start()
        thread.join()
    assert seen == [None]


def test_a_read_still_queued_at_its_deadline_leaves_the_queue() -> None:
    sizes: list[int] = []
    batcher = Batcher(lambda key, items, requests: sizes.append(items))
    entered, opened = threading.Event(), threading.Event()

    def read(items: list[int]) -> list[int]:
        if not entered.is_set():
            entered.set()
            assert opened.wait(10)
        return items

    def late() -> list[int]:
        with deadline.until(time.monotonic() + 0.2):
            return batcher.run("k", [2], 4, read)

    with ThreadPoolExecutor(3) as pool:
        first = pool.submit(batcher.run, "k", [1], 4, read)
        assert entered.wait(10)
        waiting = pool.submit(late)
        with pytest.raises(TaskDeadline, match="waiting for its batch"):
            waiting.result(timeout=10)  # it gave up while the first call still ran
        patient = pool.submit(batcher.run, "k", [3], 4, read)
        time.sleep(0.1)
        opened.set()
        assert first.result(10) == [1] and patient.result(10) == [3]
    assert sizes == [1, 1]  # the late request was never read


def test_a_shared_call_runs_under_its_earliest_deadline() -> None:
    batcher, seen = Batcher(), []
    entered, opened = threading.Event(), threading.Event()
    now = time.monotonic()

    def read(items: list[int]) -> list[int]:
        seen.append((list(items), deadline.get()))
        if not entered.is_set():
            entered.set()
            assert opened.wait(10)
        return items

    def within(seconds: float, item: int) -> list[int]:
        with deadline.until(now + seconds):
            return batcher.run("k", [item], 4, read)

    with ThreadPoolExecutor(3) as pool:
        first = pool.submit(within, 100, 1)
        assert entered.wait(10)
        later = [pool.submit(within, 50, 2), pool.submit(within, 30, 3)]
        for _ in range(500):
            with batcher._cond:
                if len(batcher._queues.get("k", [])) == 2:
                    break
            time.sleep(0.01)
        opened.set()
        assert [f.result(10) for f in [first, *later]] == [[1], [2], [3]]
    assert seen == [([1], now + 100), ([2, 3], now + 30)]


def test_the_page_chain_stops_at_the_deadline() -> None:
    from pagefleet.workers.ladder import ocr_chain

    ocr_chain.run_chains([])  # nothing to read, no deadline
    with deadline.until(time.monotonic() - 0.5), pytest.raises(TaskDeadline):
        ocr_chain.run_chains([])


def test_a_tesseract_pass_ends_by_the_deadline(fixtures_dir, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The fallback engines of a gpu worker's chain too: a pass waits no longer than the task may
    run (its own timeout otherwise), and a pass cut there is the task's time limit."""
    import pymupdf

    from pagefleet.workers.engines import tesseract

    png = tmp_path / "page.png"
    with pymupdf.open(fixtures_dir / "image_only_hebrew_scan.pdf") as doc:
        doc[0].get_pixmap(dpi=300, colorspace=pymupdf.csGRAY).save(png)
    text, _ = tesseract.recognise(str(png), "heb+eng", 3, 300, tmp_path)
    assert "שלום" in text  # no deadline: read as ever
    with deadline.until(time.monotonic() - 1), pytest.raises(TaskDeadline, match="tesseract"):
        tesseract.recognise(str(png), "heb+eng", 3, 300, tmp_path)
    assert tesseract.bounded(180.0) == 180.0
    with deadline.until(time.monotonic() + 5):
        assert 4 < tesseract.bounded(180.0) <= 5
    assert deadline.bounded(None, "a wait") is None  # no deadline, no timeout of its own: none
    with deadline.until(time.monotonic() + 5):
        left = deadline.bounded(None, "a wait")
        assert left is not None and 4 < left <= 5


def test_a_sandbox_command_ends_by_the_deadline(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A gpu worker's thread renders its pages through the sandbox too: a command runs no longer
    than the task may (the sandbox's own timeout, 120 s, otherwise), and one cut there, or one that
    would start after it, is the task's time limit — not a broken file."""
    from tests.unit.test_forkserver import extract_past_timeout, many_pages
    from pagefleet.workers.pdf import sandbox

    path = many_pages(tmp_path)
    limits = {"timeout_s": 120.0, "memory_mb": 3072}
    assert (
        sandbox.run_child("probe", str(path), {}, **limits)["page_count"] == 400
    )  # no deadline: as ever
    with deadline.until(time.monotonic() - 1), pytest.raises(TaskDeadline, match="sandbox's probe"):
        sandbox.run_child("probe", str(path), {}, **limits)  # passed: nothing starts
    started = time.monotonic()
    with (
        deadline.until(time.monotonic() + 0.01),
        pytest.raises(TaskDeadline, match="sandbox's extract"),
    ):
        sandbox.run_child("extract", str(path), {"first": 1, "last": 400}, **limits)
    assert time.monotonic() - started < 30  # cut at the deadline, not the sandbox's 120 s
    extract_past_timeout(
        tmp_path
    )  # its own timeout outside a deadline: a failed command (SandboxError)


def test_a_command_after_a_wait_for_its_turn_gets_only_the_time_left(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The wait for the fork server counts against the deadline: a command that got its turn 0.5 s
    into a 2 s deadline is sent with the 1.5 s left, not the 2 s it had when it asked."""
    from pagefleet.workers.errors import SandboxError
    from pagefleet.workers.pdf import sandbox
    from pagefleet.workers.pdf.forkserver import CLIENT

    sent: list[float] = []

    def server(request, timeout_s):  # type: ignore[no-untyped-def]
        sent.append(request["timeout_s"])
        return {"rc": 1, "timed_out": False}  # a failed command: nothing else to fake

    monkeypatch.setattr(CLIENT, "run", server)
    held = threading.Event()

    def another_command() -> None:
        with sandbox._ONE_AT_A_TIME:
            held.set()
            time.sleep(0.5)

    other = threading.Thread(target=another_command)
    other.start()
    held.wait(5)
    try:
        with deadline.until(time.monotonic() + 2.0), pytest.raises(SandboxError):
            sandbox.run_child("render", "any.pdf", {}, timeout_s=120.0, memory_mb=3072)
    finally:
        other.join()
    assert len(sent) == 1 and 1.0 < sent[0] < 1.6


def test_a_thread_waiting_for_the_sandbox_leaves_at_its_deadline() -> None:
    """One command of a process at a time (`sandbox._ONE_AT_A_TIME`): a task thread behind another's
    long command waits no longer than its deadline."""
    from pagefleet.workers.pdf import sandbox

    with sandbox._ONE_AT_A_TIME:  # another thread's command under way
        with (
            deadline.until(time.monotonic() + 0.05),
            pytest.raises(TaskDeadline, match="waited past"),
        ):
            with sandbox._turn("render"):
                pass
    with sandbox._turn("render"):  # free again, no deadline: taken
        assert sandbox._ONE_AT_A_TIME.locked()
    assert not sandbox._ONE_AT_A_TIME.locked()
