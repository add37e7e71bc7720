"""Model provisioning end to end: tiny random checkpoints (of the real architectures) uploaded to the
S3 server with a manifest, `pagefleet models pull` (the initContainer's command) into a models
directory, then a GPU-queue page in a real worker: SigLIP2 routes it and Qwen2.5-VL reads it from
the pulled copies, while dots — absent from the manifest — is `engine_unavailable` with the reason."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.support.gpu_fleet import gpu_env, read_scan_on_gpu
from pagefleet.workers.engines.models_store import MANIFEST, PULLED_MARK, build_manifest

pytestmark = pytest.mark.integration
tiny = pytest.importorskip("tests.support.tiny_models")
pytest.importorskip("transformers")

QWEN, SIGLIP = "tiny/qwen2.5-vl", "tiny/siglip"


def upload(client, bucket: str, prefix: str, root: Path) -> None:
    for path in sorted(root.rglob("*")):
        if path.is_file():
            client.fput_object(bucket, f"{prefix}/{path.relative_to(root)}", str(path))


def pull(source: str, target: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pagefleet.workers.cli.main",
            "models",
            "pull",
            "--from",
            source,
            "--to",
            str(target),
        ],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_pull_from_s3_then_a_gpu_page_is_read_by_the_pulled_model(
    service_env, s3_bucket, fixtures_dir: Path, tmp_path: Path
) -> None:
    bucket, client = s3_bucket
    source = tmp_path / "source"
    tiny.save_tiny_qwen2_5_vl(str(source / QWEN))
    tiny.save_tiny_siglip(str(source / SIGLIP))
    (source / MANIFEST).write_text(
        json.dumps(build_manifest(source, [QWEN, SIGLIP])), encoding="utf-8"
    )
    upload(client, bucket, "models/v1", source)

    models = tmp_path / "models"
    first = pull(f"s3://{bucket}/models/v1", models)
    assert first.returncode == 0, first.stderr
    assert (models / QWEN / PULLED_MARK).is_file() and (models / SIGLIP / "config.json").is_file()
    again = pull(f"s3://{bucket}/models/v1", models)
    assert again.returncode == 0 and "0 file(s) fetched" in again.stderr, "verified files are kept"

    client.put_object(
        bucket, f"models/v1/{QWEN}/config.json", __import__("io").BytesIO(b"{}"), 2
    )  # tampered
    bad = pull(f"s3://{bucket}/models/v1", tmp_path / "other")
    assert bad.returncode == 1 and "sha256" in bad.stderr and "Traceback" not in bad.stderr

    info, page = read_scan_on_gpu(
        fixtures_dir, tmp_path, gpu_env(QWEN, SIGLIP, PAGEFLEET_OCR__MODELS__DIR=str(models))
    )
    assert info["status"] == "accepted", info
    assert page["router"]["source"] == "siglip2" and page["router"]["script"] == "he"
    dots, qwen = page["attempts"][0], page["attempts"][1]
    assert dots["engine"] == "dots" and dots["reasons"] == ["engine_unavailable"]
    assert (
        "not in the model manifest" in dots["detail"]
        and f"s3://{bucket}/models/v1" in dots["detail"]
    ), dots
    assert qwen["engine"] == "qwen" and qwen["rung"] == "gpu_ocr", qwen
    assert qwen["reasons"] and "engine_unavailable" not in qwen["reasons"], (
        "the pulled model ran; the gate judged it"
    )
