"""Getting a job's source PDF onto the worker's disk: a local path as is, an S3 object downloaded
once per worker into a cache keyed by job (sources are immutable per job id).

One GET a source (one round trip: a small upload's fetch was three — our HEAD, and minio's
`fget_object` a HEAD of its own before its GET): the response's headers are checked before a byte
of its body is read — an object over the job's `max_bytes` is refused (`pdf_too_large`) without
filling the worker's disk (the body is counted too, should a length lie), and the ETag the event
named is sent as If-Match, so an object overwritten since is `source_changed`, and one that is gone
(deleted, never written, its version or bucket removed) is `source_missing`. Cached
copies are evicted when their job finishes (`evict`) and, on workers that never see the end of a
job (OCR workers), once they have not been used for `CACHE_MAX_IDLE_S` (`prune`, run at each
download).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from pagefleet.workers.errors import (
    PdfTooLargeError,
    SourceChangedError,
    SourceMissingError,
    StorageError,
)
from pagefleet.workers.model import JobSpec
from pagefleet.workers.settings import Settings
from pagefleet.workers.store.storage import ObjectChanged, S3Storage
from pagefleet.workers.store.uri import is_s3, split_s3_uri

CACHE_MAX_IDLE_S = 3600.0
_CHUNK = 256 * 1024


def _cache(settings: Settings) -> Path:
    return Path(settings.storage.cache_dir) / "sources"


def cached_path(job_id: str, settings: Settings) -> Path:
    return _cache(settings) / f"{job_id}.pdf"


def local_pdf(job: JobSpec, settings: Settings) -> str:
    if not is_s3(job.source):
        return job.source
    target = cached_path(job.job_id, settings)
    if target.exists():
        os.utime(target)  # still in use: keep it out of `prune`
        return str(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    prune(settings)
    bucket, key = split_s3_uri(job.source)
    store = S3Storage(bucket, "", settings)
    limit = int((job.options or {}).get("max_bytes") or 0)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        # the exact version the event named; else only while the object has the event's ETag
        with store.open_object(
            key, version_id=job.version_id, etag=None if job.version_id else job.etag
        ) as body:
            _save(body, tmp, limit, job.filename)
        tmp.replace(target)
    except ObjectChanged:
        raise _changed(job, store, key) from None
    except KeyError:
        raise missing(job.filename, job.version_id) from None
    finally:
        tmp.unlink(missing_ok=True)
    return str(target)


def missing(filename: str, version_id: str | None = None) -> SourceMissingError:
    """The error of a source that does not exist (the message names the file, never the bucket)."""
    what = f"version {version_id[:16]} of {filename}" if version_id else filename
    return SourceMissingError(f"{what} does not exist (deleted, or never written)")


def _too_large(filename: str, size: int, limit: int) -> PdfTooLargeError:
    return PdfTooLargeError(f"{filename} is {size} bytes; the limit is {limit}")


def _save(body: Any, tmp: Path, limit: int, filename: str) -> None:
    """The response's body into `tmp`, refused by its Content-Length before a byte is read (and
    by the bytes counted, should the length be missing or lie)."""
    declared = body.headers.get("Content-Length")
    if limit and declared and declared.isdigit() and int(declared) > limit:
        raise _too_large(filename, int(declared), limit)
    written = 0
    with open(tmp, "wb") as out:
        for chunk in body.stream(_CHUNK):
            written += len(chunk)
            if limit and written > limit:
                raise _too_large(filename, written, limit)
            out.write(chunk)


def _changed(job: JobSpec, store: S3Storage, key: str) -> SourceChangedError:
    """The If-Match failed: the object was overwritten after its event (its ETag now, where a HEAD
    can still tell it, for the message)."""
    try:
        now = (store.stat(key)[1] or "?")[:12]
    except (KeyError, StorageError):
        now = "?"
    return SourceChangedError(
        f"{job.filename} was overwritten after its event (ETag {(job.etag or '')[:12]}…, now "
        f"{now}…); the newer upload is its own job"
    )


def evict(job_id: str, settings: Settings) -> None:
    """The job is finished: its cached source (if this worker has one) is no longer needed."""
    cached_path(job_id, settings).unlink(missing_ok=True)


def prune(
    settings: Settings, max_idle_s: float = CACHE_MAX_IDLE_S, now: float | None = None
) -> int:
    """Remove cached sources (and stale partial downloads) unused for `max_idle_s`."""
    now = time.time() if now is None else now
    removed = 0
    folder = _cache(settings)
    if not folder.is_dir():
        return 0
    for path in folder.iterdir():
        try:
            if now - path.stat().st_mtime > max_idle_s:
                path.unlink()
                removed += 1
        except FileNotFoundError:
            continue
    return removed
