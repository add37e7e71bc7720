"""Source PDFs: fetch, validate, and read them through the sandbox.

Validation order (cheapest first, each a typed error): size before reading (`pdf_too_large`),
zero bytes (`empty_input`), another known file type renamed `.pdf` (`unsupported_type`), no `%PDF-`
header (`invalid_pdf`), MuPDF cannot open it (`invalid_pdf`), a user password is needed
(`encrypted_pdf`; owner-password-only files open and are processed), no pages (`zero_pages`),
too many pages (`too_many_pages`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from pagefleet.workers.errors import (
    EmptyInputError,
    EncryptedPdfError,
    InputError,
    InvalidPdfError,
    PdfTooLargeError,
    SandboxError,
    SourceMissingError,
    TooManyPagesError,
    UnsupportedTypeError,
    ZeroPagesError,
)
from pagefleet.workers.pdf.sandbox import run_child
from pagefleet.workers.settings import Options, Settings

BATCH_PAGES = 200  # pages a split task reads in one sandbox command

log = logging.getLogger(__name__)

_SIGNATURES = (
    (b"PK\x03\x04", "a ZIP archive (DOCX/XLSX/ZIP)"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"\xd0\xcf\x11\xe0", "an OLE document (DOC/XLS)"),
    (b"{\\rtf", "an RTF document"),
)


@dataclass(frozen=True)
class SourceFile:
    path: str  # a local file the sandbox can open
    filename: str
    bytes: int
    sha256: str

    def hashed(self) -> "SourceFile":
        """This file with its sha256 (read now if it was left out)."""
        return self if self.sha256 else replace(self, sha256=sha256_file(self.path))


def sha256_file(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def local_source(path: str, options: Options, *, hashed: bool = True) -> SourceFile:
    """Check size before reading, then hash (the file is read in chunks, never whole); without
    `hashed`, `sha256` is "" and the caller hashes later (`SourceFile.hashed`)."""
    p = Path(path)
    try:
        size = p.stat().st_size
    except FileNotFoundError as exc:
        raise SourceMissingError(f"{p.name} does not exist (deleted, or never written)") from exc
    except OSError as exc:
        raise InvalidPdfError(f"cannot read {p.name}: {exc.strerror or exc}") from exc
    if size > options.max_bytes:
        raise PdfTooLargeError(f"{p.name} is {size} bytes; the limit is {options.max_bytes}")
    if size == 0:
        raise EmptyInputError(f"{p.name} is empty (0 bytes)")
    return SourceFile(
        path=str(p.resolve()), filename=p.name, bytes=size, sha256=sha256_file(p) if hashed else ""
    )


def cache_copy(path: str, sha256: str, cache_dir: str) -> str:
    """Keep a worker-local copy keyed by content hash (used for sources fetched from S3)."""
    target = Path(cache_dir) / "sources" / f"{sha256}.pdf"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        shutil.copyfile(path, tmp)
        tmp.replace(target)
    return str(target)


def sniff(path: str) -> None:
    with open(path, "rb") as handle:
        head = handle.read(1024)
    if not head:
        raise EmptyInputError("the input is empty (0 bytes)")
    if b"%PDF-" in head:
        return
    for signature, what in _SIGNATURES:
        if head.startswith(signature):
            raise UnsupportedTypeError(f"not a PDF: the bytes are {what}")
    lowered = head.lstrip().lower()
    if lowered.startswith((b"<!doctype html", b"<html", b"<?xml")):
        raise UnsupportedTypeError("not a PDF: the bytes are HTML/XML text")
    raise InvalidPdfError("not a PDF: no %PDF- header in the first 1024 bytes")


def inspect(source: SourceFile, options: Options, settings: Settings) -> dict[str, Any]:
    """Validate a source fully; return the probe (page_count, encryption, producer)."""
    _precheck(source, options)
    return _probe_alone(source, options, settings)


def _probe_alone(source: SourceFile, options: Options, settings: Settings) -> dict[str, Any]:
    """`inspect` past the checks before MuPDF: the probe in a command of its own, and its checks."""
    limits = _limits(settings)
    try:  # probe + the first batch of rung 1 in one child ...
        info = run_child("probe", source.path, _probe_params(options, settings), **limits)
    except SandboxError:
        try:  # ... and if that child died, the probe alone decides whether the file opens at all
            info = run_child("probe", source.path, {}, **limits)
        except SandboxError as exc:
            raise InvalidPdfError(f"MuPDF cannot open {source.filename}: {exc.message}") from exc
    return _checked(source, options, info)


def inspect_many(
    items: list[tuple[SourceFile, Options]], settings: Settings
) -> list[dict[str, Any] | InputError]:
    """`inspect` of each (source, options), in order, an input error in place of a probe: the
    documents that pass the checks before MuPDF are probed in one sandbox command (`probe_many`:
    one round trip through the fork server and one result for all, ~0.3–0.5 ms of CPU a one-page
    document). A document whose probe raised in it, or every one where the command itself died (a
    crash, a limit), is probed alone, so its answer, and its error, are its own."""
    found: list[dict[str, Any] | InputError | None] = [None] * len(items)
    todo: list[int] = []
    for i, (source, options) in enumerate(items):
        try:
            _precheck(source, options)
            todo.append(i)
        except InputError as exc:
            found[i] = exc
    if len(todo) > 1:
        docs: list[list[Any]] = [
            [items[i][0].path, _probe_params(items[i][1], settings)] for i in todo
        ]
        try:
            heads = run_child("probe_many", docs[0][0], {"docs": docs}, **_limits(settings))[
                "heads"
            ]
        except SandboxError as exc:
            log.info(
                "the sandbox's probe of %d documents failed (%s): each is probed alone",
                len(todo),
                exc.message,
            )
            heads = [{"failed": exc.message}] * len(todo)
        for i, info in zip(todo, heads):
            if "failed" not in info:
                found[i] = _checked_or_error(items[i][0], items[i][1], info)
    for i in todo:
        if found[i] is None:
            try:  # its checks before MuPDF passed above
                found[i] = _probe_alone(items[i][0], items[i][1], settings)
            except InputError as exc:
                found[i] = exc
    return cast("list[dict[str, Any] | InputError]", found)  # every entry set above


def _precheck(source: SourceFile, options: Options) -> None:
    """The checks before MuPDF: size, then the first bytes."""
    if source.bytes > options.max_bytes:
        raise PdfTooLargeError(
            f"{source.filename} is {source.bytes} bytes; the limit is {options.max_bytes}"
        )
    sniff(source.path)


def _limits(settings: Settings) -> dict[str, Any]:
    """A sandbox command's wall-clock and memory limits, as every command of this module passes them."""
    return {
        "timeout_s": settings.limits.sandbox_timeout_s,
        "memory_mb": settings.limits.sandbox_memory_mb,
    }


def _probe_params(options: Options, settings: Settings) -> dict[str, Any]:
    return {
        "extract_upto": settings.advanced.split_range_pages,
        "max_pages": options.max_pages,
        "structure": options.structure,
    }


def _checked(source: SourceFile, options: Options, info: dict[str, Any]) -> dict[str, Any]:
    """The checks of MuPDF's answer: a user password, no pages, too many pages."""
    if info["needs_pass"]:
        raise EncryptedPdfError(f"{source.filename} is encrypted and needs a user password")
    if info["page_count"] == 0:
        raise ZeroPagesError(f"{source.filename} parsed but has no pages")
    if info["page_count"] > options.max_pages:
        raise TooManyPagesError(
            f"{source.filename} has {info['page_count']} pages; the limit is {options.max_pages}"
        )
    return info


def _checked_or_error(
    source: SourceFile, options: Options, info: dict[str, Any]
) -> dict[str, Any] | InputError:
    try:
        return _checked(source, options, info)
    except InputError as exc:
        return exc


def extract_pages(
    source: SourceFile,
    page_count: int,
    settings: Settings,
    already: list[dict[str, Any]] | None = None,
    structure: bool = False,
    start: int = 1,
) -> list[dict[str, Any]]:
    """Rung 1 for pages `start`..`page_count`, in batches (one sandbox child per batch, forked from
    the warm sandbox server); `already` holds the first pages when `inspect` extracted them.
    `structure`: with each page's layout evidence."""
    pages: list[dict[str, Any]] = list(already or [])
    batch = BATCH_PAGES
    for first in range(start + len(pages), page_count + 1, batch):
        last = min(first + batch - 1, page_count)
        try:
            result = run_child(
                "extract",
                source.path,
                {"first": first, "last": last, "structure": structure},
                **_limits(settings),
            )
        except SandboxError as exc:
            log.warning(
                "extract pages %d-%d of %s failed: %s", first, last, source.filename, exc.message
            )
            result = {"pages": [_unreadable(n, exc.message) for n in range(first, last + 1)]}
        pages.extend(result["pages"])
    return pages


def _unreadable(number: int, why: str) -> dict[str, Any]:
    return {
        "number": number,
        "text": "",
        "line_geometry": [],
        "glyphs": 0,
        "shared_position_runs": 0,
        "images": 0,
        "image_coverage": 0.0,
        "drawings": 0,
        "width": 0,
        "height": 0,
        "error": why[:300],
    }


def render_page(
    pdf: str, page: int, dpi: int, png: str, settings: Settings, rotate: int = 0
) -> dict[str, Any]:
    """Render one page (grey PNG or PGM, by the file's suffix), capped at 100 megapixels against huge MediaBoxes."""
    return run_child(
        "render",
        pdf,
        {"page": page, "dpi": dpi, "png": png, "max_pixels": 100_000_000, "rotate": rotate},
        **_limits(settings),
    )
