"""Transient network failures of S3 calls become the retryable StorageError where they enter
(urllib3's errors are neither OSErrors nor MinioExceptions)."""

from __future__ import annotations

import io
import socket

import pytest

from pagefleet.workers.errors import StorageError
from pagefleet.workers.settings import Settings
from pagefleet.workers.store.storage import S3Storage


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _storage() -> S3Storage:
    from minio import Minio
    import urllib3

    settings = Settings(
        storage={"s3_endpoint": f"127.0.0.1:{_closed_port()}", "s3_region": "us-east-1"}
    )
    http = urllib3.PoolManager(
        retries=urllib3.Retry(total=0), timeout=urllib3.Timeout(connect=1, read=1)
    )
    client = Minio(
        settings.storage.s3_endpoint,
        access_key="k",
        secret_key="s",
        secure=False,
        region="us-east-1",
        http_client=http,
    )
    return S3Storage("bucket", "p", settings, client=client)


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.get_bytes("a.json"),
        lambda s: s.put_bytes("a.json", b"{}"),
        lambda s: s.put_stream("a.json", io.BytesIO(b"{}")),
        lambda s: s.put_streams(
            [("a.md", io.BytesIO(b"#"), "text/markdown"), ("a.txt", io.BytesIO(b"a"), "text/plain")]
        ),
        lambda s: s.open_object("a.pdf").__enter__(),
        lambda s: s.stat_size("a.json"),
        lambda s: s.list_keys("work"),
        lambda s: s.delete_prefix("work"),
    ],
)
def test_unreachable_endpoint_is_a_retryable_storage_error(call) -> None:
    with pytest.raises(StorageError) as info:
        call(_storage())
    assert info.value.retryable and info.value.code == "storage_error"
