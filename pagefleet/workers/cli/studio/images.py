"""Source page images for the page view: rendered on demand by the sandboxed renderer
(`pagefleet.workers.pdf.source.render_page`, as the OCR stage renders pages) and cached by source sha256.

Where the source comes from: `document.json` records `source.uri` (the path `pagefleet run` read,
or `s3://bucket/key`) and `source.sha256`. A local path is used if its bytes still hash to that
sha256; an S3 object is downloaded once into the cache and checked the same way. Uploads made in
the studio are kept under `OUT/.pagefleet/uploads/`, so their `uri` stays valid. A source that
moved or changed is reported, never guessed.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

from pagefleet.workers.errors import PagefleetError, SandboxError, StorageError
from pagefleet.workers.pdf.source import render_page, sha256_file
from pagefleet.workers.settings import Settings
from pagefleet.workers.store.storage import S3Storage
from pagefleet.workers.store.uri import is_s3, split_s3_uri

SHA256 = re.compile(r"^[0-9a-f]{64}$")


class SourceUnavailable(PagefleetError):
    code = "source_unavailable"


class SourceImages:
    def __init__(self, cache_dir: Path, dpi: int, settings: Settings) -> None:
        self.cache_dir = cache_dir
        self.dpi = dpi
        self.settings = settings
        self._hashes: dict[tuple[str, int, int], str] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def _lock(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def _hash(self, path: str) -> str:
        st = os.stat(path)
        memo = (path, st.st_size, st.st_mtime_ns)
        if memo not in self._hashes:
            self._hashes[memo] = sha256_file(path)
        return self._hashes[memo]

    def _download(self, uri: str, sha: str) -> str:
        target = self.cache_dir / "sources" / f"{sha}.pdf"
        with self._lock(f"src-{sha}"):
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                bucket, key = split_s3_uri(uri)
                tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
                S3Storage(bucket, "", self.settings).download(key, str(tmp))
                tmp.replace(target)
        return str(target)

    def source_pdf(self, doc: dict[str, Any]) -> str:
        """A local copy of the document's source whose sha256 matches document.json."""
        source = doc.get("source") or {}
        sha, uri = str(source.get("sha256") or ""), str(source.get("uri") or "")
        if not SHA256.match(sha):
            raise SourceUnavailable("document.json records no sha256 for its source")
        if not uri:
            raise SourceUnavailable("document.json records no source location (source.uri)")
        try:
            path = self._download(uri, sha) if is_s3(uri) else uri
            if not os.path.isabs(path) or not os.path.isfile(path):
                raise SourceUnavailable(
                    f"the source {source.get('filename')} is no longer at {uri}"
                )
            if self._hash(path) != sha:
                raise SourceUnavailable(f"the file at {uri} changed since the run (sha256 differs)")
        except (StorageError, KeyError, OSError) as exc:
            raise SourceUnavailable(f"cannot read the source at {uri}: {exc}") from exc
        return path

    def availability(self, doc: dict[str, Any]) -> str | None:
        """None when the page images can be rendered, else why not (shown in the page view)."""
        try:
            self.source_pdf(doc)
        except SourceUnavailable as exc:
            return exc.message
        return None

    def png(self, doc: dict[str, Any], number: int, rotate: int = 0) -> Path:
        """The page rendered at the studio's resolution (turned as OCR turned it), cached."""
        pdf = self.source_pdf(doc)
        sha = str(doc["source"]["sha256"])
        rotate = rotate if rotate in (0, 90, 180, 270) else 0
        target = self.cache_dir / "pages" / sha / f"{number:05d}-{self.dpi}-{rotate}.png"
        with self._lock(f"{sha}-{number}"):
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp.png")
                try:
                    render_page(pdf, number, self.dpi, str(tmp), self.settings, rotate=rotate)
                except SandboxError as exc:
                    raise SourceUnavailable(
                        f"page {number} could not be rendered: {exc.message}"
                    ) from exc
                if not tmp.is_file():
                    raise SourceUnavailable(
                        f"page {number} could not be rendered: no image written"
                    )
                tmp.replace(target)
        return target
