"""The split task reads exactly the object version its bucket event named: a versionId downloads
that version even after the key was overwritten; an ETag the object no longer has is a typed
`source_changed` error (the GET's If-Match fails), and an oversized object is refused by the GET's
headers before a byte of its body is read."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from minio.commonconfig import ENABLED
from minio.versioningconfig import VersioningConfig

from pagefleet.workers.errors import PdfTooLargeError, SourceChangedError
from pagefleet.workers.pdf.fetch import local_pdf
from pagefleet.workers.settings import Options, get_settings
from pagefleet.workers.split.submit import spec_for_object

pytestmark = pytest.mark.integration


def _put(client, bucket: str, key: str, data: bytes):
    return client.put_object(
        bucket, key, io.BytesIO(data), len(data), content_type="application/pdf"
    )


def test_exact_version_and_etag(s3_bucket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bucket, client = s3_bucket
    monkeypatch.setenv("PAGEFLEET_STORAGE__CACHE_DIR", str(tmp_path / "cache"))
    get_settings.cache_clear()
    client.set_bucket_versioning(bucket, VersioningConfig(ENABLED))
    first = _put(client, bucket, "in/doc.pdf", b"%PDF-1.4 first version\n")
    second = _put(client, bucket, "in/doc.pdf", b"%PDF-1.4 second version, longer\n")
    assert first.version_id and first.version_id != second.version_id

    named = spec_for_object(
        bucket,
        "in/doc.pdf",
        "file:///tmp/out",
        Options(),
        etag=first.etag,
        version_id=first.version_id,
    )
    assert named.version_id == first.version_id
    assert Path(local_pdf(named, get_settings())).read_bytes() == b"%PDF-1.4 first version\n"

    stale = spec_for_object(bucket, "in/doc.pdf", "file:///tmp/out", Options(), etag=first.etag)
    with pytest.raises(SourceChangedError, match="overwritten"):
        local_pdf(stale, get_settings())
    current = spec_for_object(bucket, "in/doc.pdf", "file:///tmp/out", Options(), etag=second.etag)
    assert Path(local_pdf(current, get_settings())).read_bytes().startswith(b"%PDF-1.4 second")

    small = spec_for_object(
        bucket,
        "in/doc.pdf",
        "file:///tmp/out",
        Options(max_bytes=10),
        etag=second.etag,
        version_id=second.version_id,
    )
    with pytest.raises(PdfTooLargeError):
        local_pdf(small, get_settings())
    assert not any((tmp_path / "cache").rglob(f"{small.job_id}*")), (
        "refused before a byte was downloaded"
    )
    get_settings.cache_clear()
