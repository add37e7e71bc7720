"""review.json read and rewritten so that two reviewers writing at once never lose a decision.

`update(storage, prefix, change)` reads review.json, gives it to `change` (which returns the new one
or raises, e.g. `ReviewConflict` when the page was decided meanwhile) and writes the result only if
nobody wrote in between:

- a local folder: under an exclusive `flock` on `<document>/.review.json.lock` (processes and
  threads alike), the file itself replaced atomically (temporary file + rename);
- S3: a conditional PUT (`If-Match: <ETag read>`, or `If-None-Match: *` when there was no file);
  a 412 means someone wrote first: read again and let `change` decide again (a decision on another
  page goes through; one on the same page is refused by `change`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from typing import Any

from workers.errors import StorageError
from workers.review.decisions import REVIEW_FILE, ReviewConflict, ReviewFile, dump, parse
from workers.storage import LocalStorage, S3Storage, Storage

ATTEMPTS = 8
LOCK_NAME = ".review.json.lock"


def _key(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


def load(storage: Storage, prefix: str) -> ReviewFile:
    try:
        return parse(storage.get_json(_key(prefix, REVIEW_FILE)))
    except KeyError:
        return ReviewFile()


@contextlib.contextmanager
def _locked(storage: LocalStorage, prefix: str) -> Iterator[None]:
    path = storage.path(_key(prefix, LOCK_NAME))
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
        import json

        return json.loads(response.read().decode("utf-8")), (response.headers.get("ETag") or "").strip('"')
    finally:
        response.close()
        response.release_conn()


def _put_s3_if(storage: S3Storage, key: str, data: bytes, etag: str | None) -> bool:
    """PUT only if the object still has `etag` (None: only if there is none); False if it changed."""
    from minio.error import S3Error

    condition = {"If-Match": f'"{etag}"'} if etag else {"If-None-Match": "*"}
    headers = {"Content-Type": "application/json", **condition}
    try:
        storage.client._put_object(storage.bucket, storage._key(key), data, headers=headers)
    except S3Error as exc:
        if exc.code in ("PreconditionFailed", "ConditionalRequestConflict"):
            return False
        raise StorageError(f"conditional put {key} failed: {exc.code}") from exc
    return True


def update(storage: Storage, prefix: str, change: Callable[[ReviewFile], ReviewFile]) -> ReviewFile:
    """review.json changed by `change`, written only over the version `change` saw."""
    key = _key(prefix, REVIEW_FILE)
    if isinstance(storage, S3Storage):
        for _ in range(ATTEMPTS):
            raw, etag = _read_s3(storage, key)
            new = change(parse(raw))
            if _put_s3_if(storage, key, dump(new), etag):
                return new
        raise ReviewConflict("review.json kept changing under other reviewers' writes: try again")
    if isinstance(storage, LocalStorage):
        with _locked(storage, prefix):
            new = change(load(storage, prefix))
            storage.put_bytes(key, dump(new), "application/json")
            return new
    raise StorageError(f"review.json cannot be written safely on {type(storage).__name__}")
