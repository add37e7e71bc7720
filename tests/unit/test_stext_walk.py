"""Rung 1's image boxes come from its one text page (`pagefleet/workers/pdf/stext.py`): inline images count
as well as image XObjects, and a clipped image covers only the part a reader sees."""

from __future__ import annotations

import pymupdf
import pytest

from pagefleet.workers.pdf import mupdf, stext

GREY_2X2 = b"BI /W 2 /H 2 /BPC 8 /CS /G ID \x00\xff\xff\x00 EI"


def _page_with(content: bytes) -> pymupdf.Document:
    """A 600 × 800 page whose content stream is `content` (a text line first, so the page is read)."""
    doc = pymupdf.open()
    page = doc.new_page(width=600, height=800)
    page.insert_text((72, 72), "Plain Latin text above the picture.")
    xref = page.get_contents()[0]
    doc.update_stream(xref, doc.xref_stream(xref) + b"\n" + content)
    return doc


@pytest.mark.parametrize(
    "content, coverage",
    [
        (
            b"q 300 0 0 400 0 0 cm " + GREY_2X2 + b" Q",
            0.25,
        ),  # an inline image on a quarter of the page
        (
            b"q 0 0 300 800 re W n 600 0 0 800 0 0 cm " + GREY_2X2 + b" Q",
            0.5,
        ),  # a full-page one, clipped to half
        (b"", 0.0),
    ],
)
def test_image_coverage_is_of_the_visible_images(content: bytes, coverage: float) -> None:
    with _page_with(content) as doc:
        record = mupdf._extract_page(doc, 1)
        assert record["images"] == 0  # no image XObject in the resources
        assert record["image_coverage"] == pytest.approx(coverage, abs=0.01)
        assert record["text"] == "Plain Latin text above the picture."
        if coverage:  # get_image_info() sees the inline image too, but unclipped
            assert len(doc[0].get_image_info()) == 1


def test_walk_gives_image_boxes_and_the_line_count() -> None:
    with _page_with(b"q 300 0 0 400 0 0 cm " + GREY_2X2 + b" Q") as doc:
        textpage = doc[0].get_textpage(flags=mupdf._TEXT_FLAGS | pymupdf.TEXT_PRESERVE_IMAGES)
        boxes, lines = stext.walk(textpage, count_lines=True)
        assert lines == 1 == textpage.extractText().count("\n")
        ((x0, y0, x1, y1),) = boxes
        assert (x0, x1) == pytest.approx((0, 300)) and y1 - y0 == pytest.approx(400)
        assert stext.walk(textpage, count_lines=False) == (boxes, None)
        assert stext.image_boxes(doc[0], mupdf._TEXT_FLAGS) == boxes
