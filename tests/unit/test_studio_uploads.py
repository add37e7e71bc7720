"""Review studio uploads: names made safe, the size cap enforced while streaming, and every input
check of the split task (typed errors) made before anything is stored or queued."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pagefleet.workers.cli.studio.library import Library
from pagefleet.workers.cli.studio.uploads import Uploads, receive, safe_filename
from pagefleet.workers.errors import InputError, PdfTooLargeError
from pagefleet.workers.settings import StudioSettings


@pytest.mark.parametrize(
    "name, safe",
    [
        ("report.pdf", "report.pdf"),
        ("../../etc/passwd", "passwd.pdf"),
        ("C:\\x\\scan.PDF", "scan.PDF"),
        ("<script>.pdf", "script_.pdf"),
        ("", "upload.pdf"),
        ("...", "upload.pdf"),
        ("דוח שנתי.pdf", "דוח שנתי.pdf"),
    ],
)
def test_safe_filename(name: str, safe: str) -> None:
    assert safe_filename(name) == safe


async def _chunks(sizes: list[int]):
    for n in sizes:
        yield b"x" * n


def test_receive_stops_at_the_cap(tmp_path: Path) -> None:
    assert asyncio.run(receive(_chunks([400, 400]), 1000, tmp_path)).stat().st_size == 800
    with pytest.raises(PdfTooLargeError):
        asyncio.run(receive(_chunks([600, 600]), 1000, tmp_path))


@pytest.mark.parametrize(
    "name, code",
    [
        ("bad/bad_zip_renamed.pdf", "unsupported_type"),
        ("bad/bad_user_password.pdf", "encrypted_pdf"),
        ("bad/bad_empty_zero_bytes.pdf", "empty_input"),
        ("bad/bad_header_only.pdf", "invalid_pdf"),
        ("bad/bad_zero_pages.pdf", "zero_pages"),
        ("mixed_multipage_document.pdf", "pdf_too_large"),
    ],
)
def test_uploads_are_validated_like_every_other_input(
    fixtures_dir: Path, tmp_path: Path, name: str, code: str
) -> None:
    uploads = Uploads(
        Library.open(str(tmp_path)), StudioSettings(max_upload_bytes=500_000), broker=None
    )
    with pytest.raises(InputError) as caught:
        uploads.validate(fixtures_dir / name, "x.pdf")
    assert caught.value.code == code
    assert list(tmp_path.iterdir()) == []  # nothing stored


def test_a_good_upload_passes(fixtures_dir: Path, tmp_path: Path) -> None:
    uploads = Uploads(Library.open(str(tmp_path)), StudioSettings(), broker=None)
    assert len(uploads.validate(fixtures_dir / "born_digital_hebrew.pdf", "x.pdf")) == 64
