"""`pagefleet models`: provision model weights the way operators do, before a GPU worker starts.

    pagefleet models pull --from s3://bucket/prefix --to /models    # the models-pull Job (k8s), models-init (compose)
    pagefleet models pull --from file:///mnt/models-pvc --to /models  # a volume somebody filled once
    pagefleet models pull --from hf --manifest manifest.json --to /models   # sites with internet: the HF hub
    pagefleet models manifest /models ID [ID ...]                    # write DIR/manifest.json for an upload
    pagefleet models verify /models                                  # re-check every file's sha256
    pagefleet models verify --quick /models                          # sizes and marks: a GPU pod's initContainer

The source holds `manifest.json` (model ids + every file's sha256 and size; see
pagefleet/workers/engines/models_store.py) and `<model id>/<file>` for each entry. Every file is verified
after download and renamed into place only when its checksum matches; files already present with
the right checksum are kept (a PVC survives pod restarts), so a pull is cheap the second time.
A checksum mismatch or a missing file fails the pull (exit 1): the worker never starts on
weights nobody vouched for. Engines then resolve model ids under PAGEFLEET_OCR__MODELS__DIR.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

from pagefleet.workers.engines.models_store import (
    MANIFEST,
    PULLED_MARK,
    SCHEMA_VERSION,
    build_manifest,
    sha256_of,
)
from pagefleet.workers.errors import PagefleetError, StorageError
from pagefleet.workers.store.uri import file_path, is_file_url, is_storage_url, s3_prefix


class ModelPullError(PagefleetError):
    """A model could not be provisioned: missing file, wrong checksum, bad manifest."""

    code = "model_pull_failed"


def _safe(relative: str) -> str:
    parts = relative.split("/")
    if relative.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ModelPullError(f"unsafe path in the manifest: {relative!r}")
    return relative


class Source:
    """Where models come from: `s3://bucket/prefix`, `file:///dir`, or `hf` (the Hugging Face hub)."""

    def __init__(self, url: str, manifest_path: str | None = None) -> None:
        self.url = url.rstrip("/")
        self.manifest_path = manifest_path
        if self.url == "hf" and not manifest_path:
            raise ModelPullError(
                "--from hf needs --manifest (the model ids and checksums to trust)"
            )
        if not (self.url == "hf" or is_storage_url(self.url)):
            raise ModelPullError(
                f"unknown model source {url!r}: use s3://bucket/prefix, file:///dir or hf"
            )

    def manifest(self) -> dict[str, Any]:
        if self.manifest_path:
            text = Path(self.manifest_path).read_text(encoding="utf-8")
        elif is_file_url(self.url):
            text = (file_path(self.url) / MANIFEST).read_text(encoding="utf-8")
        else:
            from pagefleet.workers.store.storage import open_storage

            try:
                text = open_storage(self.url).get_bytes(MANIFEST).decode("utf-8")
            except KeyError as exc:
                raise ModelPullError(f"{self.url} has no {MANIFEST}") from exc
        try:
            manifest = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ModelPullError(f"{MANIFEST} of {self.url} is not JSON: {exc.msg}") from exc
        if manifest.get("schema_version") != SCHEMA_VERSION or not isinstance(
            manifest.get("models"), dict
        ):
            raise ModelPullError(
                f"{MANIFEST} of {self.url}: expected schema_version {SCHEMA_VERSION} and a models map"
            )
        return manifest

    def fetch(self, model_id: str, relative: str, target: Path) -> None:
        if self.url == "hf":
            from huggingface_hub import hf_hub_download

            shutil.copyfile(hf_hub_download(model_id, relative), target)
        elif is_file_url(self.url):
            shutil.copyfile(file_path(self.url) / model_id / relative, target)
        else:
            from pagefleet.workers.store.storage import S3Storage

            bucket, prefix = s3_prefix(self.url)
            S3Storage(bucket, prefix).download(f"{model_id}/{relative}", str(target))


def _pull_file(
    source: Source, model_id: str, relative: str, meta: dict[str, Any], dest: Path
) -> bool:
    """Fetch one file unless it is already there and verified. True when it was fetched."""
    target = dest / _safe(relative)
    if (
        target.is_file()
        and target.stat().st_size == meta.get("size", target.stat().st_size)
        and sha256_of(target) == meta["sha256"]
    ):
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.part")
    try:
        source.fetch(model_id, relative, tmp)
    except (KeyError, FileNotFoundError, OSError, StorageError) as exc:
        raise ModelPullError(
            f"{model_id}/{relative}: cannot fetch from {source.url}: {exc}"
        ) from exc
    digest = sha256_of(tmp)
    if digest != meta["sha256"]:
        tmp.unlink(missing_ok=True)
        raise ModelPullError(
            f"{model_id}/{relative}: sha256 {digest[:12]}… is not the manifest's {meta['sha256'][:12]}…"
        )
    tmp.replace(target)
    return True


def pull(source: Source, root: Path) -> dict[str, int]:
    """Provision every model of the source's manifest under `root`. Returns files fetched per model."""
    manifest = source.manifest()
    fetched: dict[str, int] = {}
    for model_id, entry in sorted(manifest["models"].items()):
        dest = root / _safe(model_id)
        (dest / PULLED_MARK).unlink(missing_ok=True)
        fetched[model_id] = sum(
            _pull_file(source, model_id, rel, meta, dest) for rel, meta in entry["files"].items()
        )
        (dest / PULLED_MARK).write_text(json.dumps(entry, sort_keys=True), encoding="utf-8")
    pulled = {**manifest, "source": source.url}
    (root / MANIFEST).write_text(json.dumps(pulled, indent=1, sort_keys=True), encoding="utf-8")
    return fetched


def verify(root: Path, quick: bool = False) -> list[str]:
    """Problems with the pulled models under `root` (empty: every file matches the manifest).
    `quick` checks presence, sizes and each model's completion mark instead of every sha256: what a
    GPU pod's initContainer runs against a read-only volume that a pull already verified."""
    try:
        manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ModelPullError(
            f"no {MANIFEST} in {root}: nothing was pulled there (run `pagefleet models pull`)"
        ) from exc
    except json.JSONDecodeError as exc:
        raise ModelPullError(f"{root / MANIFEST} is not JSON: {exc.msg}") from exc
    problems = []
    for model_id, entry in sorted(manifest["models"].items()):
        if not (root / _safe(model_id) / PULLED_MARK).is_file():
            problems.append(f"{model_id}: not pulled completely (no {PULLED_MARK})")
        for relative, meta in sorted(entry["files"].items()):
            path = root / model_id / _safe(relative)
            if not path.is_file():
                problems.append(f"{model_id}/{relative}: missing")
            elif path.stat().st_size != meta.get("size", path.stat().st_size):
                problems.append(
                    f"{model_id}/{relative}: {path.stat().st_size} bytes, the manifest says {meta['size']}"
                )
            elif not quick and sha256_of(path) != meta["sha256"]:
                problems.append(f"{model_id}/{relative}: checksum mismatch")
    return problems


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "models", help="provision model weights (pull with checksums, write or verify a manifest)"
    )
    verbs = p.add_subparsers(dest="models_command", required=True)
    pull_p = verbs.add_parser("pull", help="download and verify every model of a manifest")
    pull_p.add_argument(
        "--from",
        dest="source",
        help="s3://bucket/prefix, file:///dir or hf (default: PAGEFLEET_OCR__MODELS__FROM_URL)",
    )
    pull_p.add_argument(
        "--to", dest="target", help="models directory (default: PAGEFLEET_OCR__MODELS__DIR)"
    )
    pull_p.add_argument(
        "--manifest",
        help="a local manifest.json to trust instead of the source's (required for hf)",
    )
    man = verbs.add_parser(
        "manifest", help="write DIR/manifest.json for model directories DIR/<id>/"
    )
    man.add_argument("root", help="directory holding one folder per model id")
    man.add_argument(
        "ids",
        nargs="+",
        metavar="ID",
        help="model ids (folders under ROOT), e.g. Qwen/Qwen2.5-VL-7B-Instruct",
    )
    ver = verbs.add_parser("verify", help="re-check the sha256 of every pulled file")
    ver.add_argument(
        "root", nargs="?", help="models directory (default: PAGEFLEET_OCR__MODELS__DIR)"
    )
    ver.add_argument(
        "--quick",
        action="store_true",
        help="presence, sizes and completion marks only, no checksums (a read-only volume a pull verified)",
    )
    p.set_defaults(handler=cmd_models)


def cmd_models(args: argparse.Namespace, console: Any) -> int:
    from pagefleet.workers.settings import get_settings

    settings = get_settings().ocr.models
    if args.models_command == "manifest":
        root = Path(args.root)
        (root / MANIFEST).write_text(
            json.dumps(build_manifest(root, args.ids), indent=1, sort_keys=True), encoding="utf-8"
        )
        console.print(
            f"pagefleet models: wrote {root / MANIFEST} ({len(args.ids)} model(s))", markup=False
        )
        return 0
    root_text = getattr(args, "target", None) or getattr(args, "root", None) or settings.dir
    if not root_text:
        raise ModelPullError("no models directory: pass --to DIR or set PAGEFLEET_OCR__MODELS__DIR")
    root = Path(root_text)
    if args.models_command == "verify":
        problems = verify(root, quick=args.quick)
        for problem in problems:
            console.print(f"pagefleet models: {problem}", markup=False)
        if not problems:
            console.print(
                f"pagefleet models: every file under {root} matches its manifest", markup=False
            )
        return 1 if problems else 0
    source_url = args.source or settings.from_url
    if not source_url:
        raise ModelPullError(
            "no source: pass --from s3://bucket/prefix (or set PAGEFLEET_OCR__MODELS__FROM_URL)"
        )
    root.mkdir(parents=True, exist_ok=True)
    fetched = pull(Source(source_url, args.manifest), root)
    for model_id, count in fetched.items():
        console.print(
            f"pagefleet models: {model_id}: {count} file(s) fetched, all verified", markup=False
        )
    return 0
