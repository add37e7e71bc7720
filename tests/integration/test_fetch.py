"""S3 sources: the size is checked with a HEAD before a byte is downloaded, and the cached copy is
evicted when the job ends (and pruned when unused)."""

from __future__ import annotations

import io
import os
import time

import pytest

from workers.errors import PdfTooLargeError
from workers.model import JobSpec
from workers.pdf.fetch import cached_path, evict, local_pdf, prune
from workers.settings import get_settings

pytestmark = pytest.mark.integration


def _job(bucket: str, key: str, max_bytes: int) -> JobSpec:
    return JobSpec(job_id=f"fetch-{max_bytes}-{time.time_ns()}", source=f"s3://{bucket}/{key}", filename=key,
                   storage="file:///tmp/unused", artifact_prefix="x", options={"max_bytes": max_bytes})


def test_oversize_object_is_refused_before_download(s3_bucket, tmp_path, monkeypatch) -> None:
    bucket, client = s3_bucket
    data = b"%PDF-1.7\n" + b"0" * 5000
    client.put_object(bucket, "big.pdf", io.BytesIO(data), len(data))
    monkeypatch.setenv("PAGEFLEET_CACHE_DIR", str(tmp_path))
    get_settings.cache_clear()
    settings = get_settings()
    job = _job(bucket, "big.pdf", 1000)
    with pytest.raises(PdfTooLargeError):
        local_pdf(job, settings)
    assert not (tmp_path / "sources").exists() or list((tmp_path / "sources").iterdir()) == []

    ok = _job(bucket, "big.pdf", 10_000)
    path = local_pdf(ok, settings)
    assert open(path, "rb").read() == data
    evict(ok.job_id, settings)
    assert not cached_path(ok.job_id, settings).exists()

    path = local_pdf(ok, settings)
    old = time.time() - 7200
    os.utime(path, (old, old))
    assert prune(settings) == 1 and not os.path.exists(path)
    get_settings.cache_clear()
