"""Model provisioning without a network: a manifest written for model folders, a pull from a
volume (`file://`, how a PVC is used), verification, and the reasons engines give for a model the
models directory does not hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pagefleet.workers.cli.main import main
from pagefleet.workers.cli.models import ModelPullError, Source, pull, verify
from pagefleet.workers.engines.hf import resolve, weights_present
from pagefleet.workers.engines.models_store import MANIFEST, PULLED_MARK


def _model(root: Path, model_id: str) -> None:
    base = root / model_id
    (base / "sub").mkdir(parents=True)
    (base / "config.json").write_text('{"model_type": "qwen2_5_vl"}')
    (base / "model.safetensors").write_bytes(b"\0weights" * 100)
    (base / "sub" / "tokenizer.json").write_text("{}")


@pytest.fixture
def settings_env(monkeypatch: pytest.MonkeyPatch):
    from pagefleet.workers.settings import get_settings

    get_settings.cache_clear()
    yield monkeypatch
    get_settings.cache_clear()


def test_manifest_pull_from_a_volume_and_verify(tmp_path: Path) -> None:
    volume, models = tmp_path / "pvc", tmp_path / "models"
    _model(volume, "org/one")
    _model(volume, "org/two")
    assert main(["models", "manifest", str(volume), "org/one", "org/two"]) == 0
    manifest = json.loads((volume / MANIFEST).read_text())
    assert sorted(manifest["models"]["org/one"]["files"]) == [
        "config.json",
        "model.safetensors",
        "sub/tokenizer.json",
    ]
    assert main(["models", "pull", "--from", f"file://{volume}", "--to", str(models)]) == 0
    assert (models / "org/two/sub/tokenizer.json").read_text() == "{}" and (
        models / "org/one" / PULLED_MARK
    ).is_file()
    assert json.loads((models / MANIFEST).read_text())["source"] == f"file://{volume}"
    assert pull(Source(f"file://{volume}"), models) == {"org/one": 0, "org/two": 0}, (
        "verified files are kept"
    )
    assert verify(models) == [] and main(["models", "verify", str(models)]) == 0
    (models / "org/one/model.safetensors").write_bytes(b"tampered")
    assert verify(models) == ["org/one/model.safetensors: 8 bytes, the manifest says 800"]
    assert main(["models", "verify", str(models)]) == 1
    (volume / "org/two/config.json").write_text(
        "{}"
    )  # the source changed after its manifest was written
    with pytest.raises(ModelPullError, match="sha256"):
        pull(Source(f"file://{volume}"), tmp_path / "fresh")


def test_unsafe_or_unknown_sources_are_refused(tmp_path: Path) -> None:
    (tmp_path / MANIFEST).write_text(
        json.dumps({"schema_version": 1, "models": {"../escape": {"files": {}}}})
    )
    with pytest.raises(ModelPullError, match="unsafe path"):
        pull(Source(f"file://{tmp_path}"), tmp_path / "out")
    with pytest.raises(ModelPullError, match="unknown model source"):
        Source("http://example.invalid/models")
    with pytest.raises(ModelPullError, match="needs --manifest"):
        Source("hf")


def test_engines_say_why_a_model_is_missing(
    tmp_path: Path, settings_env: pytest.MonkeyPatch
) -> None:
    models = tmp_path / "models"
    settings_env.setenv("PAGEFLEET_OCR__MODELS__DIR", str(models))
    present, why = weights_present("rednote-hilab/dots.ocr")
    assert not present and "no models pulled" in why
    volume = tmp_path / "pvc"
    _model(volume, "org/one")
    main(["models", "manifest", str(volume), "org/one"])
    pull(Source(f"file://{volume}"), models)
    assert weights_present("org/one")[0] and resolve("org/one") == str(models / "org/one")
    present, why = weights_present("rednote-hilab/dots.ocr")
    assert not present and "not in the model manifest" in why and "org/one" in why
    (models / "org/one" / PULLED_MARK).unlink()
    present, why = weights_present("org/one")
    assert not present and "not pulled completely" in why


def test_quick_verify_checks_a_read_only_volume_without_hashing(tmp_path: Path) -> None:
    """What a GPU pod's initContainer runs: a missing file, a wrong size or an unfinished pull fail
    it; it trusts the checksums the pull verified (a same-size change passes --quick, not a full verify)."""
    volume, models = tmp_path / "pvc", tmp_path / "models"
    _model(volume, "org/one")
    main(["models", "manifest", str(volume), "org/one"])
    with pytest.raises(ModelPullError, match="nothing was pulled"):
        verify(models)
    assert main(["models", "verify", "--quick", str(models)]) != 0
    pull(Source(f"file://{volume}"), models)
    assert (
        verify(models, quick=True) == [] and main(["models", "verify", "--quick", str(models)]) == 0
    )
    weights = models / "org/one/model.safetensors"
    weights.write_bytes(weights.read_bytes()[::-1])
    assert verify(models, quick=True) == [] and verify(models) == [
        "org/one/model.safetensors: checksum mismatch"
    ]
    weights.write_bytes(b"short")
    assert verify(models, quick=True) == [
        "org/one/model.safetensors: 5 bytes, the manifest says 800"
    ]
    (models / "org/one/sub/tokenizer.json").unlink()
    (models / "org/one" / PULLED_MARK).unlink()
    assert verify(models, quick=True)[:2] == [
        "org/one: not pulled completely (no .pagefleet-pulled)",
        "org/one/model.safetensors: 5 bytes, the manifest says 800",
    ]
    assert "org/one/sub/tokenizer.json: missing" in verify(models, quick=True)


def _hf_cache(hf_home: Path, model_id: str, files: Path) -> None:
    """The Hugging Face hub cache as `hf_hub_download` leaves it: blobs, a snapshot per commit, refs/main."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = hf_home / "hub" / f"models--{model_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    for path in sorted(files.rglob("*")):
        if path.is_file() and path.name != PULLED_MARK:
            target = repo / "snapshots" / commit / path.relative_to(files)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())


def test_pull_from_the_hf_hub_runs_offline_from_its_cache(tmp_path: Path) -> None:
    """`--from hf` goes through huggingface_hub's own download (no network here: HF_HUB_OFFLINE and
    a cache the test wrote), then the same checksums as any source: a cached file that differs from
    the manifest fails the pull."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    volume, models, hf_home = tmp_path / "weights", tmp_path / "models", tmp_path / "hf"
    _model(volume, "org/one")
    main(["models", "manifest", str(volume), "org/one"])
    _hf_cache(hf_home, "org/one", volume / "org/one")
    env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    argv = [
        sys.executable,
        "-m",
        "pagefleet.workers.cli.main",
        "models",
        "pull",
        "--from",
        "hf",
        "--manifest",
        str(volume / MANIFEST),
        "--to",
        str(models),
    ]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (models / "org/one/sub/tokenizer.json").read_text() == "{}" and verify(models) == []
    assert json.loads((models / MANIFEST).read_text())["source"] == "hf"
    snapshot = next((hf_home / "hub" / "models--org--one" / "snapshots").iterdir())
    (snapshot / "config.json").write_text('{"model_type": "changed"}')
    again = subprocess.run(
        [*argv[:-1], str(tmp_path / "fresh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert again.returncode != 0 and "sha256" in again.stdout + again.stderr
