"""Getting a job's source PDF onto the worker's disk: a local path as is, an S3 object downloaded
once per worker into a cache keyed by job (sources are immutable per job id)."""

from __future__ import annotations

import os
from pathlib import Path

from workers.model import JobSpec
from workers.settings import Settings
from workers.storage import S3Storage, split_s3_uri


def local_pdf(job: JobSpec, settings: Settings) -> str:
    if not job.source.startswith("s3://"):
        return job.source
    target = Path(settings.cache_dir) / "sources" / f"{job.job_id}.pdf"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        bucket, key = split_s3_uri(job.source)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        S3Storage(bucket, "", settings).download(key, str(tmp))
        tmp.replace(target)
    return str(target)
