"""S3 sources: one GET whose headers are checked before a byte of its body is read (and whose body
is counted as it streams), and the cached copy is evicted when the job ends (and pruned when
unused)."""

from __future__ import annotations

import io
import os
import time

import pytest

from pagefleet.workers.errors import PdfTooLargeError
from pagefleet.workers.model import JobSpec
from pagefleet.workers.pdf.fetch import _save, cached_path, evict, local_pdf, prune
from pagefleet.workers.settings import get_settings

pytestmark = pytest.mark.integration


def _job(bucket: str, key: str, max_bytes: int) -> JobSpec:
    return JobSpec(
        job_id=f"fetch-{max_bytes}-{time.time_ns()}",
        source=f"s3://{bucket}/{key}",
        filename=key,
        storage="file:///tmp/unused",
        artifact_prefix="x",
        options={"max_bytes": max_bytes},
    )


def test_oversize_object_is_refused_before_download(s3_bucket, tmp_path, monkeypatch) -> None:
    bucket, client = s3_bucket
    data = b"%PDF-1.7\n" + b"0" * 5000
    client.put_object(bucket, "big.pdf", io.BytesIO(data), len(data))
    monkeypatch.setenv("PAGEFLEET_STORAGE__CACHE_DIR", str(tmp_path))
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


def test_a_body_past_the_limit_is_refused_as_it_streams_when_no_length_says_so(tmp_path) -> None:
    """A response without Content-Length (or with one that lies) is counted: the download stops at
    the limit. A stand-in for urllib3's response: headers and `stream()` are all `_save` reads."""

    class Body:
        headers: dict[str, str] = {}

        def __init__(self) -> None:
            self.read = 0

        def stream(self, amount: int):
            for _ in range(10):
                self.read += 600
                yield b"x" * 600

    body = Body()
    with pytest.raises(PdfTooLargeError, match="the limit is 1000"):
        _save(body, tmp_path / "part", 1000, "big.pdf")
    assert body.read == 1200  # stopped at the chunk that crossed the limit, not at the end
    _save(Body(), tmp_path / "whole", 0, "any.pdf")  # no limit: every byte
    assert (tmp_path / "whole").stat().st_size == 6000


def test_put_streams_stores_every_object_at_once_and_raises_a_failed_one(s3_bucket) -> None:
    """A document's artifacts go to S3 together (`S3Storage.put_streams`); every one is there when
    it returns, and a PUT that fails is raised (the job retries), not lost in its thread."""
    from pagefleet.workers.errors import StorageError
    from pagefleet.workers.store.storage import S3Storage

    bucket, _ = s3_bucket
    store = S3Storage(bucket, "docs")
    items = [
        (f"d/{name}", io.BytesIO(f"{name} ש".encode()), "text/plain; charset=utf-8")
        for name in ("document.md", "text.txt", "chunks.jsonl", "document.json")
    ]
    store.put_streams(items)
    assert [store.get_bytes(key).decode() for key, _, _ in items] == [
        f"{key[2:]} ש" for key, _, _ in items
    ]

    class Broken(io.BytesIO):
        def read(self, *args: object) -> bytes:
            raise OSError("disk went away")

    with pytest.raises(StorageError, match="disk went away"):
        store.put_streams(
            [("e/a.txt", io.BytesIO(b"a"), "text/plain"), ("e/b.txt", Broken(b"b"), "text/plain")]
        )
