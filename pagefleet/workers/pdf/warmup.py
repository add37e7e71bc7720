"""The fork server's warm-up (`pagefleet.workers.pdf.forkserver`): what PyMuPDF, MuPDF and our own tables
initialise lazily is paid once in the server, before it forks, not in every child.
"""

from __future__ import annotations

import tempfile
from typing import Any

WARM_COLOURS = (
    (0.2,),
    (0.1, 0.2, 0.3),
    (0.1, 0.2, 0.3, 0.4),
)  # text filled in DeviceGray, DeviceRGB, DeviceCMYK


def warm_up(mupdf: Any) -> None:  # pragma: no cover - server side
    """Read and render one small page of our own making (Latin, Hebrew, Arabic; text in grey, RGB
    and CMYK) before forking: the lazy initialisations of PyMuPDF, of the character tables and of
    MuPDF's colour management happen once here, not in every child. A span's colour is converted
    to sRGB through an ICC link that LittleCMS builds on first use and MuPDF keeps in its store;
    built in each child, those links made a one-page probe ~24 ms instead of ~10."""
    import pymupdf

    from pagefleet.routing.charclass import classes, features
    from pagefleet.workers.pdf import fastrows, fastwalk
    from pagefleet.workers.pdf.runs import unit_kinds

    with tempfile.TemporaryDirectory(prefix="pagefleet-warm-") as tmp, pymupdf.open() as doc:
        page = doc.new_page()
        for i, colour in enumerate(WARM_COLOURS):
            page.insert_text(
                (72, 72 + 20 * i),
                "Warm up 0123 \u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627",
                color=colour,
            )
        doc.save(f"{tmp}/warm.pdf")
        mupdf.probe(f"{tmp}/warm.pdf", extract_upto=1, max_pages=1, structure=True)
        mupdf.extract_range(f"{tmp}/warm.pdf", 1, 1)
        mupdf.render(f"{tmp}/warm.pdf", 1, 72, f"{tmp}/warm.pgm")
        mupdf.forget()
    # a page-long text: the glyph-kind and run-unit tables' arrays are made and filled here (Latin,
    # Hebrew, Arabic), and numpy's first calls are paid once, not in every child; so is the C text
    # walk's loading (pagefleet.workers.pdf.fastwalk)
    sample = "".join(map(chr, [*range(0x20, 0x250), *range(0x590, 0x600), *range(0x600, 0x700)]))
    mupdf.glyph_kinds(sample)
    unit_kinds(sample)
    classes(sample)  # the class table's array (run-order candidates, a page at a time: ~7 ms cold)
    features(sample)  # and the feature bits' table
    fastrows.CHAR_BITS.apply(sample)  # the C rows' character bits and bidi classes
    fastrows.BIDI_CLASSES.apply(sample)
    fastwalk.library()
    fastrows.reading_order(list("a \u05d0 1"), True)  # and GNU FriBidi loaded, where it is there
