"""The bench's observer (`tests/support/warm_fleet.py: WarmFleet._wait`) on a real Redis: it reads the
fleet's done notices in batches (it shares the fleet's two cores), so it must still hear every
notice — those sent before it first looks too (it subscribes before the jobs go) — find a job
whose notice it never got by reading the job states again, and give up on a job that never ends.
No timing is asserted: only which jobs it reports finished."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest

from tests.support import warm_fleet as bench_warm
from tests.support.warm_fleet import WarmFleet
from pagefleet.workers.fleet import jobs

pytestmark = pytest.mark.integration


def _finish(r, job_id: str, notify: bool = True) -> None:
    r.hset(f"pagefleet:job:{job_id}", mapping={"state": "done", "pages": "1"})
    if notify:
        jobs.announce({"job_id": job_id}, r)  # the notice as the fleet sends it


@pytest.fixture()
def observer(service_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(
        "PAGEFLEET_STORAGE__CACHE_DIR", str(tmp_path / "cache")
    )  # WarmFleet sets it; put back after
    monkeypatch.setattr(bench_warm, "_RECHECK_S", 0.3)
    fleet = WarmFleet(tmp_path, s3=False)  # no workers started: only its observer is used
    r = jobs.client()
    notices = r.pubsub(ignore_subscribe_messages=True)
    notices.subscribe(jobs.DONE_CHANNEL)
    yield fleet, r, notices
    notices.close()


def test_every_notice_is_heard_and_an_unheard_job_is_found(observer) -> None:
    fleet, r, notices = observer
    ids = [f"observer-{uuid.uuid4().hex[:8]}-{i}" for i in range(40)]
    for job_id in ids[:10]:  # done before the observer first looks
        _finish(r, job_id)

    def later() -> None:
        for job_id in ids[10:39]:
            _finish(r, job_id)
            time.sleep(0.005)
        _finish(r, ids[39], notify=False)  # its notice lost: found by the states read again

    sender = threading.Thread(target=later)
    sender.start()
    redis_mb, finished, states = fleet._wait(r, notices, ids, timeout_s=30)
    sender.join()
    assert [s.get("state") for s in states] == ["done"] * len(ids)
    assert redis_mb > 0
    assert finished <= time.perf_counter()


def test_a_job_that_never_ends_times_out(observer) -> None:
    fleet, r, notices = observer
    ids = [f"observer-{uuid.uuid4().hex[:8]}-{i}" for i in range(3)]
    _finish(r, ids[0])
    _finish(r, ids[1])
    with pytest.raises(TimeoutError):
        fleet._wait(r, notices, ids, timeout_s=1.0)
