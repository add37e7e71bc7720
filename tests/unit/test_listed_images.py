"""`pagefleet.workers.pdf.resources.listed_images` lists what `Page.get_images(full=False)` lists (the xrefs,
in order) on every page it may meet: the fixtures', the corpus's, and pages built here of images
used twice, forms nested and shared, and a resource cycle."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from tests.conftest import CORPUS
from pagefleet.workers.pdf import mupdf
from pagefleet.workers.pdf.resources import listed_images

ROOT = Path(__file__).resolve().parents[2]


def _png(shade: int) -> bytes:
    pix = pymupdf.Pixmap(pymupdf.csGRAY, pymupdf.IRect(0, 0, 8, 8), False)
    pix.set_rect(pix.irect, (shade,))
    return pix.tobytes("png")


def _xrefs(page: pymupdf.Page) -> list[int]:
    return [int(item[0]) for item in page.get_images(full=False)]


def _images_page(doc: pymupdf.Document) -> None:
    page = doc.new_page()
    page.insert_text((72, 72), "images")
    for shade, box in (
        (40, (72, 100, 172, 200)),
        (200, (200, 100, 300, 200)),
        (40, (320, 100, 420, 200)),
    ):
        page.insert_image(pymupdf.Rect(box), stream=_png(shade))


def _built() -> pymupdf.Document:
    """Page 1: two images, one drawn twice. Page 2: a page of images shown twice (forms over a
    shared form). Page 3: a page that shows such a page (forms in forms), and an image of its own.
    Page 4: a form whose resources list itself."""
    source, nested, doc = pymupdf.open(), pymupdf.open(), pymupdf.open()
    _images_page(source)
    nested.new_page().show_pdf_page(pymupdf.Rect(0, 0, 300, 400), source, 0)
    _images_page(doc)
    second = doc.new_page()
    second.show_pdf_page(pymupdf.Rect(0, 0, 300, 400), source, 0)
    second.show_pdf_page(pymupdf.Rect(300, 400, 600, 800), source, 0)
    third = doc.new_page()
    third.show_pdf_page(pymupdf.Rect(0, 0, 300, 400), nested, 0)
    third.show_pdf_page(pymupdf.Rect(300, 400, 600, 800), nested, 0)
    third.insert_image(pymupdf.Rect(300, 0, 400, 100), stream=_png(90))
    fourth = doc.new_page()
    form = doc.get_new_xref()
    doc.update_object(form, "<< /Type /XObject /Subtype /Form /BBox [0 0 10 10] >>")
    doc.update_stream(form, b"")
    doc.xref_set_key(form, "Resources", f"<< /XObject << /Me {form} 0 R >> >>")
    doc.xref_set_key(fourth.xref, "Resources", f"<< /XObject << /F0 {form} 0 R >> >>")
    return pymupdf.open("pdf", doc.tobytes())


def test_built_pages_list_what_get_images_lists() -> None:
    with _built() as doc:
        listed = [listed_images(page) for page in doc]
        assert listed == [_xrefs(page) for page in doc]
        assert (
            len(listed[0]) == 3 and len(set(listed[0])) == 2
        )  # one image drawn twice: listed twice
        assert len(listed[1]) >= 3 and len(set(listed[1])) == 2  # through the forms
        assert len(set(listed[2])) == 3
        assert listed[3] == []  # the cycle ends, nothing listed


def _pages() -> list[tuple[str, int]]:
    files = sorted(CORPUS.glob("*.pdf")) + sorted((ROOT / "fixtures").rglob("*.pdf"))
    found = []
    for path in files:
        try:
            with pymupdf.open(path) as doc:
                if not doc.needs_pass:
                    found += [(str(path), page.number) for page in doc]
        except Exception:  # noqa: BLE001 - the hostile fixtures that do not open (or whose page tree loops) list nothing
            continue
    return found


def test_every_fixture_and_corpus_page_lists_what_get_images_lists() -> None:
    pages = _pages()
    if not pages:
        pytest.skip("no fixtures or corpus here")
    differ, with_images = [], 0
    for path, number in pages:
        with pymupdf.open(path) as doc:
            page = doc[number]
            listed = listed_images(page)
            with_images += bool(listed)
            if listed != _xrefs(page):
                differ.append((Path(path).name, number + 1))
    assert not differ
    assert with_images  # the comparison saw pages that list images


def test_rung_one_counts_and_sizes_the_listed_images() -> None:
    with _built() as doc:
        page = mupdf._extract_page(doc, 3)
        assert page["images"] == len(_xrefs(doc[2]))
        lengths = {x: int(doc.xref_get_key(x, "Length")[1]) for x in _xrefs(doc[2])}
        assert page["image_bytes"] == sum(lengths.values()) > 0
