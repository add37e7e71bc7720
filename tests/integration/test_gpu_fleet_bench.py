"""bench/gpu_fleet.py on the CPU at tiny sizes: a real Redis, a split/collect worker and a gpu worker
read scanned documents one after the other, then one-page documents at once; every page climbs to the gpu queue (SigLIP routes it,
lightonocr reads it on rung gpu_ocr, the gate refuses the random model's garbage) and the gpu worker
loads each model once for the whole run. The same script runs on a GPU node (docs/benchmarks/gpu.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
pytest.importorskip("torch")
pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_fleet_bench_reads_every_page_on_the_gpu_queue_with_models_loaded_once(tmp_path: Path) -> None:
    out = tmp_path / "gpu_fleet.json"
    proc = subprocess.run(
        [sys.executable, "bench/gpu_fleet.py", "--device", "cpu", "--quick", "--docs", "3", "--pages", "3",
         "--batch", "2", "--tokens", "16", "--small", "4", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "gpu_fleet_ok=1 loads=2"
    results = json.loads(out.read_text())
    assert [d["state"] for d in results["documents"]] == ["done"] * 4
    assert results["documents"][-1]["document"] == "4 one-page documents at once"
    for document in results["documents"]:
        n = document["pages"]
        assert n == (4 if document["document"].endswith("at once") else 3)
        # routed by the random SigLIP, read by lightonocr on the gpu rung, refused by the gate
        assert document["checks"] == {"siglip2": n, "lightonocr_gpu": n, "quarantined": n}
    assert results["pool"] == "threads"  # as deployed: the gpu worker's tasks on threads
    # the exporter's counters (pagefleet_generate_*): every page read once, calls and tasks counted
    counters = results["counters"]
    assert counters["pages"] == 13 and 1 <= counters["calls"] <= 13
    assert counters["calls"] <= counters["tasks"] <= counters["pages"]
    loads = results["loads"]
    assert sorted(x["model"] for x in loads) == ["AutoModel[siglip]", "LightOnOcrForConditionalGeneration"]
    assert {x["device"] for x in loads} == {"cpu"}
    assert results["bare"]["pages"] == 3 and results["bare"]["tokens"] > 0
    assert "| same pages, engine alone (no fleet) |" in proc.stdout
