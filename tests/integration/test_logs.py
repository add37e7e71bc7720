"""Structured logs from real workers: with PAGEFLEET_OBSERVABILITY__LOG_FORMAT=json every line a worker writes is
one JSON object, the task's lines carry its job id and page, and no INFO line names the file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import PrivateFleet, wait_for_job
from pagefleet.workers.settings import Options
from pagefleet.workers.store.storage import LocalStorage
from pagefleet.workers.split.submit import enqueue, spec_for_path

pytestmark = pytest.mark.integration
SECRET = "confidential-report-4711"


def test_json_logs_carry_job_and_page_and_never_the_file_name(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    pdf = tmp_path / f"{SECRET}.pdf"
    shutil.copyfile(fixtures_dir / "image_only_hebrew_scan.pdf", pdf)
    logdir = tmp_path / "fleet"
    logdir.mkdir()
    with PrivateFleet(
        logdir, {"PAGEFLEET_OBSERVABILITY__LOG_FORMAT": "json"}, (("split,collect", 1), ("cpu", 1))
    ):
        spec = spec_for_path(str(pdf), LocalStorage(tmp_path / "out").url, "doc", Options())
        enqueue(spec)
        assert wait_for_job(spec.job_id)["state"] == "done"
    lines = [
        line
        for path in logdir.glob("worker-*.log")
        for line in path.read_text().splitlines()
        if line.strip()
    ]
    records = [json.loads(line) for line in lines]  # every line is JSON
    assert records and all({"ts", "level", "logger", "message"} <= set(r) for r in records)
    ours = [r for r in records if r.get("job_id") == spec.job_id]
    assert any(
        r.get("page") == 1 and r["logger"].startswith("pagefleet.tasks.ocr") for r in ours
    ), ours[:5]
    assert {r["logger"] for r in ours} >= {
        "pagefleet.workers.split.job",
        "pagefleet.workers.collect.finish",
    }
    assert not [r for r in records if SECRET in json.dumps(r, ensure_ascii=False)], (
        "a file name was logged"
    )
