"""Drill: the callback endpoint answers 500, or answers slowly. Documents must finish without
waiting for it; notices are retried by their own task, delivered (one Idempotency-Key per job) or
dead-lettered, never silently dropped."""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.faults.conftest import finish, settle, submit

pytestmark = [pytest.mark.faults, pytest.mark.integration]


class Endpoint:
    """/fail: always 500; /flaky: 500 twice per job, then 200; /slow: the first POST of a job takes
    longer than the client's timeout, later ones answer at once; /sleep30: every POST takes 30 s."""

    def __init__(self) -> None:
        self.seen: dict[str, list[tuple[str, str, int]]] = defaultdict(
            list
        )  # job -> (path, key, status)
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                job, key = body["job_id"], self.headers.get("Idempotency-Key", "")
                with lock:
                    earlier = len(outer.seen[job])
                status = 200
                if self.path == "/fail" or (self.path == "/flaky" and earlier < 2):
                    status = 500
                if self.path == "/slow" and earlier == 0:
                    time.sleep(4)
                if self.path == "/sleep30":
                    time.sleep(30)
                with lock:
                    outer.seen[job].append((self.path, key, status))
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_callback_endpoint_fails_or_is_slow(drill) -> None:
    from pagefleet.workers.fleet import jobs

    endpoint = Endpoint()
    with drill():
        docs = drill.docs(3, 1)
        ids = []
        for path, route in zip(docs, ("/fail", "/flaky", "/slow")):
            ids += submit(drill, [path], pages=1, callback_url=endpoint.url + route)
        took = settle(ids, 120)
        assert took < 60, "documents waited for their callbacks"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            dead = {
                d["job_id"] for d in jobs.dead_letters() if d.get("reason") == "callback_failed"
            }
            delivered = {
                j for j, calls in endpoint.seen.items() if any(s == 200 for _, _, s in calls)
            }
            if ids[0] in dead and {ids[1], ids[2]} <= delivered:
                break
            time.sleep(0.5)
        fail_calls = endpoint.seen[ids[0]]
    assert (
        ids[0] in dead and all(s == 500 for _, _, s in fail_calls) and len(fail_calls) == 4
    )  # 1 + 3 retries
    assert [s for _, _, s in endpoint.seen[ids[1]]] == [500, 500, 200]
    assert {k for _, k, _ in endpoint.seen[ids[2]]} == {ids[2]}  # a receiver can drop the duplicate
    finish(
        drill,
        "callback endpoint answers 500 / slowly",
        {
            "callbacks_delivered": len(delivered),
            "callbacks_dead_lettered": len(dead),
            "settled_s": round(took, 1),
        },
    )


def test_a_sleeping_endpoint_delays_only_its_own_notices(drill) -> None:
    """Eight jobs call back an endpoint that answers after 30 s; documents submitted after them
    (no callback) finish as fast as on an idle fleet: the POSTs wait on the notify worker's
    threads, never on the collect worker."""
    from pagefleet.workers.fleet import jobs

    endpoint = Endpoint()
    with drill():
        slow = submit(drill, drill.docs(8, 1), pages=1, callback_url=endpoint.url + "/sleep30")
        settle(slow, 120)
        time.sleep(1)  # their callbacks are in flight now
        started = time.monotonic()
        others = submit(drill, drill.docs(3, 1), pages=1)
        took = settle(others, 120)
        in_flight = sum(1 for calls in endpoint.seen.values() if calls) < len(slow)
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            dead = {
                d["job_id"] for d in jobs.dead_letters() if d.get("reason") == "callback_failed"
            }
            if set(slow) <= dead:
                break
            time.sleep(1)
        waited_s = round(time.monotonic() - started, 1)
    assert took < 20, f"documents after the slow callbacks took {took:.1f}s"
    assert in_flight, "the slow callbacks had all finished before the other documents: no drill"
    assert set(slow) <= dead, "a slow endpoint's notices must end dead-lettered, never dropped"
    finish(
        drill,
        "callback endpoint sleeps 30 s",
        {"settled_s": round(took, 1), "slow_callbacks_dead_lettered_s": waited_s},
    )
