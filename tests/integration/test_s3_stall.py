"""An S3 server that stops answering without closing anything (a partition, a hung peer): a PUT
waiting on it fails as a retryable StorageError after `s3_timeout_s` (minio's own client waits 5
minutes, past any task's time limit), and a task that gives up waiting (its soft time limit)
leaves the stalled PUTs on a pool no later document uses. Real moto server, real TCP proxy."""

from __future__ import annotations

import io
import signal
import uuid
from collections.abc import Iterator

import pytest

from tests.support.artifact_streams import artifact_streams
from tests.support.tcp_proxy import TcpProxy
from pagefleet.workers.store import storage as storage_module
from pagefleet.workers.errors import StorageError
from pagefleet.workers.settings import Settings
from pagefleet.workers.store.storage import S3Storage

pytestmark = pytest.mark.integration


class GaveUp(Exception):
    """What a task's soft time limit raises in the middle of its wait."""


@pytest.fixture
def stalling(
    s3_server: str, request: pytest.FixtureRequest
) -> Iterator[tuple[TcpProxy, S3Storage]]:
    """A store behind a proxy; its S3 timeout is the test's parameter (its stalled PUTs are reset
    by the cut at the end, so none outlives the test)."""
    host, port = s3_server.split(":")
    proxy = TcpProxy(host, int(port)).start()
    settings = Settings(
        storage={
            "s3_endpoint": proxy.endpoint,
            "s3_access_key": "testing",
            "s3_secret_key": "testing",
            "s3_region": "us-east-1",
            "s3_timeout_s": request.param,
        }
    )
    store = S3Storage(f"stall-{uuid.uuid4().hex[:10]}", "", settings)
    store.client.make_bucket(store.bucket)
    yield proxy, store
    proxy.cut()


def _artifacts(tag: str) -> list[tuple[str, io.BytesIO, str]]:
    return artifact_streams("doc", tag)


@pytest.mark.parametrize("stalling", [1], indirect=True)
def test_a_stalled_s3_fails_as_a_retryable_error(stalling) -> None:
    proxy, store = stalling
    store.put_streams(_artifacts("first"))
    proxy.stall()
    with pytest.raises(StorageError) as info:
        store.put_streams(_artifacts("second"))
    assert info.value.retryable and "timed out" in str(info.value).lower()
    proxy.restore()
    store.put_streams(_artifacts("third"))
    assert store.get_bytes("doc/chunks.jsonl") == b"third chunks.jsonl"


@pytest.mark.parametrize("stalling", [60], indirect=True)  # the stalled PUTs outlast the test
def test_a_task_that_gives_up_on_stalled_puts_leaves_them_to_a_retired_pool(
    stalling, caplog
) -> None:
    proxy, store = stalling
    store.put_streams(_artifacts("first"))
    before = storage_module._put_pool()
    proxy.stall()

    def give_up(signum, frame):
        raise GaveUp

    previous = signal.signal(signal.SIGALRM, give_up)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(GaveUp):
            store.put_streams(_artifacts("second"))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    after = storage_module._put_pool()
    assert (
        after is not before and before._shutdown
    )  # the stalled PUTs hold none of the next document's threads
    assert "PUT pool is retired" in caplog.text
    proxy.restore()
    store.put_streams(_artifacts("third"))
    assert {store.get_bytes(key) for key, _, _ in _artifacts("x")} == {
        f"third {k.split('/')[1]}".encode() for k, _, _ in _artifacts("x")
    }
