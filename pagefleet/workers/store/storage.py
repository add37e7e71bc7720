"""Object storage: one interface, two backends — a local directory and S3 through the `minio` client.

A storage is named by a URL that travels in task messages (never credentials):
    file:///abs/dir           LocalStorage rooted at /abs/dir
    s3://bucket[/prefix]      S3Storage; endpoint and keys come from the worker's settings

Keys are `/`-separated and relative to the root/prefix. Writes are atomic per key (temp file +
rename locally; a single PUT on S3). Transient S3 failures raise `StorageError` (retryable).
"""

from __future__ import annotations

import abc
import concurrent.futures
import contextlib
import functools
import http.client
import io
import json
import logging
import os
import shutil
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import pydantic_core
import urllib3.exceptions

from pagefleet.workers.errors import StorageError
from pagefleet.workers.settings import Settings, get_settings
from pagefleet.workers.store.s3_clients import s3_client
from pagefleet.workers.store.uri import split_s3_uri  # noqa: F401 - where the backends' callers find it

log = logging.getLogger(__name__)

# Everything the network can throw at an S3 call (urllib3's errors are not OSErrors).
TRANSIENT_NETWORK_ERRORS = (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError)


# S3 answers that say an object read cannot find what it names: KeyError, never retried (a write
# to a bucket that is gone stays a retryable StorageError: someone may be creating it)
MISSING_CODES = ("NoSuchKey", "NoSuchObject", "NoSuchVersion", "NoSuchBucket")


class ObjectChanged(Exception):
    """A conditional GET's object no longer has the ETag it was asked for (HTTP 412)."""


class Storage(abc.ABC):
    url: str
    local_root: Path | None = None  # the directory of a local store (its objects are files there)

    @abc.abstractmethod
    def put_bytes(
        self, key: str, data: bytes, content_type: str = "application/octet-stream"
    ) -> None: ...

    @abc.abstractmethod
    def get_bytes(self, key: str) -> bytes: ...

    @abc.abstractmethod
    def exists(self, key: str) -> bool: ...

    @abc.abstractmethod
    def delete_prefix(self, prefix: str) -> None: ...

    @abc.abstractmethod
    def list_keys(self, prefix: str) -> list[str]: ...

    def put_json(self, key: str, obj: Any, *, compact: bool = False) -> None:
        """`compact` for work state no person reads: pydantic-core's encoder (a range of pages in
        a third of the time `json.dumps` takes), NaN and infinities written as `json.dumps` writes
        them, so what was stored reads back the same; an indent uses the Python one."""
        if compact:
            data = pydantic_core.to_json(obj, inf_nan_mode="constants")
        else:
            data = json.dumps(obj, ensure_ascii=False, indent=1).encode("utf-8")
        self.put_bytes(key, data, "application/json")

    def get_json(self, key: str) -> Any:
        return json.loads(self.get_bytes(key).decode("utf-8"))

    def put_stream(
        self, key: str, stream: BinaryIO, content_type: str = "application/octet-stream"
    ) -> None:
        """All of a seekable binary stream (from its start) as the object `key`; a store that can
        copies it across in pieces, never all in memory."""
        stream.seek(0)
        self.put_bytes(key, stream.read(), content_type)

    def put_text(
        self, key: str, text: str, content_type: str = "text/plain; charset=utf-8"
    ) -> None:
        self.put_bytes(key, text.encode("utf-8"), content_type)

    def put_streams(self, items: list[tuple[str, BinaryIO, str]]) -> None:
        """Several objects (key, stream, content type), all stored when this returns; a store whose
        writes wait on a network sends them at once (`S3Storage`)."""
        for key, stream, content_type in items:
            self.put_stream(key, stream, content_type)


def _safe_key(key: str) -> str:
    parts = [p for p in key.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise StorageError(f"refusing key with '..': {key!r}")
    return "/".join(parts)


class LocalStorage(Storage):
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = self.local_root = Path(root).resolve()
        self.url = self.root.as_uri()
        self._root = str(self.root)

    def path(self, key: str) -> Path:
        return Path(self._file(key))

    def _file(self, key: str) -> str:
        """The object's file as a plain string (`Path`s cost a one-page document's five artifacts
        ~0.14 ms)."""
        return os.path.join(self._root, _safe_key(key))

    def _staged(self, key: str) -> tuple[str, str, BinaryIO]:
        """(the object's file, the temporary file it is written to and renamed from, that file open
        for writing). Its folder is made only where it is missing: a document's artifacts share one."""
        target = self._file(key)
        folder, name = os.path.split(target)
        tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
        try:
            return target, tmp, open(tmp, "wb")
        except FileNotFoundError:
            os.makedirs(folder, exist_ok=True)
            return target, tmp, open(tmp, "wb")

    def put_bytes(
        self, key: str, data: bytes, content_type: str = "application/octet-stream"
    ) -> None:
        target, tmp, out = self._staged(key)
        with out:
            out.write(data)
        os.replace(tmp, target)

    def put_stream(
        self, key: str, stream: BinaryIO, content_type: str = "application/octet-stream"
    ) -> None:
        target, tmp, out = self._staged(key)
        stream.seek(0)
        with out:
            shutil.copyfileobj(stream, out, 1 << 20)
        os.replace(tmp, target)

    def get_bytes(self, key: str) -> bytes:
        try:
            with open(self._file(key), "rb") as found:
                return found.read()
        except FileNotFoundError as exc:
            raise KeyError(key) from exc

    def exists(self, key: str) -> bool:
        return self.path(key).is_file()

    def delete_prefix(self, prefix: str) -> None:
        target = self.path(prefix)
        if target.is_dir():
            shutil.rmtree(target, ignore_errors=True)
        elif target.exists():
            target.unlink()

    def list_keys(self, prefix: str) -> list[str]:
        base = self.path(prefix)
        if not base.is_dir():
            return []
        return sorted(str(p.relative_to(self.root)) for p in base.rglob("*") if p.is_file())


class S3Storage(Storage):
    def __init__(
        self, bucket: str, prefix: str = "", settings: Settings | None = None, client: Any = None
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.url = f"s3://{bucket}/{self.prefix}".rstrip("/")
        self.client = client or s3_client(settings or get_settings())

    def _key(self, key: str) -> str:
        """Keys are verbatim on S3 (no path traversal exists there); only the prefix is joined."""
        return f"{self.prefix}/{key}" if self.prefix else key

    @contextlib.contextmanager
    def _translate(
        self, op: str, key: str, missing: tuple[str, ...] = MISSING_CODES[:2]
    ) -> Iterator[None]:
        """minio/urllib3/network errors → KeyError (no such object) or StorageError (retryable).

        An unreachable endpoint surfaces from minio as urllib3's `MaxRetryError`/`ProtocolError`
        (neither an `OSError` nor a `MinioException`), a dropped body as `http.client`'s
        `IncompleteRead`: all of them are transient, so all of them become `StorageError`."""
        from minio.error import MinioException, S3Error

        where = f"s3://{self.bucket}/{self._key(key)}"
        try:
            yield
        except S3Error as exc:
            if exc.code in missing:
                raise KeyError(key) from exc
            raise StorageError(f"{op} {where} failed: {exc.code}") from exc
        except TRANSIENT_NETWORK_ERRORS as exc:
            raise StorageError(f"{op} {where} failed: {type(exc).__name__}: {exc}"[:500]) from exc
        except MinioException as exc:
            raise StorageError(f"{op} {where} failed: {exc}"[:500]) from exc

    def put_bytes(
        self, key: str, data: bytes, content_type: str = "application/octet-stream"
    ) -> None:
        with self._translate("put", key):
            self.client.put_object(
                self.bucket, self._key(key), io.BytesIO(data), len(data), content_type=content_type
            )

    def put_stream(
        self, key: str, stream: BinaryIO, content_type: str = "application/octet-stream"
    ) -> None:
        length = stream.seek(0, io.SEEK_END)
        stream.seek(0)
        with self._translate(
            "put", key
        ):  # minio reads it in parts (a multipart upload when it is big)
            self.client.put_object(
                self.bucket, self._key(key), stream, length, content_type=content_type
            )

    def put_streams(self, items: list[tuple[str, BinaryIO, str]]) -> None:
        """The objects' PUTs at once, on the client's pool of connections: a document's artifacts
        take one round trip's time, not one each (a PUT is 2–3 ms on the loopback test server,
        tens of ms to a cloud store). Every PUT is waited for; the first failure is raised."""
        if len(items) < 2:
            super().put_streams(items)
            return
        pool = _put_pool()
        futures = [
            pool.submit(self.put_stream, key, stream, content_type)
            for key, stream, content_type in items
        ]
        try:
            concurrent.futures.wait(futures)
        finally:
            if not all(future.done() for future in futures):  # left early (a soft time limit)
                _retire(pool)
        errors = [exc for future in futures if (exc := future.exception()) is not None]
        if errors:
            raise errors[0]

    def get_bytes(self, key: str) -> bytes:
        with self.open_object(key) as response:
            return response.read()

    @contextlib.contextmanager
    def open_object(
        self, key: str, *, version_id: str | None = None, etag: str | None = None
    ) -> Iterator[Any]:
        """One GET, its body not yet read: the response's headers (size, ETag) decide before a byte
        of it is. Exactly `version_id` when given; with `etag`, only while the object still has it
        (If-Match: `ObjectChanged` when it does not). Closing without reading drops the connection."""
        from minio.error import S3Error

        headers = {"If-Match": f'"{etag}"'} if etag else None
        with self._translate("get", key, MISSING_CODES):
            try:
                response = self.client.get_object(
                    self.bucket, self._key(key), version_id=version_id, request_headers=headers
                )
            except S3Error as exc:
                if exc.code == "PreconditionFailed":
                    raise ObjectChanged(key) from exc
                raise
            try:
                yield response
            finally:
                response.close()
                response.release_conn()

    def download(self, key: str, path: str) -> None:
        with self._translate("download", key):
            self.client.fget_object(self.bucket, self._key(key), path)

    def stat(self, key: str, *, version_id: str | None = None) -> tuple[int, str | None]:
        """(size, ETag) by HEAD, of `version_id` when given; KeyError when it does not exist."""
        with self._translate("stat", key, MISSING_CODES):
            info = self.client.stat_object(self.bucket, self._key(key), version_id=version_id)
        return int(info.size), (info.etag or "").strip('"') or None

    def stat_size(self, key: str) -> int:
        return self.stat(key)[0]

    def exists(self, key: str) -> bool:
        try:
            self.stat_size(key)
        except KeyError:
            return False
        return True

    def delete_prefix(self, prefix: str) -> None:
        from minio.deleteobjects import DeleteObject

        with self._translate("delete", prefix):
            names = self.client.list_objects(self.bucket, self._key(prefix) + "/", recursive=True)
            for error in self.client.remove_objects(
                self.bucket, [DeleteObject(o.object_name) for o in names]
            ):
                raise StorageError(f"delete {error.name} failed: {error.code}")

    def list_keys(self, prefix: str) -> list[str]:
        base = self._key(prefix).strip("/")  # an empty prefix lists everything under the root
        with self._translate("list", prefix):
            names = [
                o.object_name
                for o in self.client.list_objects(
                    self.bucket, f"{base}/" if base else None, recursive=True
                )
            ]
        strip = len(self.prefix) + 1 if self.prefix else 0
        return sorted(n[strip:] for n in names)


_PUT_THREADS = (
    4  # a document's artifacts but its report (stored after them: it marks the job complete)
)
_pools: dict[int, concurrent.futures.ThreadPoolExecutor] = {}


def _put_pool() -> concurrent.futures.ThreadPoolExecutor:
    """This process's pool for concurrent PUTs (a forked child makes its own: threads do not fork)."""
    pool = _pools.get(os.getpid())
    if (
        pool is None
    ):  # two threads racing here make two pools; threads start on first use, so one is never paid
        pool = _pools.setdefault(
            os.getpid(), concurrent.futures.ThreadPoolExecutor(_PUT_THREADS, "pagefleet-put")
        )
    return pool


def _retire(pool: concurrent.futures.ThreadPoolExecutor) -> None:
    """A pool whose PUTs were left running (a task that gave up waiting on a stalled one) serves
    no later document: its threads end once what was queued on them is done (another thread's
    PUTs among it too: those are not cancelled), and the next call makes a fresh pool."""
    if _pools.get(os.getpid()) is pool:
        del _pools[os.getpid()]
        log.warning(
            "S3 PUTs left running (the task stopped waiting for them): this process's PUT pool is retired"
        )
    pool.shutdown(wait=False)


def open_storage(url: str, settings: Settings | None = None) -> Storage:
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        return _local(urllib.parse.unquote(parsed.path))
    if parsed.scheme == "s3":
        bucket, _, prefix = url[len("s3://") :].partition("/")
        return S3Storage(bucket, prefix, settings)
    if not parsed.scheme:
        return _local(url)
    raise StorageError(f"unknown storage URL {url!r}: use file:///dir or s3://bucket/prefix")


@functools.lru_cache(maxsize=64)
def _local(root: str) -> LocalStorage:
    """A local store by its root, made once a worker process (resolving the root's path costs
    ~0.2 ms, paid by every document of a batch; a LocalStorage holds nothing but its root)."""
    return LocalStorage(root)
