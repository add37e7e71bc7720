"""Failure drills from ../shared/docs/RELIABILITY.md, each on a private fleet (its own Redis and workers):
an engine that crashes, a page that kills its worker every time, a pool child SIGKILLed mid-page."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.conftest import PrivateFleet, wait_for_job
from tests.support.drills import busy_child
from pagefleet.workers.fleet import jobs
from pagefleet.workers.store import keys
from pagefleet.workers.settings import Options
from pagefleet.workers.store.storage import LocalStorage
from pagefleet.workers.split.submit import enqueue, spec_for_path

pytestmark = pytest.mark.integration


def _submit(pdf: Path, out: Path, stem: str = "doc") -> str:
    spec = spec_for_path(str(pdf), LocalStorage(out).url, stem, Options())
    return enqueue(spec)


def test_crashing_engine_falls_through_the_chain(fixtures_dir: Path, tmp_path: Path) -> None:
    env = {
        "PAGEFLEET_OCR__CHAINS__CPU_HE": '["crash", "tesseract:heb+eng"]',
        "PAGEFLEET_OCR__CHAINS__CPU_DEFAULT": '["crash", "tesseract:heb+ara+eng"]',
    }
    with PrivateFleet(tmp_path, env, (("split,collect", 1), ("cpu", 1))):
        job = _submit(fixtures_dir / "image_only_hebrew_scan.pdf", tmp_path / "out")
        info = wait_for_job(job)
    assert info["status"] == "accepted"
    page = json.loads((tmp_path / "out" / "doc" / "document.json").read_text())["pages"][0]
    assert page["engine"] == "tesseract:heb+eng" and "שלום עולם" in page["text"]
    crash = page["attempts"][0]
    assert (
        crash["engine"] == "crash"
        and crash["reasons"] == ["engine_crashed"]
        and not crash["accepted"]
    )
    report = json.loads((tmp_path / "out" / "doc" / "report.json").read_text())
    assert report["engine_health"]["crash"]["errors"] == 1


def test_page_that_kills_its_worker_is_capped_and_dead_lettered(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    env = {
        "PAGEFLEET_OCR__CHAINS__CPU_HE": '["die"]',
        "PAGEFLEET_OCR__CHAINS__CPU_DEFAULT": '["die"]',
        "PAGEFLEET_LIMITS__MAX_PAGE_ATTEMPTS": "2",
    }
    with PrivateFleet(tmp_path, env, (("split,collect", 1), ("cpu", 1))) as fleet:
        job = _submit(fixtures_dir / "mixed_multipage_document.pdf", tmp_path / "out")
        info = wait_for_job(job, timeout_s=240)
        dead = jobs.dead_letters()
        assert fleet.workers[1].alive(), "the worker main process must survive its children dying"
    assert info["state"] == "done" and info["status"] == "needs_review"
    doc = json.loads((tmp_path / "out" / "doc" / "document.json").read_text())
    routes = {p["number"]: p["route"] for p in doc["pages"]}
    assert routes[5] == routes[6] == "failed"  # the Hebrew scan pages (OSD → he chain → die)
    assert (
        routes[1] == "text_layer" and routes[7] == "text_layer"
    )  # the rest of the document completed
    failed = doc["pages"][5]
    assert failed["quality"]["reasons"] == ["attempts_exhausted"]
    assert {(d["job_id"], d["page"]) for d in dead} >= {(job, 5), (job, 6)}


def test_sigkill_pool_child_mid_page_requeues_once(fixtures_dir: Path, tmp_path: Path) -> None:
    with PrivateFleet(tmp_path, {}, (("split,collect", 1), ("cpu", 1))) as fleet:
        job = _submit(fixtures_dir / "image_only_hebrew_scan.pdf", tmp_path / "out")
        cpu_main = fleet.workers[1].proc.pid
        deadline, victim = time.monotonic() + 60, None
        while victim is None and time.monotonic() < deadline:
            victim = busy_child(cpu_main)
            time.sleep(0.05)
        assert victim is not None, "never saw the page being worked on"
        os.kill(victim, signal.SIGKILL)
        info = wait_for_job(job, timeout_s=180)
        deliveries = jobs.client().hget(f"pagefleet:attempts:{job}", "1")
    assert info["status"] == "accepted"
    assert deliveries == "2"  # delivered twice: the killed run and the redelivery
    out = tmp_path / "out" / "doc"
    page = json.loads((out / "document.json").read_text())["pages"][0]
    assert page["route"] == "ocr" and "שלום עולם" in page["text"]
    names = {p.name for p in out.iterdir()}
    assert {
        "document.json",
        "document.md",
        "report.json",
        "text.txt",
    } <= names and "error.json" not in names


def test_watchdog_finishes_a_job_whose_chord_never_fires(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    from pagefleet.workers.watchdog import sweep

    # no cpu worker: the OCR pages wait forever, as if their messages were lost
    with PrivateFleet(tmp_path, {}, (("split,collect", 1),)):
        job = _submit(fixtures_dir / "mixed_multipage_document.pdf", tmp_path / "out")
        deadline = time.monotonic() + 60
        while jobs.get(job).get("state") != "ocr" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sweep(deadline_s=3600) == []  # not stalled yet
        actions = [sweep(deadline_s=0, now=time.time() + 1) for _ in range(3)]
        assert [a[0][1].split(":")[0] for a in actions] == ["pages re-dispatched"] * 2 + [
            "finished with missing pages {'cpu'"
        ]
        info = wait_for_job(job, timeout_s=120)
        dead = jobs.dead_letters()
    assert info["status"] == "needs_review"
    doc = json.loads((tmp_path / "out" / "doc" / "document.json").read_text())
    missing = [p["number"] for p in doc["pages"] if p["quality"]["reasons"] == ["page_missing"]]
    assert missing == [2, 5, 6] and doc["pages"][0]["route"] == "text_layer"
    assert any(d["job_id"] == job and d["reason"] == "deadline" for d in dead)


def test_a_task_on_a_thread_keeps_its_soft_time_limit(
    fixtures_dir: Path, tmp_path: Path, service_env: dict[str, str]
) -> None:
    """A gpu worker's tasks run on threads, where Celery's soft limit cannot reach them: the task
    keeps its own (pagefleet.workers.fleet.deadline) and its pages end as a prefork task's do at the limit."""
    from concurrent.futures import ThreadPoolExecutor

    from pagefleet.tasks.ocr import _run
    from pagefleet.workers.settings import get_settings

    from pagefleet.workers.model import JobSpec
    from pagefleet.workers.split.pages import split_document

    def split(out: Path) -> dict:  # rung 1's work state stored; no OCR task is sent
        spec = spec_for_path(
            str(fixtures_dir / "image_only_hebrew_scan.pdf"),
            LocalStorage(out).url,
            "doc",
            Options(),
        )
        assert split_document(
            JobSpec.model_validate(spec.model_dump(mode="json")), get_settings()
        ).pending == {"cpu": [1]}
        return spec.model_dump(mode="json")

    on_thread, on_main = split(tmp_path / "thread"), split(tmp_path / "main")
    os.environ["PAGEFLEET_LIMITS__TASK_SOFT_TIME_LIMIT"] = (
        "0"  # passed before the first engine of the chain
    )
    get_settings.cache_clear()
    try:
        with ThreadPoolExecutor(1) as pool:
            result = pool.submit(_run, on_thread, [1]).result(timeout=120)
        read = _run(on_main, [1])  # a pool child's main thread: Celery's limits, none of its own
    finally:
        os.environ.pop("PAGEFLEET_LIMITS__TASK_SOFT_TIME_LIMIT")
        get_settings.cache_clear()
    assert result["pages"] == [{"page": 1, "route": "failed", "engine": None}]
    stored = LocalStorage(tmp_path / "thread").get_json(keys.page(on_thread["job_id"], 1))
    assert stored["quality"]["reasons"] == ["time_limit"]
    assert read["pages"][0]["route"] == "ocr"  # read by Tesseract: no deadline cut it
