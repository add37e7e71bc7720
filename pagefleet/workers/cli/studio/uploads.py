"""Uploads from the studio: size-capped, validated like every other input, submitted to the fleet.

bytes (streamed, capped: pdf_too_large) → a private temp file → `local_source` + `inspect`
(empty_input, unsupported_type, invalid_pdf, encrypted_pdf, zero_pages, too_many_pages in the
sandbox) → kept beside the artifacts (`OUT/.pagefleet/uploads/<sha256>/<name>`, or
`<prefix>/.pagefleet/uploads/…` on S3, so the page images can be rendered later) → a job spec
→ enqueued on `--broker`, or on the embedded default fleet (started on the first upload,
stopped with the studio). Progress comes from the job's state in Redis.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pagefleet.workers.cli.studio.config import StudioSettings
from pagefleet.workers.cli.studio.library import Library
from pagefleet.workers.errors import PdfTooLargeError
from pagefleet.workers.model import JobSpec
from pagefleet.workers.pdf.source import inspect, local_source
from pagefleet.workers.settings import get_settings
from pagefleet.workers.store.uri import split_s3_uri

_UNSAFE = re.compile(r"[^\w .()+\-]+")
UPLOADS = ".pagefleet/uploads"


def safe_filename(name: str) -> str:
    """The last path component, without control or shell-special characters, at most 120 chars."""
    base = re.split(r"[\\/]", name or "")[-1]
    base = _UNSAFE.sub("_", base).strip(" ._") or "upload.pdf"
    stem, dot, ext = base.rpartition(".")
    if not dot:
        stem, ext = base, "pdf"
    return f"{stem[:110]}.{ext[:8]}"


async def receive(chunks: AsyncIterator[bytes], cap: int, folder: Path) -> Path:
    """Write the request body to a file in `folder`, refusing it as soon as it passes `cap`."""
    target = folder / "upload.pdf"
    size = 0
    with open(target, "wb") as handle:
        async for chunk in chunks:
            size += len(chunk)
            if size > cap:
                raise PdfTooLargeError(f"the upload is over the studio's limit of {cap} bytes")
            handle.write(chunk)
    return target


def _same_source(report: Path, sha: str) -> bool:
    try:
        return json.loads(report.read_text(encoding="utf-8"))["source"]["sha256"] == sha
    except (OSError, ValueError, KeyError, TypeError):
        return False


@dataclass
class Upload:
    job_id: str
    filename: str
    doc: str  # the document id the artifacts will appear under
    started: float


class Uploads:
    def __init__(self, library: Library, studio: StudioSettings, broker: str | None) -> None:
        self.library = library
        self.studio = studio
        self.broker = broker
        self.fleet: Any = None
        self.known: dict[str, Upload] = {}
        self._lock = threading.Lock()

    def _options(self) -> Any:
        cap = min(self.studio.options.max_bytes, self.studio.max_upload_bytes)
        return self.studio.options.model_copy(update={"max_bytes": cap})

    def validate(self, path: Path, filename: str) -> str:
        """Every check the split task makes, before anything is stored; returns the sha256."""
        options = self._options()
        source = local_source(str(path), options)
        inspect(source, options, get_settings())
        return source.sha256

    def _stem(self, root: Path, filename: str, sha: str) -> str:
        base = Path(filename).stem or "upload"
        for n in range(1, 1000):
            stem = base if n == 1 else f"{base}-{n}"
            if not (root / stem).exists() or _same_source(root / stem / "report.json", sha):
                return stem
        return f"{base}-{sha[:12]}"

    def _spec(self, path: Path, filename: str, sha: str) -> JobSpec:
        from pagefleet.workers.split.submit import spec_for_object, spec_for_path

        storage = self.library.storage
        if storage.local_root is not None:
            kept = storage.local_root / UPLOADS / sha / filename
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, kept)
            stem = self._stem(storage.local_root, filename, sha)
            return spec_for_path(str(kept), storage.url, stem, self._options())
        key = f"{UPLOADS}/{sha}/{filename}"
        storage.put_bytes(key, path.read_bytes(), "application/pdf")
        return spec_for_object(
            *split_s3_uri(f"{storage.url}/{key}"),
            storage.url,
            self._options(),
            size=path.stat().st_size,
            prefix_template="artifacts/{sha256}",
        )

    def _connect(self) -> None:
        from pagefleet.workers.app import use_broker

        with self._lock:
            if self.broker:
                use_broker(self.broker)
            elif self.fleet is None:
                from pagefleet.workers.cli.embedded import EmbeddedFleet

                logdir = (
                    (self.library.local_root or Path(get_settings().storage.cache_dir))
                    / ".pagefleet"
                    / "logs"
                )
                fleet = EmbeddedFleet(broker_url=None, cpu_workers=1, gpu=False, logdir=logdir)
                fleet.__enter__()
                self.fleet = fleet
                use_broker(fleet.broker_url or "")

    def submit(self, path: Path, name: str) -> Upload:
        """Validate, keep the source, enqueue; typed errors (InputError, BrokerUnavailable) propagate."""
        from pagefleet.workers.split.submit import enqueue

        filename = safe_filename(name)
        sha = self.validate(path, filename)
        spec = self._spec(path, filename, sha)
        self._connect()
        enqueue(spec)
        doc = spec.artifact_prefix.replace("{sha256}", sha)
        upload = Upload(spec.job_id, filename, doc, time.time())
        self.known[spec.job_id] = upload
        return upload

    def progress(self, job_id: str) -> dict[str, Any] | None:
        from pagefleet.workers.fleet import jobs

        upload = self.known.get(job_id)
        if upload is None:
            return None
        info = jobs.get(job_id)
        state = info.get("state", "queued")
        dead = (
            self.fleet.dead_worker()
            if self.fleet is not None and state not in jobs.TERMINAL
            else None
        )
        if dead is not None:  # the embedded fleet lost a worker: say so instead of waiting forever
            state, info = "error", {**info, "error_code": "worker_died"}
        if state in jobs.TERMINAL:
            self.library.documents(fresh=True)
        return {
            "job_id": job_id,
            "filename": upload.filename,
            "doc": upload.doc,
            "state": state,
            "pages": int(info.get("pages") or 0),
            "pages_done": int(info.get("pages_done") or 0),
            "status": info.get("status", ""),
            "error_code": info.get("error_code", ""),
            "done": state in jobs.TERMINAL,
            "seconds": round(time.time() - upload.started, 1),
        }

    def close(self) -> None:
        with self._lock:
            if self.fleet is not None:
                self.fleet.__exit__(None, None, None)
                self.fleet = None


def scratch() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="pagefleet-upload-")
