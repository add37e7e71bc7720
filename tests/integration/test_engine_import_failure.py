"""An engine whose library fails to import (paddle's rapidocr_onnxruntime here, shadowed by a
package that needs a missing `paddle` module, as a broken install or an image without libGL
would) must cost that engine's attempt, never the task: the page falls through to Tesseract and
the document completes, in a real worker."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import PrivateFleet, wait_for_job
from pagefleet.workers.settings import Options
from pagefleet.workers.store.storage import LocalStorage
from pagefleet.workers.split.submit import enqueue, spec_for_path

pytestmark = pytest.mark.integration


def test_engine_import_failure_is_a_refused_attempt_not_a_failed_task(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    shadow = tmp_path / "shadow" / "rapidocr_onnxruntime"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        "import paddle  # noqa: F401  (not installed)\n", encoding="utf-8"
    )
    chain = '["paddle", "tesseract:heb+eng"]'
    env = {
        "PYTHONPATH": os.pathsep.join(
            [str(shadow.parent), os.environ.get("PYTHONPATH", "")]
        ).rstrip(os.pathsep),
        "PAGEFLEET_OCR__CHAINS__CPU_HE": chain,
        "PAGEFLEET_OCR__CHAINS__CPU_DEFAULT": chain,
        "PAGEFLEET_OCR__CHAINS__CPU_LATIN": chain,
        "PAGEFLEET_LIMITS__MAX_PAGE_ATTEMPTS": "1",
    }
    out = tmp_path / "out"
    with PrivateFleet(tmp_path, env, (("split,collect", 1), ("cpu", 1))):
        spec = spec_for_path(
            str(fixtures_dir / "image_only_hebrew_scan.pdf"),
            LocalStorage(out).url,
            "doc",
            Options(),
        )
        enqueue(spec)
        info = wait_for_job(spec.job_id, timeout_s=240)
    assert info["status"] == "accepted", info
    page = json.loads((out / "doc" / "document.json").read_text())["pages"][0]
    paddle = page["attempts"][0]
    assert paddle["engine"] == "paddle" and not paddle["accepted"]
    assert paddle["reasons"] == ["engine_unavailable"] and "paddle" in paddle["detail"], paddle
    assert page["engine"] == "tesseract:heb+eng" and page["route"] == "ocr"
