"""Running the Hebrew scan fixture through a private fleet's gpu queue with tiny models: the
environment that makes the random SigLIP route it to Hebrew, and the run itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import PrivateFleet, wait_for_job
from pagefleet.workers.settings import Options
from pagefleet.workers.store.storage import LocalStorage
from pagefleet.workers.split.submit import enqueue, spec_for_path


def gpu_env(qwen: str, siglip: str, **extra: str) -> dict[str, str]:
    return {
        "PAGEFLEET_GPU__ENABLED": "1",
        "PAGEFLEET_GPU__VLM__QWEN_MODEL": qwen,
        "PAGEFLEET_GPU__VLM__MAX_NEW_TOKENS": "24",
        "PAGEFLEET_OCR__ROUTER__SIGLIP_MODEL": siglip,
        # two labels and a threshold no margin reaches: the random model must route to Hebrew
        "PAGEFLEET_OCR__ROUTER__SIGLIP_PROMPTS": '["this is a photo of English text.", "this is a photo of Hebrew text."]',
        "PAGEFLEET_OCR__ROUTER__SIGLIP_LABELS": '["latin", "he"]',
        "PAGEFLEET_OCR__ROUTER__SIGLIP_THRESHOLD": "1.5",
        "OMP_NUM_THREADS": "1",
        **extra,
    }


def read_scan_on_gpu(
    fixtures_dir: Path, tmp_path: Path, env: dict[str, str]
) -> tuple[dict[str, str], dict[str, Any]]:
    """(job info, the page record) of image_only_hebrew_scan.pdf read by split,collect + gpu workers."""
    out = tmp_path / "out"
    with PrivateFleet(tmp_path, env, (("split,collect", 1), ("gpu", 1))):
        spec = spec_for_path(
            str(fixtures_dir / "image_only_hebrew_scan.pdf"),
            LocalStorage(out).url,
            "scan",
            Options(),
        )
        enqueue(spec)
        info = wait_for_job(spec.job_id, timeout_s=300)
    return info, json.loads((out / "scan" / "document.json").read_text())["pages"][0]
