"""A page with no text anywhere (a photograph, a drawing) is accepted as `no_text` with a warning,
adds nothing to the text artifacts, and does not make its document fail; a page with text beside
it is read as usual."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pymupdf
import pytest
from PIL import Image

pytestmark = pytest.mark.integration
PAGEFLEET = str(Path(sys.executable).parent / "pagefleet")
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def _photo() -> bytes:
    """A smooth picture with no letter-like ink: a colour gradient and a soft disc."""
    y, x = np.mgrid[0:600, 0:800]
    disc = ((x - 400) ** 2 + (y - 300) ** 2 < 150**2) * 60
    rgb = np.stack([x * 255 // 800, y * 255 // 600, (disc + 120).clip(0, 255)], axis=-1).astype(
        np.uint8
    )
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="PNG")
    return buf.getvalue()


def test_a_picture_page_is_no_text_and_the_document_is_accepted(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_font(fontname="f", fontfile=DEJAVU)
    page.insert_text((72, 100), "A page of text beside a photograph.", fontname="f", fontsize=12)
    doc.new_page().insert_image(pymupdf.Rect(50, 50, 550, 425), stream=_photo())
    inputs = tmp_path / "in"
    inputs.mkdir()
    doc.save(inputs / "with_photo.pdf")
    out = tmp_path / "out"
    run = subprocess.run(
        [PAGEFLEET, "run", str(inputs), "--out", str(out), "--workers", "1"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    document = json.loads((out / "with_photo" / "document.json").read_text())
    assert document["status"] == "accepted"
    photo = document["pages"][1]
    assert photo["route"] == "no_text" and photo["text"] == "" and not photo["needs_review"]
    assert photo["quality"]["warnings"] == ["picture_only"]
    assert photo["attempts"] and all(
        a["reasons"] == ["no_text"] for a in photo["attempts"] if a["rung"] != "text_layer"
    )
    text = (out / "with_photo" / "text.txt").read_text()
    assert (
        text.split("\f")[0].strip() == "A page of text beside a photograph."
        and not text.split("\f")[1].strip()
    )
    chunks = [
        json.loads(line) for line in (out / "with_photo" / "chunks.jsonl").read_text().splitlines()
    ]
    assert all(c["pages"] == [1] for c in chunks)
