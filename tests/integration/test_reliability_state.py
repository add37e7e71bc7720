"""Bounded state, runs and dead letters against a real redis-server: a finished job's records
expire, the index is trimmed, a run under way is shared, a finished one is not redone unless
forced, deliveries (not retries) are counted, and `pagefleet deadletter list|replay|clear`."""

from __future__ import annotations

import json

import pytest

from pagefleet.workers.fleet import job_runs, jobs
from pagefleet.workers.cli.main import main

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def private_redis(tmp_path_factory: pytest.TempPathFactory):
    """A Redis of its own: these tests flush it, and a replayed job must reach no worker."""
    import os

    from pagefleet.workers.app import use_broker
    from pagefleet.workers.fleet.launcher import RedisServer

    server = RedisServer(tmp_path_factory.mktemp("redis-state"))
    previous = os.environ.get("PAGEFLEET_BROKER__URL")
    yield server.start()
    server.stop()
    if previous:
        use_broker(previous)
    else:
        from pagefleet.workers.settings import get_settings

        for key in ("PAGEFLEET_BROKER__URL", "PAGEFLEET_BROKER__RESULT_BACKEND"):
            os.environ.pop(key, None)
        get_settings.cache_clear()


@pytest.fixture
def redis_url(private_redis: str) -> str:
    from pagefleet.workers.app import use_broker

    use_broker(private_redis)
    jobs.client().flushdb()
    return private_redis


def _spec(job_id: str) -> dict:
    return {
        "job_id": job_id,
        "source": "/nonexistent.pdf",
        "filename": "x.pdf",
        "storage": "file:///tmp/x",
        "artifact_prefix": "x",
        "options": {},
    }


def test_runs_are_shared_and_finished_jobs_not_redone(redis_url: str) -> None:
    spec = _spec("job-a")
    assert job_runs.start_run(spec, force=False, stale_after_s=60) == "started"
    run = jobs.get("job-a")["run"]
    assert job_runs.start_run(spec, force=False, stale_after_s=60) == "running"
    jobs.update("job-a", state=jobs.JobState.DONE)
    assert job_runs.start_run(spec, force=False, stale_after_s=60) == "done"
    assert jobs.get("job-a")["run"] == run
    assert job_runs.start_run(spec, force=True, stale_after_s=60) == "started"
    assert jobs.get("job-a")["run"] != run and jobs.get("job-a")["state"] == "queued"


def test_stalled_run_is_restarted(redis_url: str) -> None:
    spec = _spec("job-b")
    job_runs.start_run(spec, force=False, stale_after_s=60)
    assert job_runs.start_run(spec, force=False, stale_after_s=0) == "started"


def test_deliveries_not_retries_are_counted_per_run(redis_url: str) -> None:
    job_runs.start_run(_spec("job-c"), force=False, stale_after_s=60)
    assert [jobs.count_delivery("job-c", 1, 0) for _ in range(3)] == [1, 2, 3]  # redeliveries
    assert jobs.count_delivery("job-c", 1, 1) == 1  # a retry is a new message
    jobs.update("job-c", state=jobs.JobState.DONE)
    job_runs.start_run(_spec("job-c"), force=True, stale_after_s=60)
    assert jobs.count_delivery("job-c", 1, 0) == 1  # a new run starts again


def test_finished_jobs_expire_and_the_index_is_trimmed(redis_url: str, monkeypatch) -> None:
    from pagefleet.workers.settings import get_settings

    monkeypatch.setenv("PAGEFLEET_BROKER__JOBS_INDEX_MAX", "100")
    get_settings.cache_clear()
    r = jobs.client()
    for i in range(130):  # finished by `update` and by `done` (a one-task document's), in turn
        job_runs.start_run(_spec(f"job-{i}"), force=False, stale_after_s=60)
        if i % 2:
            jobs.done(f"job-{i}", {"job_id": f"job-{i}"}, status="accepted")
        else:
            jobs.update(f"job-{i}", state=jobs.JobState.DONE)
    for i in (5, 6):
        assert 0 < r.ttl(f"pagefleet:job:job-{i}") <= get_settings().broker.job_record_ttl_s
    assert r.zcard("pagefleet:jobs") == 100 and r.zcard(jobs.ACTIVE) == 0
    assert (
        r.zscore("pagefleet:jobs", "job-129") is not None
        and r.zscore("pagefleet:jobs", "job-0") is None
    )
    get_settings.cache_clear()


def test_deadletter_list_replay_clear(redis_url: str, capsys, tmp_path) -> None:
    jobs.dead_letter(
        {"job_id": "job-d", "page": 2, "reason": "attempts_exhausted", "spec": _spec("job-d")}
    )
    jobs.dead_letter({"job_id": "job-e", "page": None, "reason": "deadline"})
    assert main(["deadletter", "list", "--broker", redis_url]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [d["job_id"] for d in listed] == ["job-d", "job-e"]
    assert main(["deadletter", "replay", "--job", "job-d", "--broker", redis_url]) == 0
    assert (
        jobs.get("job-d")["state"] == "queued"
        and json.loads(jobs.get("job-d")["spec"])["force"] is True
    )
    assert [d["job_id"] for d in jobs.dead_letters()] == ["job-e"]
    assert main(["deadletter", "clear", "--broker", redis_url]) == 0
    assert jobs.dead_letters() == []


def test_a_backlog_is_not_a_loss(redis_url: str) -> None:
    import time

    from pagefleet.workers.watchdog import backlogged

    r = jobs.client()
    r.set(jobs.PROGRESS, time.time())
    assert not backlogged(["cpu"], 60)  # nothing waits: a stalled job's pages are lost
    r.rpush("cpu", "a message")
    assert backlogged(["cpu"], 60)  # work waits and the fleet moves: wait for it
    r.set(jobs.PROGRESS, time.time() - 120)
    assert not backlogged(["cpu"], 60)  # the fleet stopped moving: act


def test_a_one_task_document_is_collected_in_place_on_the_record_its_split_read(
    redis_url: str, tmp_path
) -> None:
    """A document whose every page rung 1 accepts is collected by its split task: done, its notice
    names the run, and the job's record was read once (the split's own read), not again by the
    collect and the notice."""
    import pymupdf

    from pagefleet.tasks.split import split
    from pagefleet.workers.settings import Options
    from pagefleet.workers.split.submit import spec_for_path

    pdf = tmp_path / "one.pdf"
    with pymupdf.open() as doc:
        doc.new_page().insert_text(
            (72, 72), "One page of plain English text, accepted from its text layer."
        )
        doc.save(pdf)
    spec = spec_for_path(
        str(pdf), (tmp_path / "out").as_uri(), "one", Options(structure=False), force=True
    )
    body = spec.model_dump(mode="json")
    assert job_runs.start_run(body, force=True, stale_after_s=60) == "started"
    run = jobs.get(spec.job_id)["run"]
    r = jobs.client()
    notices = r.pubsub(ignore_subscribe_messages=True)
    notices.subscribe(jobs.DONE_CHANNEL)

    def reads() -> int:
        return int(r.info("commandstats").get("cmdstat_hgetall", {}).get("calls", 0))

    before = reads()
    result = split.run(body)
    assert reads() - before == 1
    assert result["accepted"] == 1 and not result["pending"]
    assert jobs.get(spec.job_id)["state"] == "done"
    notice = next(
        m for _ in range(50) if (m := notices.get_message(timeout=0.2))
    )  # the subscription's own reply first
    assert json.loads(notice["data"])["run"] == run
    assert (tmp_path / "out" / "one" / "document.json").exists()


def test_update_is_one_script_with_the_steps_claim_and_done_take(redis_url: str) -> None:
    """`jobs.update` runs the record's update as `claim` and `done` do (one `EVAL`, the module's one
    Lua function): fields alone touch neither the active set nor the progress mark; a non-final
    state joins the active set and counts as progress unless `progress=False` (the watchdog's own);
    a final one starts the TTL and leaves the active set; a later non-final one persists it again."""
    r = jobs.client()
    assert job_runs.start_run(_spec("job-u"), force=False, stale_after_s=60) == "started"
    r.zrem(jobs.ACTIVE, "job-u")
    r.delete(jobs.PROGRESS)
    r.config_resetstat()
    jobs.update("job-u", pages=3, routes={"text_layer": 3}, error_code=None)
    stats = r.info("commandstats")
    assert stats["cmdstat_eval"]["calls"] == 1 and "cmdstat_exec" not in stats
    record = jobs.get("job-u")
    assert (record["pages"], json.loads(record["routes"]), record["state"]) == (
        "3",
        {"text_layer": 3},
        "queued",
    )
    assert (
        "error_code" not in record
        and r.zscore(jobs.ACTIVE, "job-u") is None
        and r.get(jobs.PROGRESS) is None
    )

    jobs.update("job-u", state=jobs.JobState.OCR, progress=False)
    assert r.zscore(jobs.ACTIVE, "job-u") is not None and r.get(jobs.PROGRESS) is None
    jobs.update("job-u", state=jobs.JobState.COLLECTING)
    assert r.get(jobs.PROGRESS) is not None

    jobs.update("job-u", state=jobs.JobState.ERROR, error_code="x")
    assert r.ttl(jobs.job_key("job-u")) > 0 and r.zscore(jobs.ACTIVE, "job-u") is None
    assert r.zscore("pagefleet:jobs", "job-u") == pytest.approx(float(jobs.get("job-u")["updated"]))
    jobs.update("job-u", state=jobs.JobState.QUEUED, progress=False)  # the watchdog sends it again
    assert r.ttl(jobs.job_key("job-u")) == -1 and r.zscore(jobs.ACTIVE, "job-u") is not None


def test_the_split_claim_marks_the_job_in_the_same_round_trip(redis_url: str) -> None:
    """`jobs.claim` takes the lock and marks the record `splitting` (index, active set, progress)
    in one call; a settled record or a lock another owner holds is left as it was."""
    settled = (jobs.JobState.OCR, jobs.JobState.COLLECTING, *jobs.TERMINAL)
    mark = {
        "state": jobs.JobState.SPLITTING,
        "filename": "a b.pdf",
        "storage": "file:///tmp/x",
        "pages": None,
    }
    assert job_runs.start_run(_spec("job-c"), force=False, stale_after_s=60) == "started"
    r = jobs.client()
    r.delete(jobs.PROGRESS)
    record, lock = jobs.claim("job-c", "split:job-c", 60, mark=mark, unless=settled)
    assert lock is not None and record["state"] == jobs.JobState.QUEUED  # as it was found
    now = jobs.get("job-c")
    assert (now["state"], now["filename"], now["storage"]) == (
        "splitting",
        "a b.pdf",
        "file:///tmp/x",
    )
    assert "pages" not in now and float(now["updated"]) >= float(record["updated"])
    assert (
        r.zscore(jobs.ACTIVE, "job-c") is not None
        and r.zscore("pagefleet:jobs", "job-c") is not None
    )
    assert r.get(jobs.PROGRESS) is not None and r.ttl(jobs.job_key("job-c")) == -1

    again, none = jobs.claim(
        "job-c", "split:job-c", 60, mark=mark, unless=settled
    )  # the lock is held
    assert none is None and again["state"] == "splitting"
    jobs.release(lock)
    assert not jobs.locked("split:job-c")

    jobs.update("job-c", state=jobs.JobState.DONE)
    before = jobs.get("job-c")
    record, lock = jobs.claim("job-c", "split:job-c", 60, mark=mark, unless=settled)
    assert lock is not None and record["state"] == "done" and jobs.get("job-c") == before
    jobs.release(lock)


def test_done_finishes_counts_once_and_releases_only_its_own_lock_in_one_script(
    redis_url: str,
) -> None:
    """`jobs.done`: the record's last fields (state done, lists and dicts as JSON), its expiry and
    the index, the done notice, the metrics script (counted once) and the release of the caller's
    lock — one command; a lock another owner holds by then is left alone."""
    from collections import Counter

    from pagefleet.workers import metrics
    from pagefleet.workers.settings import get_settings

    r = jobs.client()
    for job_id in ("job-d", "job-e"):
        assert job_runs.start_run(_spec(job_id), force=False, stale_after_s=60) == "started"
    notices = r.pubsub(ignore_subscribe_messages=True)
    notices.subscribe(jobs.DONE_CHANNEL)
    counted = metrics.counted_once(
        "job-d",
        "accepted",
        Counter({metrics.field("pages_total", route="text_layer"): 2}),
        {"rungs": {"1_text_layer": {"attempts": 2, "seconds": 0.25}}},
    )
    lock = jobs.acquire("split:job-d", 60)
    r.config_resetstat()
    jobs.done(
        "job-d",
        {"job_id": "job-d", "status": "accepted"},
        lock=lock,
        script=(metrics.COUNT_ONCE, *counted),
        status="accepted",
        routes={"text_layer": 2},
        pages=2,
        pages_done=2,
        error_code=None,
    )
    stats = r.info("commandstats")
    assert stats["cmdstat_eval"]["calls"] == 1 and "cmdstat_exec" not in stats
    record = jobs.get("job-d")
    assert (
        record["state"],
        json.loads(record["routes"]),
        record["pages"],
        record["pages_done"],
    ) == ("done", {"text_layer": 2}, "2", "2")
    assert "error_code" not in record and float(record["updated"]) > 0
    assert 0 < r.ttl(jobs.job_key("job-d")) <= get_settings().broker.job_record_ttl_s
    assert (
        r.zscore(jobs.ACTIVE, "job-d") is None and r.zscore("pagefleet:jobs", "job-d") is not None
    )
    assert (
        r.get(jobs.PROGRESS) is not None
        and not jobs.locked("split:job-d")
        and lock.local.token is None
    )
    notice = next(m for _ in range(50) if (m := notices.get_message(timeout=0.2)))
    assert json.loads(notice["data"]) == {"job_id": "job-d", "status": "accepted"}
    totals = r.hgetall(metrics.HASH)
    assert totals[metrics.field("documents_total", status="accepted")] == "1"
    assert totals[metrics.field("pages_total", route="text_layer")] == "2"

    jobs.done(
        "job-d", {"job_id": "job-d"}, script=(metrics.COUNT_ONCE, *counted)
    )  # counted once only
    assert r.hgetall(metrics.HASH) == totals

    stale = jobs.acquire("split:job-e", 60)
    r.delete(jobs._lock_key("split:job-e"))
    other = jobs.acquire("split:job-e", 60)  # its TTL ran out and another owner took it
    jobs.done("job-e", {"job_id": "job-e"}, lock=stale, status="accepted")
    assert jobs.get("job-e")["state"] == "done" and jobs.locked("split:job-e")
    jobs.release(other)
