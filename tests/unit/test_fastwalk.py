"""The C text walk (pagefleet/workers/pdf/stextwalk.c, loaded by pagefleet/workers/pdf/fastwalk.py) gives rung 1 exactly
the Python path's answer (rawdict + `mupdf._geometry_evidence`, `stext.walk`, `runs.run_order`):
page by page on the generated fixtures and the corpus, and line by line on random geometry built
to hit every branch (shared origins, zero-width code points, one box for two code points, Arabic
lines whose numbers and brackets were strung in the wrong order)."""

from __future__ import annotations

import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pymupdf
import pytest

from fixtures.make_fixtures import raw_pdf, stream_object
from tests.conftest import CORPUS
from tests.unit.test_glyph_evidence import random_line
from tests.unit.test_lam_runs import _chars as laid_out
from tests.unit.test_lam_runs import _scramble
from pagefleet.workers.pdf import fastwalk, mupdf, stext
from pagefleet.workers.settings import get_settings

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
pytestmark = pytest.mark.skipif(
    fastwalk.library() is None and shutil.which("cc") is None,
    reason="no C compiler here: rung 1 takes the Python path",
)


def test_the_library_is_built_and_loaded() -> None:
    assert fastwalk.library() is not None, "run `make native` (make setup builds the C text walk)"
    assert fastwalk.library().pf_version().decode() == pymupdf.mupdf_version


def documents(*folders: Path) -> Iterator[pymupdf.Document]:
    for folder in folders:
        for path in sorted(folder.rglob("*.pdf")):
            try:
                doc = pymupdf.open(path)
                if doc.needs_pass or not doc.page_count:
                    continue
            except Exception:  # the broken inputs: rung 1 never reads their pages
                continue
            yield doc


def _pages(*folders: Path) -> Iterator[pymupdf.Page]:
    for doc in documents(*folders):
        for number in range(doc.page_count):
            try:
                yield doc.load_page(number)
            except Exception:
                continue


@pytest.fixture(scope="module")
def folders(fixtures_dir: Path, structure_dir: Path) -> list[Path]:
    return [fixtures_dir, structure_dir] + ([CORPUS] if CORPUS.is_dir() else [])


def test_every_page_walks_as_the_python_path(folders: list[Path]) -> None:
    native = rtl = pages = 0
    for page in _pages(*folders):
        for flags in (mupdf._TEXT_FLAGS, mupdf._TEXT_FLAGS | pymupdf.TEXT_PRESERVE_IMAGES):
            textpage = page.get_textpage(flags=flags)
            walked = fastwalk.evidence(textpage)
            python = mupdf._geometry_evidence(textpage.extractRAWDICT())
            assert walked is None or walked == python, (page.parent.name, page.number)
            assert fastwalk.blocks(textpage) == stext.walk(textpage, count_lines=True)
            pages += 1
            native += walked is not None
            rtl += walked is not None and any(inc + dec for inc, dec in walked["line_geometry"])
    assert pages > 50 and native == pages and rtl > 10, (pages, native, rtl)  # none fell back here


def test_every_page_gives_extract_texts_string(folders: list[Path]) -> None:
    pages = 0
    for page in _pages(*folders):
        for flags in (mupdf._TEXT_FLAGS, mupdf._TEXT_FLAGS | pymupdf.TEXT_PRESERVE_IMAGES):
            textpage = page.get_textpage(flags=flags)
            assert fastwalk.text(textpage) == textpage.extractText(), (
                page.parent.name,
                page.number,
            )
            pages += 1
    assert pages > 50


def _rtl_block(textpage: pymupdf.TextPage) -> bool:
    """A character of a Hebrew or Arabic block in the page's text blocks (pf_rtl_hint's test)."""
    blocks = textpage.extractRAWDICT()["blocks"]
    return any(
        0x0590 <= ord(c["c"]) <= 0x08FF
        or 0xFB1D <= ord(c["c"]) <= 0xFDFF
        or 0xFE70 <= ord(c["c"]) <= 0xFEFF
        for b in blocks
        if b["type"] == 0
        for line in b["lines"]
        for span in line["spans"]
        for c in span["chars"]
    )


def test_one_walk_tells_an_rtl_page_or_gives_the_text(folders: list[Path]) -> None:
    """`text_unless_rtl`: (True, None) for a page holding a character of a Hebrew or Arabic block,
    else (False, `text`): the walk that gives a Latin page's string tells the others apart."""
    rtl = latin = 0
    for page in _pages(*folders):
        textpage = page.get_textpage(flags=mupdf._TEXT_FLAGS | pymupdf.TEXT_PRESERVE_IMAGES)
        if _rtl_block(textpage):
            assert fastwalk.text_unless_rtl(textpage) == (True, None), (
                page.parent.name,
                page.number,
            )
            rtl += 1
        else:
            assert fastwalk.text_unless_rtl(textpage) == (False, fastwalk.text(textpage)), (
                page.parent.name,
                page.number,
            )
            latin += 1
    assert rtl > 10 and latin > 10, (rtl, latin)
    with pymupdf.open(
        stream=_vertical_pdf(), filetype="pdf"
    ) as doc:  # declined, and no RTL character
        assert fastwalk.text_unless_rtl(doc[0].get_textpage(flags=mupdf._TEXT_FLAGS)) == (
            False,
            None,
        )


def test_clipped_turned_and_vertical_text_gives_extract_texts_string() -> None:
    """Characters half off the page (no clip flag: the box test decides), lines at an angle and on
    a turned page (the corrected boxes are rotated), a vertical line (left to extractText)."""
    with pymupdf.open() as doc:
        page = doc.new_page(width=300, height=200)
        page.insert_text(
            (240, 60), "edge of the page", fontname="dv", fontfile=str(DEJAVU), fontsize=14
        )
        page.insert_text(
            (20, 190), "low line gjpqy", fontname="dv", fontfile=str(DEJAVU), fontsize=30
        )
        page.insert_text((60, 150), "at an angle", fontname="dv", fontfile=str(DEJAVU), rotate=90)
        page.insert_text((100, 100), "upside down", fontname="helv", rotate=180)
        turned = doc.new_page(width=300, height=200)
        turned.insert_text((30, 40), "turned page ... שלום", fontname="dv", fontfile=str(DEJAVU))
        turned.set_rotation(90)
        walked = 0
        for p in doc:
            for flags in (0, mupdf._TEXT_FLAGS, mupdf._TEXT_FLAGS | pymupdf.TEXT_PRESERVE_IMAGES):
                textpage = p.get_textpage(flags=flags)
                assert fastwalk.text(textpage) == textpage.extractText(), (p.number, flags)
                walked += 1
        assert "edge of" in doc[0].get_textpage(flags=0).extractText()
    with pymupdf.open(stream=_vertical_pdf(), filetype="pdf") as doc:
        textpage = doc[0].get_textpage(flags=mupdf._TEXT_FLAGS)
        assert fastwalk.text(textpage) is None  # PyMuPDF's own call reads it
        assert mupdf._plain_text(textpage) == textpage.extractText() == "\u4e2d\n\u6587\n"
    assert walked == 6


def _vertical_pdf() -> bytes:
    """One page with two CJK characters set vertically (a UCS-2 vertical CMap, MuPDF's built-in
    font): one line of writing mode 1 per character."""
    return raw_pdf(
        [
            b"<</Type/Catalog/Pages 2 0 R>>",
            b"<</Type/Pages/Kids[3 0 R]/Count 1>>",
            b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 300 300]/Resources<</Font<</F1 5 0 R>>>>/Contents 4 0 R>>",
            stream_object(b"BT /F1 20 Tf 100 250 Td <4E2D6587> Tj ET"),
            b"<</Type/Font/Subtype/Type0/BaseFont/STSong-Light/Encoding/UniGB-UCS2-V/DescendantFonts[6 0 R]>>",
            b"<</Type/Font/Subtype/CIDFontType0/BaseFont/STSong-Light/CIDSystemInfo"
            b"<</Registry(Adobe)/Ordering(GB1)/Supplement 2>>/FontDescriptor 7 0 R>>",
            b"<</Type/FontDescriptor/FontName/STSong-Light/Flags 6/FontBBox[0 0 1000 1000]/ItalicAngle 0"
            b"/Ascent 800/Descent -200/CapHeight 700/StemV 80>>",
        ]
    )


def _switch(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    """Settings `native_walk` from the environment, read afresh (both are cached per process)."""
    if value is None:
        monkeypatch.delenv("PAGEFLEET_ADVANCED__NATIVE_WALK", raising=False)
    else:
        monkeypatch.setenv("PAGEFLEET_ADVANCED__NATIVE_WALK", value)
    get_settings.cache_clear()
    fastwalk.library.cache_clear()


def test_rung_one_records_are_the_same_with_and_without_it(
    folders: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    def extract(doc: pymupdf.Document, number: int, switch: str) -> dict[str, Any]:
        _switch(monkeypatch, switch)
        return mupdf._extract_page(doc, number)

    reordered = 0
    try:
        for doc in documents(*folders):
            for number in range(1, doc.page_count + 1):
                try:
                    python = extract(doc, number, "0")
                except Exception:
                    continue
                assert extract(doc, number, "1") == python, (doc.name, number)
                reordered += bool(python.get("glyph_rows"))
    finally:
        _switch(monkeypatch, None)
    assert reordered > 0  # RTL pages were read from their glyphs' rows on both paths


def test_turned_off_it_answers_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    _switch(monkeypatch, "0")
    try:
        with pymupdf.open() as doc:
            doc.new_page().insert_text(
                (72, 72), "Hello, rung one", fontname="dv", fontfile=str(DEJAVU)
            )
            textpage = doc[0].get_textpage(flags=mupdf._TEXT_FLAGS)
            assert fastwalk.library() is None
            assert fastwalk.evidence(textpage) is None and fastwalk.blocks(textpage) is None
            assert mupdf._extract_page(doc, 1)["text"] == "Hello, rung one"
    finally:
        _switch(monkeypatch, None)


def _walk_lines(lines: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """The C evidence of `lines` (rawdict-like characters) as if pf_chars had written them."""
    buf = fastwalk.Buffers()
    n = sum(len(line) for line in lines)
    buf.grow(n + 1, len(lines) + 1)
    chars = [c for line in lines for c in line]
    buf.cps[:n] = [ord(c["c"]) for c in chars]
    geo = np.array([[*c["bbox"], *c["origin"]] for c in chars], dtype=np.float32).reshape(-1)
    buf.geo[: 6 * n] = geo
    buf.line_len[: len(lines)] = [len(line) for line in lines]
    return fastwalk.walk_evidence(fastwalk.library(), buf, n, len(lines))


def _as_float32(chars: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The characters with the coordinates MuPDF would hold (floats), as rawdict hands them to Python."""

    def f32(values: Any) -> tuple[float, ...]:
        return tuple(np.array(values, dtype=np.float32).tolist())

    return [{"c": c["c"], "bbox": f32(c["bbox"]), "origin": f32(c["origin"])} for c in chars]


def _python(lines: list[list[dict[str, Any]]]) -> dict[str, Any]:
    return mupdf._geometry_evidence(
        {"blocks": [{"lines": [{"spans": [{"chars": line}]} for line in lines]}]}
    )


@pytest.mark.parametrize("seed", range(4))
def test_random_lines_give_the_python_evidence(seed: int) -> None:
    rng = random.Random(seed)
    hits = {"clusters": 0, "runs": 0, "order": 0}
    for _ in range(60):
        lines = [_as_float32(random_line(rng)) for _ in range(rng.randint(1, 8))]
        python = _python(lines)
        assert _walk_lines(lines) == python
        hits["clusters"] += bool(python["glyph_clusters"])
        hits["runs"] += python["shared_position_runs"] > 0
        hits["order"] += any(inc + dec for inc, dec in python["line_geometry"])
    assert all(hits.values()), hits


ARABIC = [
    "قانون رقم 8 لسنة 2022",
    "المادة (12) من القانون",
    "بلغت 1,000.5 دينار في 12:30",
    "نص Tel Aviv هنا 5",
]


@pytest.mark.parametrize("seed", range(3))
def test_scrambled_arabic_lines_get_the_python_run_order(seed: int) -> None:
    rng = random.Random(seed)
    found = 0
    for _ in range(80):
        chars = laid_out(rng.choice(ARABIC), y=100 + rng.choice([0.0, 0.5]))
        if (
            rng.random() < 0.3
        ):  # one glyph off the baseline: by 1.5 pt the proof holds, by 2.5 it fails
            i = rng.randrange(len(chars))
            x, y = chars[i]["origin"]
            chars[i] = dict(chars[i], origin=(x, y + rng.choice([1.5, 2.5])))
        cuts = sorted(rng.sample(range(1, len(chars)), rng.randint(1, 3)))
        pieces = list(zip([0, *cuts], [*cuts, len(chars)]))
        rng.shuffle(pieces)
        scrambled, _ = _scramble(chars, pieces)
        if rng.random() < 0.3:  # a glyph drawn somewhere else: the proof must fail
            i = rng.randrange(len(scrambled))
            scrambled[i] = dict(scrambled[i], bbox=(0.0, 90.0, 600.0, 102.0))
        lines = [_as_float32(scrambled), _as_float32(laid_out("שלום 12 עולם"))]
        python = _python(lines)
        assert _walk_lines(lines) == python
        found += bool(python["run_orders"])
    assert found > 5


def test_a_coordinate_that_is_not_a_number_is_left_to_python() -> None:
    chars = laid_out(ARABIC[0])
    scrambled, _ = _scramble(chars, [(11, len(chars)), (0, 11)])
    for field, index in (("origin", 1), ("bbox", 0)):
        broken = [dict(c) for c in scrambled]
        value = list(broken[3][field])
        value[index] = float("nan")
        broken[3][field] = tuple(value)
        lines = [_as_float32(broken)]
        assert _walk_lines(lines) == _python(lines)
    assert _python([_as_float32(scrambled)])[
        "run_orders"
    ]  # the line is reordered when no coordinate is broken


def test_rtl_pages_read_without_their_plain_text_first(
    folders: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`mupdf._rtl_page` (a page holding an RTL letter read by the C walk, no plain text first) gives
    every page the answer `_read_page` gives it, and takes every page with an RTL letter."""
    taken = 0
    for doc in documents(*folders):
        for number in range(1, doc.page_count + 1):
            try:
                fast = mupdf._extract_page(doc, number)
            except Exception:  # a page rung 1 cannot read either way
                continue
            page = doc.load_page(number - 1)
            textpage = page.get_textpage(flags=mupdf._TEXT_FLAGS | pymupdf.TEXT_PRESERVE_IMAGES)
            shortcut = mupdf._rtl_page(page, textpage) is not None
            rtl = "R" in mupdf.glyph_kinds(textpage.extractText())
            assert shortcut == (
                rtl and fastwalk.evidence(page.get_textpage(flags=mupdf._TEXT_FLAGS)) is not None
            )
            taken += shortcut
            with monkeypatch.context() as m:
                m.setattr(mupdf, "_rtl_page", lambda *_: None)
                assert mupdf._extract_page(doc, number) == fast, (doc.name, number)
    assert taken >= 10, (
        taken
    )  # Hebrew and Arabic pages of the fixtures, the structure set and the corpus


def _drawn(tmp_path: Path) -> pymupdf.Document:
    """A Hebrew page with two images: one drawn before any text, one after the first words, inside
    their line (the line goes on after it, on the same baseline)."""
    doc = pymupdf.open()
    page = doc.new_page()
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 4, 4), False)
    pix.clear_with(200)
    font = {"fontsize": 12, "fontname": "dejavu", "fontfile": str(DEJAVU)}
    page.insert_image(pymupdf.Rect(300, 20, 400, 60), pixmap=pix)  # a logo drawn first
    page.insert_text((50, 100), "שלום עולם ", **font)
    page.insert_image(pymupdf.Rect(300, 300, 400, 400), pixmap=pix)
    width = pymupdf.Font(fontfile=str(DEJAVU)).text_length("שלום עולם ", fontsize=12)
    page.insert_text((50 + width, 100), "ועוד מילים", **font)
    path = tmp_path / "image-inside-a-line.pdf"
    doc.save(path)
    return pymupdf.open(path)


def test_an_image_inside_a_line_reads_the_line_from_a_text_page_without_images(
    tmp_path: Path,
) -> None:
    """MuPDF ends a line at an image drawn inside it when a text page keeps its images (which rung 1
    reads the images' boxes from): an RTL page that draws an image takes its characters from a
    second text page, without images, which reads the line whole (it costs the bench's mix a few
    milliseconds in 1000 pages)."""
    doc = _drawn(tmp_path)
    page = doc.load_page(0)
    kept = page.get_textpage(flags=mupdf._TEXT_FLAGS | pymupdf.TEXT_PRESERVE_IMAGES)
    assert kept.extractText().count("\n") == 2  # the line cut at the image
    record = mupdf._extract_page(doc, 1)
    assert "\n" not in record["text"] and len(record["text"].split()) == 4  # one line, read whole
    assert record["images"] == 2 and record["image_coverage"] > 0
