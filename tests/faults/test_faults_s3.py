"""Drills: the object store goes away (the proxy in front of moto is cut) during OCR, at the split
of a document whose source is on S3, and during collect, or stops answering (the proxy stalls:
connections stay open, nothing comes back) during collect; then comes back. Nothing may be lost."""

from __future__ import annotations

import os
import time

import pytest

from tests.faults.conftest import finish, settle, submit

pytestmark = [pytest.mark.faults, pytest.mark.integration]
OUTAGE_S = float(os.environ.get("PAGEFLEET_DRILL_OUTAGE_S", "12"))


def _wait_state(job_ids: list[str], states: tuple[str, ...], timeout_s: float = 60) -> None:
    from pagefleet.workers.fleet import jobs

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(jobs.get(j).get("state") in states for j in job_ids):
            return
        time.sleep(0.01)
    raise AssertionError(f"no job reached {states}")


def _outage(drill, ids: list[str], name: str) -> None:
    """S3 is already cut: keep it away for OUTAGE_S, bring it back, wait, check the invariant."""
    time.sleep(OUTAGE_S)
    drill.fleet.proxy.restore()
    took = settle(ids, 240)
    finish(drill, name, {"outage_s": OUTAGE_S, "settled_s": round(took, 1)})


def test_s3_unreachable_during_ocr(drill) -> None:
    with drill():
        ids = submit(drill, drill.docs(3, 2), pages=2)
        _wait_state(ids, ("ocr",))
        drill.fleet.proxy.cut()
        _outage(drill, ids, "S3 unreachable during OCR")


def test_s3_unreachable_at_split_source_on_s3(drill) -> None:
    with drill():
        paths = drill.docs(2, 2)
        drill.fleet.proxy.cut()
        ids = submit(
            drill, paths, pages=2, on_s3=True
        )  # uploaded directly; the fleet cannot reach it
        _outage(drill, ids, "S3 unreachable at split (source on S3)")


def test_s3_unreachable_during_collect(drill) -> None:
    with drill():
        ids = submit(drill, drill.docs(4, 2), pages=2)
        _wait_state(ids, ("collecting", "done"))  # a collect is short: the first to begin or end
        drill.fleet.proxy.cut()
        _outage(drill, ids, "S3 unreachable during collect")


def test_s3_stalls_during_collect(drill) -> None:
    """A collect's PUTs wait on connections that never answer: each fails after the S3 timeout and
    the collect is retried, or its soft time limit ends it and the chord's error callback collects."""
    with drill():
        ids = submit(drill, drill.docs(4, 2), pages=2)
        _wait_state(ids, ("collecting", "done"))
        drill.fleet.proxy.stall()
        _outage(drill, ids, "S3 stalls during collect")


def test_s3_unreachable_during_a_batch_of_small_documents(drill) -> None:
    """One submission's one-page documents go as batches (`pagefleet.split_batch`): S3 goes away
    while the first batch splits; a failed document retries its batch, which skips what is done."""
    from pagefleet.workers.fleet import jobs

    with drill():
        ids = submit(drill, drill.docs(16, 1), pages=1, together=True)
        _wait_state(ids, ("splitting", "collecting", "done"))
        drill.fleet.proxy.cut()
        assert [jobs.get(j).get("state") for j in ids].count("done") < len(
            ids
        )  # the cut hit the batch
        _outage(drill, ids, "S3 unreachable during a batch of small documents")
