"""Prometheus metrics after a real run: two documents through a private fleet (real Redis and
workers), then `/metrics` of the exporter scraped and parsed; its page, route, rung, status and
refusal counts must be exactly that run's, as its report.json files tell them."""

from __future__ import annotations

import json
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import PrivateFleet, wait_for_job
from pagefleet.workers.fleet.asgi import AsgiServer
from pagefleet.workers.metrics import exporter_app
from pagefleet.workers.settings import QUEUES, Options
from pagefleet.workers.store.storage import LocalStorage
from pagefleet.workers.split.submit import enqueue, spec_for_path

pytestmark = pytest.mark.integration
DOCS = ("born_digital_hebrew.pdf", "image_only_hebrew_scan.pdf")


def scrape(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((sample.labels, sample.value))
    return found


def test_metrics_after_a_run_show_that_runs_counts(fixtures_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with PrivateFleet(tmp_path, {}, (("split,collect", 1), ("cpu", 1))) as fleet:
        for name in DOCS:
            spec = spec_for_path(
                str(fixtures_dir / name), LocalStorage(out).url, Path(name).stem, Options()
            )
            enqueue(spec)
            assert wait_for_job(spec.job_id)["state"] == "done"
        server = AsgiServer(exporter_app(redis.Redis.from_url(fleet.url)), "127.0.0.1", 0).start()
        try:
            metrics = scrape(server.url + "/metrics")
        finally:
            server.stop()
    reports = [json.loads((out / Path(name).stem / "report.json").read_text()) for name in DOCS]
    documents = [json.loads((out / Path(name).stem / "document.json").read_text()) for name in DOCS]
    routes = Counter(route for r in reports for route, n in r["routes"].items() for _ in range(n))
    pages = Counter()
    for labels, value in metrics["pagefleet_pages_total"]:
        pages[labels["route"]] += int(value)
    assert pages == routes and sum(pages.values()) == sum(r["page_count"] for r in reports)
    statuses = Counter(r["status"] for r in reports)
    assert {labels["status"]: int(v) for labels, v in metrics["pagefleet_documents_total"]} == dict(
        statuses
    )
    rung_share = Counter()
    for report in reports:
        for rung, share in report["share"]["rung"].items():
            rung_share[rung] += round(share * report["page_count"])
    assert (
        Counter({labels["rung"]: int(v) for labels, v in metrics["pagefleet_pages_total"]})
        == rung_share
    )
    attempts = Counter()
    for report in reports:
        for rung, entry in report["rungs"].items():
            attempts[rung] += entry["attempts"]
    assert {
        labels["rung"]: int(v) for labels, v in metrics["pagefleet_rung_seconds_count"]
    } == dict(attempts)
    refused = Counter(
        reason
        for d in documents
        for p in d["pages"]
        for a in p["attempts"]
        if not a["accepted"]
        for reason in a["reasons"]
        if not reason.startswith("engine_")
    )
    assert {
        labels["reason"]: int(v) for labels, v in metrics.get("pagefleet_gate_refusals_total", [])
    } == dict(refused)
    assert sorted(labels["queue"] for labels, _ in metrics["pagefleet_queue_depth"]) == sorted(
        QUEUES
    )


def test_a_gpu_workers_calls_reach_the_exporter(redis_server: str) -> None:
    """`pagefleet_generate_*`: what `Recorder.generate_call` buffers (a gpu worker, per VLM call)
    is flushed to the broker's hash and exported as counters by engine."""
    from pagefleet.workers.metrics import HASH, Recorder, field

    client = redis.Redis.from_url(redis_server)
    names = [field(f"generate_{n}_total", engine="lightonocr") for n in ("calls", "pages", "tasks")]
    client.hdel(HASH, *names)
    recorder = Recorder(client)
    recorder.generate_call("lightonocr", pages=8, tasks=3)
    recorder.generate_call("lightonocr", pages=2, tasks=1)
    recorder.flush()
    server = AsgiServer(exporter_app(client), "127.0.0.1", 0).start()
    try:
        metrics = scrape(server.url + "/metrics")
    finally:
        server.stop()
    got = {
        n: [(labels, v) for labels, v in metrics[f"pagefleet_generate_{n}_total"]]
        for n in ("calls", "pages", "tasks")
    }
    assert got == {
        "calls": [({"engine": "lightonocr"}, 2.0)],
        "pages": [({"engine": "lightonocr"}, 10.0)],
        "tasks": [({"engine": "lightonocr"}, 4.0)],
    }
