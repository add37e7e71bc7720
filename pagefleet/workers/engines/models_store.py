"""The models directory and its manifest: what `pagefleet models pull` provisions and what the
engines check before they load a checkpoint.

    manifest.json  {"schema_version": 1,
                    "models": {"<model id>": {"files": {"<relative path>": {"sha256": "…", "size": N}}}}}

A pull copies `<source>/manifest.json` and `<source>/<model id>/<file>` into
`PAGEFLEET_OCR__MODELS__DIR/<model id>/<file>`, verifies every sha256, marks each complete model with
`.pagefleet-pulled` and finally writes `PAGEFLEET_OCR__MODELS__DIR/manifest.json` (with `source`).
With a models directory configured, a model id is only as good as that directory: an id the
manifest lacks, or one pulled incompletely, is unavailable with a reason that says which.

Settings: `Settings().ocr.models` (env `PAGEFLEET_OCR__MODELS__DIR`: the directory; unset, engines use ids
as given, local directories or the Hugging Face cache; `PAGEFLEET_OCR__MODELS__FROM_URL`: the default pull
source).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

MANIFEST = "manifest.json"
PULLED_MARK = ".pagefleet-pulled"
SCHEMA_VERSION = 1


def models_dir() -> str | None:
    from pagefleet.workers.settings import get_settings

    return get_settings().ocr.models.dir or None


def sha256_of(path: Path, chunk: int = 1024 * 1024) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def build_manifest(root: Path, model_ids: list[str]) -> dict[str, Any]:
    """A manifest for model directories under `root` (`root/<id>/…`), with every file's checksum."""
    models: dict[str, Any] = {}
    for model_id in model_ids:
        base = root / model_id
        if not base.is_dir():
            raise FileNotFoundError(f"{base} is not a directory")
        files = {
            str(p.relative_to(base)): {"sha256": sha256_of(p), "size": p.stat().st_size}
            for p in sorted(base.rglob("*"))
            if p.is_file() and p.name != PULLED_MARK
        }
        models[model_id] = {"files": files}
    return {"schema_version": SCHEMA_VERSION, "models": models}


def read_manifest(root: str) -> dict[str, Any] | None:
    try:
        return json.loads((Path(root) / MANIFEST).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def model_problem(model_id: str, path: str | None) -> str | None:
    """Why `model_id` cannot be used from the models directory, or None (no directory configured,
    an absolute path, or a model pulled completely)."""
    root = models_dir()
    if not root or os.path.isabs(model_id):
        return None
    manifest = read_manifest(root)
    if manifest is None:
        return f"{model_id}: no models pulled into {root} (no {MANIFEST}): run `pagefleet models pull --from …`"
    source = manifest.get("source", "its source")
    listed = sorted(manifest.get("models") or {})
    if model_id not in listed:
        return (
            f"{model_id} is not in the model manifest pulled from {source} into {root} "
            f"(it lists: {', '.join(listed) or 'nothing'}); add it there and pull again"
        )
    if path is None or not (Path(path) / PULLED_MARK).is_file():
        return f"{model_id} is in the manifest but was not pulled completely into {root}: run `pagefleet models pull`"
    return None
