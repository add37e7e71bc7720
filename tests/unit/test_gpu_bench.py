"""bench/gpu_bench.py: the script runs end to end on the CPU at tiny sizes (the real router and VLM
engine code, checkpoints saved and loaded), and its batch recommendation follows the rule it states."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from bench import gpu_bench  # noqa: E402
from pagefleet.workers.engines import hf  # noqa: E402


def e2e(*pairs: tuple[int, float]) -> dict:
    return {"rows": [{"batch": b, "pages_per_s": p} for b, p in pairs]}


def vlm(*rows: tuple[int, float, float | None]) -> dict:
    out = []
    for batch, pages_per_s, peak in rows:
        row = {"batch": batch, "stopper": "idle", "pages_per_s": pages_per_s}
        out.append(
            {**row, "peak_gib": peak}
            if peak is not None
            else {"batch": batch, "stopper": "idle", "error": "oom"}
        )
    return {"rows": out}


def test_recommendation_from_the_h200_run() -> None:
    """The figures of the H200 run (docs/benchmarks/gpu.md) give the settings' defaults' reasoning."""
    results = {
        "router_e2e": e2e((1, 19.5), (8, 65.3), (16, 107.0), (32, 122.4), (64, 136.5)),
        "vlm": vlm((1, 0.06, 3.04), (4, 0.23, 5.97), (8, 0.42, 13.71), (16, 0.65, 42.35)),
    }
    assert gpu_bench.recommend(results, gpu_gib=140.4) == {
        "PAGEFLEET_OCR__ROUTER__SIGLIP_BATCH_SIZE": 32,
        "PAGEFLEET_GPU__VLM__BATCH_SIZE": 16,
    }
    # a 24 GB card: batch 16's 42 GiB does not fit, 8 is the best that does
    assert gpu_bench.recommend(results, gpu_gib=24.0)["PAGEFLEET_GPU__VLM__BATCH_SIZE"] == 8
    results["vlm"]["rows"].append({"batch": 32, "stopper": "idle", "error": "CUDA out of memory"})
    results["vlm"]["rows"].append(
        {"batch": 8, "stopper": "on", "pages_per_s": 9.9, "peak_gib": 13.7}
    )
    assert gpu_bench.recommend(results, gpu_gib=140.4)["PAGEFLEET_GPU__VLM__BATCH_SIZE"] == 16
    assert gpu_bench.recommend({}, gpu_gib=80.0) == {}


def test_quick_run_on_cpu(
    tmp_path: Path, torch_one_thread: None, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "gpu.json"
    try:
        assert (
            gpu_bench.main(
                ["--device", "cpu", "--quick", "--parts", "e2e", "vlm", "--json", str(out)]
            )
            == 0
        )
    finally:
        hf.clear_cache()
    results = json.loads(out.read_text())
    assert [r["batch"] for r in results["router_e2e"]["rows"]] == [1, 8, 16]
    assert all(
        r["labelled"] == results["router_e2e"]["pages"] for r in results["router_e2e"]["rows"]
    )
    rows = results["vlm"]["rows"]
    assert [(r["batch"], r["stopper"]) for r in rows] == [(1, "idle"), (2, "idle"), (2, "on")]
    assert all(r["tokens"] > 0 and "error" not in r for r in rows)
    assert "router end to end" in capsys.readouterr().out
