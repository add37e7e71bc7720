"""`pagefleet run`, the embedded default, as a user runs it: its own redis-server and workers,
progress, artifacts, exit codes, everything stopped afterwards, a re-run served from DIR."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pagefleet.workers.cli.exitcodes import ExitCode

pytestmark = pytest.mark.integration
PAGEFLEET = str(Path(sys.executable).parent / "pagefleet")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PAGEFLEET, "run", *args], capture_output=True, text=True, timeout=600)


def _our_processes(marker: str) -> list[str]:
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in ps.splitlines() if marker in line]


def test_run_exit_codes_artifacts_and_cache(fixtures_dir: Path, tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    for name in ("born_digital_hebrew.pdf", "visual_order_hebrew.pdf"):
        shutil.copy(fixtures_dir / name, inputs / name)
    out = tmp_path / "out"
    first = _run(str(inputs), "--out", str(out), "--workers", "1")
    assert first.returncode == 0, first.stderr[-2000:]
    assert "pages per route: text_layer=1 text_layer_repaired=1" in first.stderr
    doc = json.loads((out / "visual_order_hebrew" / "document.json").read_text())
    assert doc["pages"][0]["text"].startswith("כותרת: שלום עולם")
    assert not _our_processes(str(out)), "workers or redis left running"

    again = _run(str(inputs), "--out", str(out))
    assert again.returncode == 0 and "cached" in again.stderr

    shutil.copy(fixtures_dir / "bad" / "bad_user_password.pdf", inputs / "locked.pdf")
    third = _run(str(inputs), "--out", str(out))
    assert third.returncode == ExitCode.ENCRYPTED_PDF  # the most severe outcome of the batch
    assert "outcomes: ok=2 encrypted_pdf=1; exit status 4 (encrypted_pdf)" in third.stderr
    assert json.loads((out / "locked" / "error.json").read_text())["code"] == "encrypted_pdf"


def test_run_exit_2_when_a_page_needs_review(fixtures_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = _run(
        str(fixtures_dir / "image_only_english_scan.pdf"), "--out", str(out), "--ocr", "off"
    )
    assert proc.returncode == ExitCode.REVIEW_NEEDED, proc.stderr[-2000:]
    assert "outcomes: review_needed=1; exit status 2 (review_needed)" in proc.stderr
    doc = json.loads((out / "image_only_english_scan" / "document.json").read_text())
    assert doc["status"] == "failed" and doc["pages"][0]["route"] == "failed"
    assert "text withheld" in (out / "image_only_english_scan" / "document.md").read_text()
