"""The GPU rung through the fleet: pages go to the `gpu` queue, the SigLIP2 router (a tiny random
model of the real architecture, loaded by path exactly like a checkpoint) decides the script, the
Hebrew chain runs dots (no weights here: skipped, shown in engine health) → qwen (a tiny random
Qwen2.5-VL: its output is garbage and the gate must refuse it) → tesseract:heb+eng."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.gpu_fleet import gpu_env, read_scan_on_gpu

pytestmark = pytest.mark.integration
tiny = pytest.importorskip("tests.support.tiny_models")
pytest.importorskip("torch")
pytest.importorskip("transformers")


def test_gpu_queue_siglip_router_and_vlm_chain(fixtures_dir: Path, tmp_path: Path) -> None:
    qwen = tiny.save_tiny_qwen2_5_vl(str(tmp_path / "qwen"))
    siglip = tiny.save_tiny_siglip(str(tmp_path / "siglip"))
    info, page = read_scan_on_gpu(fixtures_dir, tmp_path, gpu_env(qwen, siglip))
    assert info["status"] == "accepted", info
    assert page["router"]["source"] == "siglip2" and page["router"]["script"] == "he"
    engines = [(a["engine"], a["accepted"], a["rung"]) for a in page["attempts"]]
    assert engines == [
        ("dots", False, "gpu_ocr"),
        ("qwen", False, "gpu_ocr"),
        ("tesseract:heb+eng", True, "ocr"),
    ]
    assert page["attempts"][0]["reasons"] == ["engine_unavailable"]
    assert page["attempts"][1]["reasons"], "the random model's output must be refused by the gate"
    assert "שלום עולם" in page["text"]
    report = json.loads((tmp_path / "out" / "scan" / "report.json").read_text())
    assert report["engine_health"]["dots"]["unavailable"] == 1
    assert report["share"]["router_source"] == {"siglip2": 1.0}
    assert {"4_gpu_ocr", "3_cpu_ocr"} <= set(report["rungs"])
    assert report["share"]["rung"] == {"3_cpu_ocr": 1.0}  # decided by Tesseract after both VLMs
