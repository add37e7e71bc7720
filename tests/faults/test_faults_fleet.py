"""Drills on the fleet itself: Redis restarted mid-OCR (AOF on), the fleet's Redis connections going
dead mid-OCR, a worker's main process SIGKILLed mid-page, a split SIGKILLed (a one-task document, a
document of ranges, a big born-digital one), the same document submitted again and again, at once.

The recovery drills run with the default task limits, visibility timeout and job deadline
(`DEFAULT_LIMITS`) and assert that the fleet recovers within `RECOVERY_S` of the fault: through the
workers' beats and the split's take-over, not the broker's visibility timeout or the watchdog."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.faults.conftest import finish, settle, submit
from tests.support.drills import DEFAULT_LIMITS, SLOW_ENGINE_ENV, busy_child, children

pytestmark = [pytest.mark.faults, pytest.mark.integration]
RECOVERY_S = 90  # every document done within this of the fault (issue 57)
BIG_PAGES = 420  # the big born-digital document of the split drill


def _until(predicate, timeout_s: float = 60, every_s: float = 0.05):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every_s)
    raise AssertionError("condition not reached")


def test_redis_restarted_mid_ocr(drill) -> None:
    with drill(
        env_extra={**SLOW_ENGINE_ENV, **DEFAULT_LIMITS}, queues=(("split,collect", 1), ("cpu", 2))
    ) as fleet:
        ids = submit(drill, drill.docs(3, 2), pages=2)
        _until(lambda: any(busy_child(w.proc.pid) for w in fleet.workers[1:]), 60)
        fleet.redis.kill()  # a crash: SIGKILL; AOF with fsync always keeps every acknowledged write
        time.sleep(3)
        fleet.redis.start()
        took = settle(
            ids, 240
        )  # from the restart: the reconnected consumers put back what they held
    finish(drill, "redis-server restarted mid-OCR", {"settled_s": round(took, 1)})
    assert took <= RECOVERY_S


REDIS_DEAD_S = float(os.environ.get("PAGEFLEET_DRILL_REDIS_DEAD_S", "8"))
QUICK_REDIS_CHECKS = {
    "PAGEFLEET_BROKER__REDIS_SOCKET_TIMEOUT_S": "5",
    "PAGEFLEET_BROKER__REDIS_HEALTH_CHECK_S": "3",
}


def test_redis_connections_go_dead_mid_ocr(drill) -> None:
    """A failover, or a NAT or firewall that forgets the fleet's connections: Redis stays up, but
    every connection the workers and beat hold stops answering, with no RST, and new ones too
    until it passes; the old ones never answer again. A command on a dead connection fails after
    `broker.redis_socket_timeout_s` (it waited for ever), kombu drops a consumer's dead BRPOP
    after its health check, and the work goes on over new connections."""
    with drill(
        env_extra={**SLOW_ENGINE_ENV, **QUICK_REDIS_CHECKS},
        queues=(("split,collect", 1), ("cpu", 2)),
        redis_proxy=True,
    ) as fleet:
        ids = submit(drill, drill.docs(3, 2), pages=2)
        _until(lambda: any(busy_child(w.proc.pid) for w in fleet.workers[1:]), 60)
        fleet.redis_proxy.stall()
        time.sleep(REDIS_DEAD_S)
        fleet.redis_proxy.restore()
        took = settle(ids, 240)
    finish(
        drill,
        "Redis connections go dead mid-OCR",
        {"outage_s": REDIS_DEAD_S, "settled_s": round(took, 1)},
    )


def test_worker_main_process_sigkilled(drill) -> None:
    with drill(
        env_extra={**SLOW_ENGINE_ENV, **DEFAULT_LIMITS},
        queues=(("split,collect", 1), ("cpu", 1), ("cpu", 1)),
    ) as fleet:
        ids = submit(drill, drill.docs(2, 2), pages=2)
        victim = _until(
            lambda: next((w for w in fleet.workers[1:] if busy_child(w.proc.pid)), None), 60
        )
        os.kill(
            victim.proc.pid, signal.SIGKILL
        )  # the main process only: a peer puts its unacked pages back
        took = settle(ids, 240)
    finish(drill, "worker main process SIGKILLed", {"settled_s": round(took, 1)})
    assert took <= RECOVERY_S


def _kill_split(fleet, ids: list[str], ready) -> float:
    """SIGKILL the pool process running the split once `ready(job record)`; the seconds until every
    job is final, from the kill."""
    from pagefleet.workers.fleet import jobs

    _until(lambda: ready(jobs.get(ids[0])), 60, 0.01)
    for child in children(fleet.workers[0].proc.pid):  # the pool child running the split
        os.kill(child, signal.SIGKILL)
    return settle(ids, 240)


@pytest.mark.parametrize("pages", [3, 40], ids=["one-task", "ranges"])
def test_sigkill_during_split(drill, pages: int) -> None:
    """The redelivered split finds the dead split's lock and takes it over at once."""
    with drill(env_extra=DEFAULT_LIMITS) as fleet:
        ids = submit(drill, drill.docs(1, pages), pages=pages)
        took = _kill_split(fleet, ids, lambda record: record.get("state") == "splitting")
    finish(drill, f"SIGKILL during split ({pages} pages)", {"settled_s": round(took, 1)})
    assert took <= RECOVERY_S


def test_sigkill_during_a_big_documents_split(drill) -> None:
    """Killed once its range chord is out: the take-over sends no second chain, the one chain
    collects once, and nothing is dead-lettered."""
    with drill(env_extra=DEFAULT_LIMITS, queues=(("split,collect", 1), ("cpu", 2))) as fleet:
        ids = submit(
            drill, drill.docs(1, BIG_PAGES), pages=BIG_PAGES, options={}
        )  # born-digital: the text layer
        took = _kill_split(fleet, ids, lambda record: record.get("ranges:0"))
    tally = finish(drill, f"SIGKILL during a {BIG_PAGES}-page split", {"settled_s": round(took, 1)})
    assert took <= RECOVERY_S
    assert tally["dead_lettered"] == 0 and not [
        d for d in fleet.snapshot["dead"] if d.get("job_id") == ids[0]
    ]
    assert fleet.snapshot["jobs"][ids[0]]["state"] == "done"


def test_same_document_four_times_one_after_another(drill) -> None:
    from pagefleet.workers.fleet import jobs

    with drill():
        doc = drill.docs(1, 2)
        ids = submit(drill, doc, pages=2)
        settle(ids, 120)
        first = drill.ledger.client.stat_object(drill.bucket, f"out/{doc[0].stem}/document.json")
        run = jobs.get(ids[0])["run"]
        for _ in range(3):
            assert submit(drill, doc, pages=2) == ids  # the same job
            settle(ids, 120)
        again = drill.ledger.client.stat_object(drill.bucket, f"out/{doc[0].stem}/document.json")
        assert jobs.get(ids[0])["run"] == run and again.etag == first.etag  # not redone
        assert jobs.get(ids[0])["state"] == "done"
    finish(drill, "same document submitted 4 times, one after another", {"submissions": 4})


def test_same_document_twice_at_once(drill) -> None:
    from pagefleet.workers.fleet import jobs
    from pagefleet.workers.app import send

    with drill(queues=(("split,collect", 2), ("cpu", 2))):
        doc = drill.docs(1, 3)
        ids = submit(drill, doc, pages=3)
        assert submit(drill, doc, pages=3) == ids  # shares the run under way
        spec = jobs.get(ids[0])["spec"]
        import json

        # and a duplicated split message, as a redelivery or a second producer would make
        send("pagefleet.split", [json.loads(spec)], queue="split", task_id=f"{ids[0]}-split-dup")
        settle(ids, 120)
        time.sleep(2)  # let a late duplicate run, if there were one
        deliveries = jobs.client().hgetall(f"pagefleet:attempts:{ids[0]}")
    assert {k: v for k, v in deliveries.items() if ":" not in k} == {"1": "1", "2": "1", "3": "1"}
    finish(drill, "same document submitted twice at once", {"submissions": 3})
