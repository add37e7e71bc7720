"""Hostile and broken inputs through the split stage (sandboxed MuPDF, no Celery needed): each
ends in a typed error or in pages, never a traceback, a hang or a dead process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pagefleet.workers.model import JobSpec
from pagefleet.workers.split.pages import split_document
from pagefleet.workers.settings import get_settings
from pagefleet.workers.store.storage import LocalStorage


def _split(pdf: Path, out: Path, **options):
    spec = JobSpec(
        job_id=f"t-{pdf.stem}",
        source=str(pdf),
        filename=pdf.name,
        storage=LocalStorage(out).url,
        artifact_prefix="doc",
        options=options,
    )
    return split_document(spec, get_settings())


@pytest.mark.parametrize(
    "name, code",
    [
        ("bad_empty_zero_bytes.pdf", "empty_input"),
        ("bad_header_only.pdf", "invalid_pdf"),
        ("bad_html_renamed.pdf", "unsupported_type"),
        ("bad_zip_renamed.pdf", "unsupported_type"),
        ("bad_zero_pages.pdf", "zero_pages"),
        ("bad_user_password.pdf", "encrypted_pdf"),
        ("bad_recursive_page_tree.pdf", "invalid_pdf"),
        ("bad_100k_pages.pdf", "invalid_pdf"),  # MuPDF refuses the forged page count
    ],
)
def test_fatal_inputs_give_typed_errors(
    fixtures_dir: Path, tmp_path: Path, name: str, code: str
) -> None:
    outcome = _split(fixtures_dir / "bad" / name, tmp_path)
    assert outcome.error is not None and outcome.error["code"] == code
    record = json.loads((tmp_path / "doc" / "error.json").read_text())
    assert record == outcome.error and "Traceback" not in record["message"]


@pytest.mark.parametrize(
    "name",
    [
        "bad_broken_xref.pdf",
        "bad_truncated.pdf",
        "bad_huge_mediabox.pdf",
        "bad_decompression_bomb.pdf",
    ],
)
def test_repairable_inputs_are_processed(fixtures_dir: Path, tmp_path: Path, name: str) -> None:
    outcome = _split(fixtures_dir / "bad" / name, tmp_path)
    assert outcome.error is None and outcome.page_count == 1
    assert outcome.accepted + sum(len(v) for v in outcome.pending.values()) == 1


def test_owner_password_only_is_processed(fixtures_dir: Path, tmp_path: Path) -> None:
    outcome = _split(fixtures_dir / "owner_password_only_english.pdf", tmp_path)
    assert outcome.error is None and outcome.accepted == 1


def test_page_and_size_limits(fixtures_dir: Path, tmp_path: Path) -> None:
    pdf = fixtures_dir / "mixed_multipage_document.pdf"
    assert _split(pdf, tmp_path / "a", max_pages=3).error["code"] == "too_many_pages"
    assert _split(pdf, tmp_path / "b", max_bytes=1000).error["code"] == "pdf_too_large"
    assert _split(pdf, tmp_path / "c", ocr="sometimes").error["code"] == "invalid_options"
