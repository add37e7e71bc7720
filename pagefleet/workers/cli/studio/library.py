"""The served folder (or S3 prefix): which documents it holds, and the only ways to read and write it.

A document is a folder holding `document.json` or `error.json` (`OUT/<stem>/` locally,
`artifacts/<sha256>/` on S3). URLs name a document by its folder (`~` for the root itself); an id
is served only if the listing found it, so no URL can name anything else. Local reads also resolve
symlinks and refuse anything that lands outside the root. The studio writes only `review.json` and
the reviewed artifacts made from it (`WRITABLE`), never `document.json`.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pagefleet.workers.errors import StorageError
from pagefleet.workers.store.storage import LocalStorage, Storage, open_storage
from pagefleet.workers.store.uri import is_s3

ROOT_ID = "~"
MARKERS = ("document.json", "error.json")
WRITABLE = (
    "review.json",
    "document.reviewed.json",
    "document.reviewed.md",
    "text.reviewed.txt",
    "chunks.jsonl",
    "report.json",
)  # review.json, and what pagefleet.workers.review.reviewed.apply writes from it
MAX_DEPTH = 6


class NotFound(Exception):
    """Nothing the studio may serve under that name (answered 404, whatever the reason)."""


@dataclass(frozen=True)
class DocRef:
    id: str
    prefix: str

    def key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name


def safe_relative(key: str) -> str:
    """A storage key that cannot leave its root: no `..`, no absolute path, no backslash or NUL."""
    if not key or "\x00" in key or "\\" in key or key.startswith("/"):
        raise NotFound(key)
    parts = key.split("/")
    if any(p in ("..", ".", "") for p in parts):
        raise NotFound(key)
    return key


def safe_local_path(root: Path, key: str) -> Path:
    """The file for `key` under `root`, symlinks resolved; anything outside the root is NotFound."""
    root = root.resolve()
    target = (root / safe_relative(key)).resolve()
    if not target.is_relative_to(root):
        raise NotFound(key)
    return target


def _local_documents(root: Path) -> list[str]:
    found: list[str] = []
    for here, dirs, files in os.walk(root):  # never follows symlinked folders
        rel = Path(here).relative_to(root)
        dirs[:] = (
            sorted(d for d in dirs if not d.startswith(".")) if len(rel.parts) < MAX_DEPTH else []
        )
        if any(m in files for m in MARKERS):
            found.append(rel.as_posix() if rel.parts else "")
    return found


def _key_documents(keys: list[str]) -> list[str]:
    found = set()
    for key in keys:
        folder, _, name = key.rpartition("/")
        if name in MARKERS and not any(p.startswith(".") for p in folder.split("/")):
            found.add(folder)
    return sorted(found)


class Library:
    """The documents under one storage root. Thread-safe; the listing is refreshed on demand."""

    def __init__(self, storage: Storage, label: str, refresh_s: float = 2.0) -> None:
        self.storage = storage
        self.label = label
        self.refresh_s = refresh_s
        self._lock = threading.Lock()
        self._listed: dict[str, DocRef] = {}
        self._listed_at = 0.0

    @classmethod
    def open(cls, where: str) -> "Library":
        if is_s3(where):
            return cls(open_storage(where), where.rstrip("/"))
        root = Path(where).resolve()
        if not root.is_dir():
            raise NotFound(f"no such folder: {where}")
        return cls(LocalStorage(root), str(root))

    @property
    def local_root(self) -> Path | None:
        return self.storage.local_root

    def documents(self, *, fresh: bool = False) -> list[DocRef]:
        with self._lock:
            if fresh or time.monotonic() - self._listed_at > self.refresh_s:
                root = self.local_root
                prefixes = (
                    _local_documents(root) if root else _key_documents(self.storage.list_keys(""))
                )
                self._listed = {(p or ROOT_ID): DocRef(p or ROOT_ID, p) for p in prefixes}
                self._listed_at = time.monotonic()
            return sorted(self._listed.values(), key=lambda r: r.id)

    def find(self, doc_id: str) -> DocRef:
        for fresh in (False, True):
            ref = next((r for r in self.documents(fresh=fresh) if r.id == doc_id), None)
            if ref is not None:
                return ref
        raise NotFound(doc_id)

    def read_bytes(self, ref: DocRef, name: str) -> bytes | None:
        """An artifact's bytes, or None when the document has no such file."""
        key = ref.key(safe_relative(name))
        root = self.local_root
        try:
            if root is not None:
                path = safe_local_path(root, key)
                return path.read_bytes() if path.is_file() else None
            return self.storage.get_bytes(key)
        except (KeyError, FileNotFoundError):
            return None

    def read_json(self, ref: DocRef, name: str) -> Any:
        import json

        data = self.read_bytes(ref, name)
        if data is None:
            return None
        try:
            return json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise StorageError(f"{ref.key(name)} is not valid JSON: {exc}") from exc

    def check_writable(self, ref: DocRef, name: str) -> None:
        if name not in WRITABLE:
            raise NotFound(name)
        root = self.local_root
        if root is not None:
            safe_local_path(root, ref.key(name))  # a symlinked review.json must not write outside

    def write(self, ref: DocRef, name: str, data: bytes, content_type: str) -> None:
        self.check_writable(ref, name)
        self.storage.put_bytes(ref.key(name), data, content_type)
