"""One minio client per process and settings (`pagefleet.workers.store.s3_clients.s3_client`): the documents a worker
stores one after another reuse its pooled connections instead of connecting (and, without a
configured region, asking the bucket's location) once a document. Real moto S3 application
served with HTTP/1.1 keep-alive (`tests/support/s3_server.py`: the session's server, and one over HTTPS,
as every S3 deployment is reached), real TCP proxy that counts the connections it accepts."""

from __future__ import annotations

import multiprocessing
import uuid

import pytest

from tests.support.s3_server import MotoServer
from tests.support.artifact_streams import artifact_streams
from tests.support.tcp_proxy import TcpProxy
from pagefleet.workers.errors import StorageError
from pagefleet.workers.settings import Settings
from pagefleet.workers.store.s3_clients import s3_client
from pagefleet.workers.store.storage import open_storage

pytestmark = pytest.mark.integration


def _settings(endpoint: str, **extra: object) -> Settings:
    return Settings(
        storage={
            "s3_endpoint": endpoint,
            "s3_access_key": "testing",
            "s3_secret_key": "testing",
            **extra,
        }
    )


def _store_documents(endpoint: str, bucket: str, count: int, secure: bool = False) -> None:
    settings = _settings(endpoint, s3_secure=secure)
    for n in range(
        count
    ):  # what the collector does for each document: a storage, then its artifacts
        storage = open_storage(f"s3://{bucket}/out", settings)
        storage.put_streams(artifact_streams(f"doc{n}", str(n)))
        storage.put_json(f"doc{n}/report.json", {"n": n})


def _child_stores(endpoint: str, bucket: str, inherited: int) -> None:
    """In a forked child: its client is not the one it inherited (whose pooled sockets the parent
    still uses), and it stores with it."""
    if id(s3_client(_settings(endpoint, s3_region="us-east-1"))) == inherited:
        raise SystemExit(3)
    _store_documents(endpoint, bucket, 2)


def test_documents_stored_one_after_another_share_the_connections(s3_server: str) -> None:
    host, port = s3_server.split(":")  # the session's server keeps connections (tests/conftest.py)
    proxy = TcpProxy(host, int(port)).start()
    try:
        bucket = f"keep-{uuid.uuid4().hex[:10]}"
        s3_client(_settings(proxy.endpoint, s3_region="us-east-1")).make_bucket(bucket)
        before = proxy.connections
        _store_documents(
            proxy.endpoint, bucket, 12
        )  # no region set: minio asks for the bucket's once
        used = proxy.connections - before
        assert 1 <= used <= 5, f"{used} connections for 12 documents of 5 objects each"
        store = open_storage(f"s3://{bucket}/out", _settings(proxy.endpoint))
        assert store.get_json("doc11/report.json") == {"n": 11}
        assert sorted(store.list_keys("doc3")) == [
            f"doc3/{name}"
            for name in (
                "chunks.jsonl",
                "document.json",
                "document.md",
                "document.txt",
                "report.json",
            )
        ]
    finally:
        proxy.cut()


def test_a_forked_process_makes_its_own_client(s3_server: str) -> None:
    settings = _settings(s3_server, s3_region="us-east-1")
    parent = s3_client(settings)
    assert (
        s3_client(settings) is parent
        and s3_client(_settings(s3_server, s3_region="eu-west-1")) is not parent
    )
    bucket = f"fork-{uuid.uuid4().hex[:10]}"
    parent.make_bucket(bucket)
    child = multiprocessing.get_context("fork").Process(
        target=_child_stores, args=(s3_server, bucket, id(parent))
    )
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert open_storage(f"s3://{bucket}/out", settings).get_json("doc1/report.json") == {"n": 1}


def test_documents_stored_over_https_share_the_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    """A TLS handshake a connection, not one an object: the server's certificate is trusted through
    `SSL_CERT_FILE`, as a private CA's would be."""
    with MotoServer(tls=True) as server:
        monkeypatch.setenv("SSL_CERT_FILE", server.env()["SSL_CERT_FILE"])
        host, port = server.env()["PAGEFLEET_STORAGE__S3_ENDPOINT"].split(":")
        proxy = TcpProxy(host, int(port)).start()
        try:
            settings = _settings(proxy.endpoint, s3_secure=True, s3_region="us-east-1")
            bucket = f"tls-{uuid.uuid4().hex[:10]}"
            s3_client(settings).make_bucket(bucket)
            before = proxy.connections
            _store_documents(proxy.endpoint, bucket, 6, secure=True)
            assert 1 <= proxy.connections - before <= 5
            assert open_storage(f"s3://{bucket}/out", settings).get_json("doc5/report.json") == {
                "n": 5
            }
            client = s3_client(settings)
            client._http.clear()  # its connections closed: the next ones reuse the client's one TLS context
            assert open_storage(f"s3://{bucket}/out", settings).get_json("doc0/report.json") == {
                "n": 0
            }
        finally:
            proxy.cut()
        monkeypatch.delenv("SSL_CERT_FILE")  # certifi's bundle does not hold the test's certificate
        untrusting = _settings(
            server.env()["PAGEFLEET_STORAGE__S3_ENDPOINT"],
            s3_secure=True,
            s3_region="us-east-1",
            s3_timeout_s=5,
        )
        with pytest.raises(StorageError) as info:
            open_storage(f"s3://{bucket}/out", untrusting).get_bytes("doc0/report.json")
        assert "certificate" in str(info.value).lower()
