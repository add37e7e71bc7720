"""Getting a job's source PDF onto the worker's disk: a local path as is, an S3 object downloaded
once per worker into a cache keyed by job (sources are immutable per job id).

The object's size is checked with a HEAD (`stat_object`) before a byte is downloaded: an object
over the job's `max_bytes` is refused (`pdf_too_large`) without filling the worker's disk. Cached
copies are evicted when their job finishes (`evict`) and, on workers that never see the end of a
job (OCR workers), once they have not been used for `CACHE_MAX_IDLE_S` (`prune`, run at each
download).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from workers.errors import PdfTooLargeError, SourceChangedError
from workers.model import JobSpec
from workers.settings import Settings
from workers.storage import S3Storage, split_s3_uri

CACHE_MAX_IDLE_S = 3600.0


def _cache(settings: Settings) -> Path:
    return Path(settings.cache_dir) / "sources"


def cached_path(job_id: str, settings: Settings) -> Path:
    return _cache(settings) / f"{job_id}.pdf"


def local_pdf(job: JobSpec, settings: Settings) -> str:
    if not job.source.startswith("s3://"):
        return job.source
    target = cached_path(job.job_id, settings)
    if target.exists():
        os.utime(target)  # still in use: keep it out of `prune`
        return str(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    prune(settings)
    bucket, key = split_s3_uri(job.source)
    store = S3Storage(bucket, "", settings)
    size, etag = store.stat(key, version_id=job.version_id)  # HEAD: the exact version the event named
    if job.etag and not job.version_id and etag and etag != job.etag.strip('"'):
        raise SourceChangedError(f"{job.filename} was overwritten after its event (ETag {job.etag[:12]}…, now "
                                 f"{etag[:12]}…); the newer upload is its own job")
    limit = int((job.options or {}).get("max_bytes") or 0)
    if limit and size > limit:
        raise PdfTooLargeError(f"{job.filename} is {size} bytes; the limit is {limit}")
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        store.download(key, str(tmp), version_id=job.version_id, etag=None if job.version_id else job.etag)
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    return str(target)


def evict(job_id: str, settings: Settings) -> None:
    """The job is finished: its cached source (if this worker has one) is no longer needed."""
    cached_path(job_id, settings).unlink(missing_ok=True)


def prune(settings: Settings, max_idle_s: float = CACHE_MAX_IDLE_S, now: float | None = None) -> int:
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
