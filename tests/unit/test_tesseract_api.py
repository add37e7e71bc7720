"""Tesseract in the worker process (tesserocr) against the `tesseract` command, on a real page with
real Tesseract: the same words, a TSV the coverage check parses, a deadline that cancels a read;
and the routing rule that skips a narrower Tesseract read after a wider one was refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.test_ocr_levers import LINES, _page
from pagefleet.workers.engines import coverage, scan_prep, tesseract_api
from pagefleet.workers.engines.tesseract import recognise
from pagefleet.workers.errors import EngineTimeout
from pagefleet.workers.ladder.ocr_stage import _narrower
from pagefleet.workers.settings import get_settings

pytestmark = pytest.mark.slow


@pytest.fixture()
def page_png(tmp_path: Path) -> Path:
    img, _ = _page(dpi=200)
    png = tmp_path / "page.png"
    scan_prep.save_gray(img, str(png), 200)
    return png


def _words(tsv: str) -> list[str]:
    return [w.text for w in coverage.parse_tsv(tsv)]


def test_in_process_reads_what_the_command_reads(
    page_png: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert tesseract_api.available(), "tesserocr is a dependency (pyproject.toml)"
    text_api, tsv_api = recognise(str(page_png), "eng", 3, 200, tmp_path, "api")
    monkeypatch.setenv("PAGEFLEET_OCR__TESSERACT_INPROCESS", "false")
    get_settings.cache_clear()
    try:
        assert not get_settings().ocr.tesseract_inprocess
        text_cli, tsv_cli = recognise(str(page_png), "eng", 3, 200, tmp_path, "cli")
    finally:
        monkeypatch.delenv("PAGEFLEET_OCR__TESSERACT_INPROCESS")
        get_settings.cache_clear()
    assert [line for line in text_api.splitlines() if line.strip()] == LINES
    assert [line for line in text_cli.splitlines() if line.strip()] == LINES
    assert _words(tsv_api) == _words(tsv_cli) == " ".join(LINES).split()
    assert tsv_api.splitlines()[0].split("\t")[:3] == ["level", "page_num", "block_num"]


def test_an_array_reads_as_its_file(
    page_png: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page and its crops go to Tesseract as grey arrays (raw bytes in process, a PGM for the
    command): word for word the reading of the same pixels from a PNG."""
    img = scan_prep.load_gray(str(page_png))
    assert recognise(img, "eng", 3, 200, tmp_path, "array") == recognise(
        str(page_png), "eng", 3, 200, tmp_path, "f"
    )
    monkeypatch.setenv("PAGEFLEET_OCR__TESSERACT_INPROCESS", "false")
    get_settings.cache_clear()
    try:
        text, tsv = recognise(img[:, : img.shape[1] // 2 * 2], "eng", 3, 200, tmp_path, "cli")
        assert (tmp_path / "cli.pgm").exists()
    finally:
        monkeypatch.delenv("PAGEFLEET_OCR__TESSERACT_INPROCESS")
        get_settings.cache_clear()
    assert [line for line in text.splitlines() if line.strip()] == LINES
    assert _words(tsv) == " ".join(LINES).split()


def test_in_process_models_stay_loaded_per_thread(page_png: Path) -> None:
    recognise_twice = [
        tesseract_api.recognise(str(page_png), "eng", 3, 200, timeout_s=60) for _ in range(2)
    ]
    assert recognise_twice[0] == recognise_twice[1]
    assert tesseract_api._api("eng", 3) is tesseract_api._api("eng", 3)


def test_a_read_past_its_deadline_is_cancelled(page_png: Path) -> None:
    with pytest.raises(EngineTimeout):
        tesseract_api.recognise(str(page_png), "heb+ara+eng", 3, 200, timeout_s=0.001)
    # the API is usable again afterwards
    text, _ = tesseract_api.recognise(str(page_png), "heb+ara+eng", 3, 200, timeout_s=60)
    assert "opening line" in text


def test_a_missing_image_is_a_typed_error(tmp_path: Path) -> None:
    import numpy as np

    from pagefleet.workers.errors import EngineCrashed

    with pytest.raises(EngineCrashed):
        tesseract_api.recognise(str(tmp_path / "none.png"), "eng", 3, 200, timeout_s=10)
    for bad in (np.zeros((10, 10, 3), dtype=np.uint8), np.zeros((0, 5), dtype=np.uint8)):
        with pytest.raises(EngineCrashed, match="grey image"):
            tesseract_api.recognise(bad, "eng", 3, 200, timeout_s=10)


@pytest.mark.parametrize(
    "entry, read, skip",
    [
        ("tesseract:ara+eng", "tesseract:heb+ara+eng", True),
        ("tesseract:eng", "tesseract:heb+ara+eng", True),
        ("tesseract:heb+ara+eng", "tesseract:heb+ara+eng", True),
        ("tesseract:heb+eng", "tesseract:ara+eng", False),
        ("paddle:arabic", "tesseract:heb+ara+eng", False),
        ("dots", "tesseract:heb+ara+eng", False),
    ],
)
def test_narrower_tesseract_entries_are_skipped_after_a_wider_read(
    entry: str, read: str, skip: bool
) -> None:
    assert _narrower(entry, read) is skip
