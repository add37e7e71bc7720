"""One truth per job and a dead worker's messages back in seconds, against a real redis-server:
a state never goes back from done, a dead worker's unacknowledged message is put back on its queue
by kombu's own restore, and a split lock's owner is known dead by its pid or its worker's beats."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from tests.integration.test_reliability_state import private_redis, redis_url  # noqa: F401 - fixtures
from pagefleet.workers.fleet import job_runs, jobs, liveness

pytestmark = pytest.mark.integration


def test_a_state_never_goes_back_from_done(redis_url: str) -> None:
    jobs.update("job-d", state=jobs.JobState.COLLECTING)
    jobs.update("job-d", state=jobs.JobState.DONE, status="accepted")
    jobs.update(
        "job-d", state=jobs.JobState.COLLECTING, pages_done=3
    )  # a late second chain of the job
    jobs.update("job-d", state=jobs.JobState.ERROR)
    record = jobs.get("job-d")
    assert (
        record["state"] == "done" and record["status"] == "accepted" and "pages_done" not in record
    )
    jobs.update("job-d", redispatched=1)  # fields without a state still land
    assert jobs.get("job-d")["redispatched"] == "1"


def _unacked_message(url: str, queue: str):
    """A message taken from `queue` and not acknowledged: kombu lists it in `unacked`."""
    from kombu import Connection

    conn = Connection(url)
    q = conn.SimpleQueue(queue)
    q.put({"page": 7})
    message = q.get(timeout=5)
    return conn, message


def test_a_silent_workers_unacknowledged_message_goes_back_on_its_queue(
    redis_url: str, monkeypatch
) -> None:
    from kombu import Connection

    conn, message = _unacked_message(redis_url, "drill-q")
    r = jobs.client()
    assert r.hexists(liveness.UNACKED, message.delivery_tag) and r.llen("drill-q") == 0
    monkeypatch.setitem(liveness.SELF, "worker", "cpu1@host/4242")
    liveness.hold(message.delivery_tag, "job-p7")
    liveness.beat([4243])
    monkeypatch.setitem(liveness.SELF, "worker", "cpu2@host/4343")  # a peer, 31 s later
    restore = liveness.Restorer(lambda: Connection(redis_url))
    assert liveness.reap(restore, now=time.time() + 10) == {}  # not silent long enough yet
    assert liveness.reap(restore, now=time.time() + 31) == {"cpu1@host/4242": 1}
    restore.close()
    assert r.llen("drill-q") == 1 and not r.hexists(liveness.UNACKED, message.delivery_tag)
    assert r.zscore(liveness.WORKERS, "cpu1@host/4242") is None and not r.exists(
        "pagefleet:held:cpu1@host/4242"
    )
    conn.release()


def test_a_beat_forgets_held_messages_once_acknowledged(redis_url: str, monkeypatch) -> None:
    conn, message = _unacked_message(redis_url, "drill-q2")
    monkeypatch.setitem(liveness.SELF, "worker", "cpu1@host/4242")
    liveness.hold(message.delivery_tag, "job-p1")
    message.ack()
    liveness.beat([])
    assert jobs.client().hlen("pagefleet:held:cpu1@host/4242") == 0
    conn.release()


def test_a_lock_owner_is_dead_by_its_pid_or_its_workers_beats(redis_url: str, monkeypatch) -> None:
    monkeypatch.setitem(liveness.SELF, "worker", "split@host/1")
    liveness.beat([os.getpid()])
    assert not liveness.owner_dead(liveness.owner())  # this process, beating
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead_child = json.loads(liveness.owner()) | {"pid": gone.pid}
    assert liveness.owner_dead(json.dumps(dead_child))  # its pid is gone on this host
    elsewhere = json.loads(liveness.owner()) | {
        "host": "another-host",
        "pid": 999_999,
        "at": time.time() - 5,
    }
    assert liveness.owner_dead(
        json.dumps(elsewhere)
    )  # a beat after the claim lists no such pool process
    assert not liveness.owner_dead(
        json.dumps(elsewhere | {"at": time.time() + 5})
    )  # claimed after the last beat
    jobs.client().zadd(liveness.WORKERS, {"split@host/1": time.time() - 60})
    silent = elsewhere | {"pid": os.getpid(), "at": time.time() + 5}
    assert liveness.owner_dead(json.dumps(silent))  # its worker is silent
    assert not liveness.owner_dead(None) and not liveness.owner_dead("")


def test_a_lock_left_by_an_earlier_delivery_of_the_same_message_is_taken_over(
    redis_url: str, monkeypatch
) -> None:
    monkeypatch.setitem(
        liveness.SELF, "worker", ""
    )  # no worker: an in-process one an earlier test started never beat
    claimed = liveness.owner("job-s-split")  # this very process, alive: only the message tells
    assert liveness.owner_dead(claimed, "job-s-split")
    assert not liveness.owner_dead(claimed, "job-s-split-dup")


def test_a_second_chain_of_a_done_job_sends_nothing(redis_url: str) -> None:
    from pagefleet.tasks import chords
    from pagefleet.workers.split.pages import SplitOutcome

    jobs.update("job-e", state=jobs.JobState.DONE)
    outcome = SplitOutcome("job-e", page_count=3, pending={"cpu": [1, 2, 3]})
    assert chords.climb({"job_id": "job-e"}, outcome) == {
        "job_id": "job-e",
        "skipped": "already final",
    }
    assert jobs.get("job-e")["state"] == "done"


def test_the_watchdog_marks_a_collected_job_done_instead_of_redoing_it(
    redis_url: str, tmp_path
) -> None:
    """Past its split, its manifest gone (its collect removed it), report.json stored: done, not
    every page re-sent."""
    from pagefleet.workers import watchdog
    from pagefleet.workers.settings import get_settings
    from pagefleet.workers.store.storage import open_storage

    spec = {
        "job_id": "job-c",
        "source": "/nonexistent.pdf",
        "filename": "x.pdf",
        "storage": tmp_path.as_uri(),
        "artifact_prefix": "out/x",
        "options": {},
    }
    assert job_runs.start_run(spec, force=False, stale_after_s=60) == "started"
    jobs.update("job-c", state=jobs.JobState.COLLECTING, pages=3)
    open_storage(spec["storage"], get_settings()).put_json(
        "out/x/report.json", {"status": "accepted"}
    )
    assert watchdog.sweep(deadline_s=0, now=time.time() + 1) == [("job-c", "artifacts found: done")]
    record = jobs.get("job-c")
    assert (
        record["state"] == "done" and record["status"] == "accepted" and jobs.dead_letters() == []
    )


def test_a_worker_back_from_an_outage_takes_no_live_peer_for_dead(
    redis_url: str, monkeypatch
) -> None:
    from kombu import Connection

    conn, message = _unacked_message(redis_url, "drill-q3")
    monkeypatch.setitem(liveness.SELF, "worker", "cpu1@host/1/a")
    liveness.hold(message.delivery_tag, "job-p3")
    jobs.client().zadd(
        liveness.WORKERS, {"cpu1@host/1/a": time.time() - 60}
    )  # its beat is as old as Redis's outage
    monkeypatch.setitem(liveness.SELF, "worker", "cpu2@host/2/b")
    restore = liveness.Restorer(lambda: Connection(redis_url))
    keeper = liveness.Keeper(restore)
    assert keeper([]) == {}  # beating again only just now: no judge of others yet
    keeper.steady_since = time.monotonic() - 31  # 31 s of beats without a gap
    assert keeper([]) == {"cpu1@host/1/a": 1}
    restore.close()
    conn.release()
