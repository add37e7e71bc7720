"""A text layer of glyphs that map to nothing readable (controls, Private Use, U+FFFD) on a page
with no image is not a blank page: it climbs to OCR with the gate's reasons (issue 9)."""

from __future__ import annotations

import pytest

from pagefleet.workers.ladder.textlayer import decide_page
from pagefleet.workers.model import PageRecord, PendingPage

BASE = {
    "number": 1,
    "shared_position_runs": 0,
    "image_coverage": 0.0,
    "line_geometry": [],
    "glyph_clusters": 0,
}


@pytest.mark.parametrize(
    "text, reason",
    [
        ("\ufffd" * 40, "replacement_chars"),
        ("\ue000\ue001\ue002 \ue003\ue004" * 8, "private_use_chars"),
        ("\x01\x02\x03\x04" * 10, "control_chars"),
    ],
)
def test_garbage_glyphs_climb_with_reasons(text: str, reason: str) -> None:
    glyphs = sum(1 for c in text if not c.isspace())
    result = decide_page({**BASE, "text": text, "glyphs": glyphs}, ocr="auto", gpu=False)
    assert isinstance(result, PendingPage)
    assert reason in result.reasons and result.layer["kind"] == "unreadable_glyphs"


def test_glyphs_without_any_text_climb() -> None:
    result = decide_page({**BASE, "text": "", "glyphs": 30}, ocr="auto", gpu=False)
    assert isinstance(result, PendingPage) and result.reasons


@pytest.mark.parametrize("text", ["", "  \n\n "])
def test_a_page_that_draws_nothing_is_still_blank(text: str) -> None:
    result = decide_page({**BASE, "text": text, "glyphs": 0}, ocr="auto", gpu=False)
    assert isinstance(result, PageRecord) and "blank_page" in result.quality.warnings
