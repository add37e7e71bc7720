"""What the review loop asks of a store beyond get and put: an object read, changed and written
back so that two writers at once never lose a change (`update`), and when an object was last
written (`written_at`).

`update` on
- a local folder: under an exclusive `flock` on a lock file beside the object (processes and
  threads alike), the file itself replaced atomically (temporary file + rename);
- S3: a conditional PUT (`If-Match: <ETag read>`, or `If-None-Match: *` when there was no object);
  a 412 means someone wrote first: read again and let `change` decide again.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import logging
import os
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from pagefleet.workers.errors import StorageError
from pagefleet.workers.store.storage import LocalStorage, S3Storage, Storage

log = logging.getLogger(__name__)
T = TypeVar("T")


class Contended(StorageError):
    """Every read of the object was overtaken by another writer's write, `attempts` times in a row."""


def update(
    storage: Storage,
    key: str,
    change: Callable[[Any], T],
    dump: Callable[[T], bytes],
    *,
    lock_key: str,
    attempts: int = 8,
    content_type: str = "application/json",
) -> T:
    """The object at `key` (its JSON, None when there is none) given to `change`, and what
    `change` returns written back (`dump`) only over the version it saw. `lock_key`: the lock
    file of a local store. Raises `Contended` where S3 writers overtook every attempt."""
    if isinstance(storage, S3Storage):
        for _ in range(attempts):
            raw, etag = _read_s3(storage, key)
            new = change(raw)
            if _put_s3_if(storage, key, dump(new), etag, content_type):
                return new
        raise Contended(f"{key} kept changing under other writers")
    if isinstance(storage, LocalStorage):
        with _locked(storage, lock_key):
            try:
                raw = storage.get_json(key)
            except KeyError:
                raw = None
            new = change(raw)
            storage.put_bytes(key, dump(new), content_type)
            return new
    raise StorageError(f"{key} cannot be rewritten safely on {type(storage).__name__}")


def written_at(storage: Storage, key: str) -> dt.datetime | None:
    """When an object was last written (a local file's mtime, an S3 object's Last-Modified); None
    where the store cannot say or the object is gone. Never raises."""
    try:
        if isinstance(storage, LocalStorage):
            return dt.datetime.fromtimestamp(storage.path(key).stat().st_mtime, dt.UTC)
        if isinstance(storage, S3Storage):
            return storage.client.stat_object(storage.bucket, storage._key(key)).last_modified
    except Exception as exc:  # noqa: BLE001 - a missing time only leaves the summary out
        log.debug("no write time for %s: %s", key, exc)
    return None


@contextlib.contextmanager
def _locked(storage: LocalStorage, lock_key: str) -> Iterator[None]:
    path = storage.path(lock_key)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _read_s3(storage: S3Storage, key: str) -> tuple[Any, str | None]:
    from minio.error import S3Error

    try:
        response = storage.client.get_object(storage.bucket, storage._key(key))
    except S3Error as exc:
        if exc.code in ("NoSuchKey", "NoSuchObject"):
            return None, None
        raise StorageError(f"get {key} failed: {exc.code}") from exc
    try:
        return json.loads(response.read().decode("utf-8")), (
            response.headers.get("ETag") or ""
        ).strip('"')
    finally:
        response.close()
        response.release_conn()


def _put_s3_if(
    storage: S3Storage, key: str, data: bytes, etag: str | None, content_type: str
) -> bool:
    """PUT only if the object still has `etag` (None: only if there is none); False if it changed."""
    from minio.error import S3Error

    condition = {"If-Match": f'"{etag}"'} if etag else {"If-None-Match": "*"}
    headers = {"Content-Type": content_type, **condition}
    try:
        storage.client._put_object(storage.bucket, storage._key(key), data, headers=headers)
    except S3Error as exc:
        if exc.code in ("PreconditionFailed", "ConditionalRequestConflict"):
            return False
        raise StorageError(f"conditional put {key} failed: {exc.code}") from exc
    return True
