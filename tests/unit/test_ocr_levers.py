"""The OCR stage's levers on small generated pages: skew estimate and correction, Otsu, upscaling,
the coverage check (ink no recognised word covers), rebuilding the text with a re-read line, the
gate's `text_missing`. Word boxes come from the generator's own layout (PyMuPDF), so these run
without Tesseract; the `slow` ones run real Tesseract through the engine."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pymupdf
import pytest

from bench import ocr_truth
from bench.ocr_truth import Variant
from pagefleet.routing.quality import GateInput, assess
from pagefleet.workers.engines import coverage, scan_prep
from pagefleet.workers.engines.coverage import Gap, Word

DPI = 150
LINES = [
    "The opening line of the page",
    "a second line that Tesseract could drop",
    "and a third line closing the paragraph",
]


def _page(lines: list[str] = LINES, dpi: int = DPI) -> tuple[np.ndarray, list[Word]]:
    """A clean page and the true word boxes in its pixels (block 1, one line per <p>)."""
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=300)
    html = "".join(f"<p>{line}</p>" for line in lines)
    page.insert_htmlbox(
        pymupdf.Rect(30, 30, 390, 270), html, css="p {font-size: 14pt; margin: 0 0 10pt 0;}"
    )
    zoom = dpi / 72
    words = [
        Word(
            1,
            1,
            i + 1,
            int(x0 * zoom),
            int(y0 * zoom),
            int((x1 - x0) * zoom),
            int((y1 - y0) * zoom),
            95.0,
            text,
        )
        for i, (x0, y0, x1, y1, text, *_) in enumerate(page.get_text("words"))
    ]
    lines_of = {}
    for w in words:  # one line per distinct top
        lines_of.setdefault(round(w.top / 10), len(lines_of) + 1)
    words = [
        Word(1, 1, lines_of[round(w.top / 10)], w.left, w.top, w.width, w.height, w.conf, w.text)
        for w in words
    ]
    pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
    return np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.width).copy(), words


def test_otsu_separates_ink_from_paper() -> None:
    img = np.full((40, 40), 230, dtype=np.uint8)
    img[10:20, 5:35] = 40
    threshold = scan_prep.otsu_threshold(img)
    assert 40 <= threshold < 230
    assert scan_prep.ink_mask(img).sum() == 300


@pytest.mark.parametrize("angle", [-3.0, -1.6, 2.5])
def test_skew_is_found_and_removed(angle: float) -> None:
    img, _ = _page()
    skewed = ocr_truth.degrade(img, Variant("s", DPI, skew=angle), np.random.default_rng(0), None)
    assert scan_prep.estimate_skew(skewed, DPI) == pytest.approx(angle, abs=0.25)
    prepared = scan_prep.prepare(skewed, DPI, deskew=True)
    assert prepared.skew == pytest.approx(angle, abs=0.25)
    assert abs(scan_prep.estimate_skew(prepared.image, DPI)) < 0.3


def test_straight_or_slightly_leaning_page_is_left_alone_and_low_dpi_upscaled() -> None:
    img, _ = _page()
    leaning = ocr_truth.degrade(img, Variant("s", DPI, skew=0.8), np.random.default_rng(0), None)
    assert (
        scan_prep.prepare(leaning, DPI, deskew=True).skew == 0.0
    )  # Tesseract copes below MIN_SKEW
    prepared = scan_prep.prepare(img, DPI, deskew=True, min_dpi=300)
    assert prepared.skew == 0.0
    assert prepared.scale == 2.0 and prepared.dpi == 300
    assert prepared.image.shape == (img.shape[0] * 2, img.shape[1] * 2)


def test_full_coverage_leaves_no_gap() -> None:
    img, words = _page()
    assert coverage.gaps(img, words, dpi=DPI) == []


def test_a_dropped_line_is_one_gap_where_the_line_is() -> None:
    img, words = _page()
    dropped = [w for w in words if w.line == 2]
    kept = [w for w in words if w.line != 2]
    (gap,) = coverage.gaps(img, kept, dpi=DPI)
    top, bottom = min(w.top for w in dropped), max(w.top + w.height for w in dropped)
    assert gap.top <= (top + bottom) // 2 <= gap.bottom
    assert gap.bottom - gap.top < 1.5 * (bottom - top)
    assert gap.left <= min(w.left for w in dropped) + 4


def test_noise_specks_are_no_gap() -> None:
    img, words = _page()
    rng = np.random.default_rng(3)
    ys, xs = rng.integers(0, img.shape[0], 60), rng.integers(0, img.shape[1], 60)
    img[ys, xs] = 0  # isolated black pixels
    assert coverage.gaps(img, words, dpi=DPI) == []


def test_an_illustration_or_a_rule_is_no_missing_text() -> None:
    img, words = _page()
    h = coverage.line_height(words)
    img[img.shape[0] - 8 * h : img.shape[0] - 2 * h : 3, 10 : 8 * h] = (
        0  # a hatched drawing, 6 lines high
    )
    img[-h : -h + 2, 10:-10] = 0  # a thin rule across the page
    assert coverage.gaps(img, words, dpi=DPI) == []


def test_text_rebuilt_with_the_reread_line_in_place() -> None:
    _, words = _page()
    kept = [w for w in words if w.line != 2]
    line2 = [w for w in words if w.line == 2]
    gap = Gap(min(w.top for w in line2), max(w.top + w.height for w in line2), 0, 600)
    text = coverage.text_with_lines(kept, [(gap, LINES[1])])
    assert text.splitlines() == LINES


def test_tsv_parsing_keeps_words_with_text_only() -> None:
    tsv = (
        "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n"
        "4\t1\t1\t1\t1\t0\t10\t10\t100\t20\t-1\t\n"
        "5\t1\t1\t1\t1\t1\t10\t10\t40\t20\t91.5\tשלום\n"
        "5\t1\t1\t1\t1\t2\t60\t10\t40\t20\t95\t \n"
    )
    (word,) = coverage.parse_tsv(tsv)
    assert (word.text, word.conf, word.left, word.height) == ("שלום", 91.5, 10, 20)


def test_gate_refuses_missing_lines_with_a_stable_reason() -> None:
    text = "The opening line of the page\nand a third line closing the paragraph\n" * 3
    ok = assess(GateInput(text=text, origin="ocr", confidence=90.0))
    missing = assess(GateInput(text=text, origin="ocr", confidence=90.0, missing_lines=1))
    assert ok.ok and "text_missing" not in ok.reasons
    assert not missing.ok and "text_missing" in missing.reasons
    # one unread line (a label in a figure) of a long page is said, not refused: > 3 % of the lines refuses
    long_page = "".join(
        f"Line {n} of the page, read with confidence ({n * 7} words)\n" for n in range(60)
    )
    one = assess(GateInput(text=long_page, origin="ocr", confidence=94.0, missing_lines=1))
    assert one.ok and "text_missing" in one.warnings and one.metrics["missing_lines"] == 1
    two = assess(GateInput(text=long_page, origin="ocr", confidence=94.0, missing_lines=2))
    assert not two.ok and "text_missing" in two.reasons
    # the calibrated floor (bench/eval_ocr.py): readings with CER > 0.15 there had confidence ≤ 81.84
    assert "low_confidence" in assess(GateInput(text=text, origin="ocr", confidence=72.0)).reasons


@pytest.mark.slow
def test_engine_rereads_a_line_tesseract_did_not_return(tmp_path: Path) -> None:
    """Real Tesseract: the page's TSV minus one line; the gap is re-read and put back in place."""
    from pagefleet.workers.engines.tesseract import recognise
    from pagefleet.workers.engines.tesseract_read import ReadPlan, fill_gaps

    img, _ = _page(dpi=200)
    png = tmp_path / "page.png"
    scan_prep.save_gray(img, str(png), 200)
    _, tsv = recognise(str(png), "eng", 3, 200, tmp_path, "page")
    words = coverage.parse_tsv(tsv)
    assert {w.line for w in words} | {w.par for w in words}
    second = [w for w in words if "second" in w.text]
    assert second
    kept = [
        w
        for w in words
        if (w.block, w.par, w.line) != (second[0].block, second[0].par, second[0].line)
    ]
    extra, _, missing = fill_gaps(
        img, kept, "eng", 200, ReadPlan.from_options({}), tmp_path, recognise
    )
    assert missing == 0 and len(extra) == 1
    text = coverage.text_with_lines(kept, extra)
    assert [line for line in text.splitlines() if line] == LINES


@pytest.mark.slow
def test_engine_deskews_before_reading(tmp_path: Path) -> None:
    from pagefleet.workers.cli.error_rates import cer
    from pagefleet.workers.engines.base import PageImage
    from pagefleet.workers.engines.tesseract import TesseractEngine

    img, _ = _page(dpi=200)
    skewed = ocr_truth.degrade(img, Variant("s", 200, skew=-3.0), np.random.default_rng(0), None)
    png = tmp_path / "skewed.png"
    scan_prep.save_gray(skewed, str(png), 200)
    out = TesseractEngine("eng").read([PageImage(str(png), 1, 200)], script="latin")[0]
    assert out.details["skew"] == pytest.approx(-3.0, abs=0.25)
    assert cer(out.text, "\n".join(LINES)) < 0.05


def test_scanned_page_renders_at_its_own_resolution_pixel_for_pixel(tmp_path: Path) -> None:
    from pagefleet.workers.pdf.mupdf import render

    variant = Variant("noise150", 150, noise=10)
    page = ocr_truth.make_page(tmp_path, 1, "he", variant, seed=12)
    info = render(str(tmp_path / page.pdf), 1, 300, str(tmp_path / "r.png"))
    assert info["dpi"] == 150 and info["native_dpi"] == 150
    assert np.array_equal(
        scan_prep.load_gray(str(tmp_path / "r.png")), scan_prep.load_gray(str(tmp_path / page.png))
    )


def test_vector_page_renders_at_the_requested_resolution(tmp_path: Path) -> None:
    from pagefleet.workers.pdf.mupdf import render

    doc = pymupdf.open()
    doc.new_page(width=200, height=100).insert_text((20, 50), "vector text")
    doc.save(tmp_path / "v.pdf")
    info = render(str(tmp_path / "v.pdf"), 1, 300, str(tmp_path / "v.png"))
    assert (
        info["dpi"] == 300
        and info["native_dpi"] is None
        and abs(info["width"] - 200 * 300 / 72) <= 1
    )


@pytest.mark.parametrize(
    "shape, dpi", [((3509, 2480), 300), ((2339, 1653), 200), ((1754, 1240), 150), ((7, 5), 300)]
)
def test_shrink_keeps_the_darkest_pixel_of_each_block(shape: tuple[int, int], dpi: int) -> None:
    """The skew probe's shrink (strided minimums) equals the block minimum it stands for."""
    img = np.random.default_rng(7).integers(0, 256, shape, dtype=np.uint8)
    step = max(1, round(dpi / scan_prep.PROBE_DPI))
    h, w = shape[0] // step * step, shape[1] // step * step
    expected = img[:h, :w].reshape(h // step, step, w // step, step).min(axis=(1, 3))
    assert np.array_equal(scan_prep._shrink(img, dpi), expected)


def test_histogram_and_coverage_cells_equal_their_definitions() -> None:
    """The fast forms (PIL's histogram, strided cell sums) give numpy's reference results exactly."""
    rng = np.random.default_rng(3)
    for shape in ((2339, 1653), (13, 7), (3, 3)):
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        assert np.array_equal(
            scan_prep.grey_histogram(img), np.bincount(img.ravel(), minlength=256)
        )
        assert np.array_equal(
            scan_prep.grey_histogram(img[::2, 1::3]),
            np.bincount(img[::2, 1::3].ravel(), minlength=256),
        )
        ink = img < 80
        h, w = shape[0] // coverage.CELL * coverage.CELL, shape[1] // coverage.CELL * coverage.CELL
        cell = coverage.CELL
        expected = ink[:h, :w].reshape(h // cell, cell, w // cell, cell).sum(axis=(1, 3))
        assert np.array_equal(coverage._cells(ink), expected)
    assert coverage._cells(np.ones((8, 8), dtype=bool)).tolist() == [[16, 16], [16, 16]]


def _column_words(x0: int, first_block: int, texts: list[str]) -> list[coverage.Word]:
    return [
        coverage.Word(first_block + i, 1, 1, x0, 100 + 40 * i, 300, 30, 95.0, t)
        for i, t in enumerate(texts)
    ]


def test_a_latin_reading_with_rtl_languages_gets_its_columns_left_to_right() -> None:
    """Tesseract with heb+ara+eng laid out an English two-column page right column first."""
    from pagefleet.workers.engines.tesseract_read import latin_order

    left = _column_words(100, 1, ["Introduction", "The first column", "ends here"])
    right = _column_words(900, 4, ["Second column", "continues", "and ends"])
    fixed = latin_order(right + left, "heb+ara+eng")
    assert fixed is not None and [w.text for w in fixed] == [w.text for w in left + right]
    assert latin_order(left + right, "heb+ara+eng") is None  # already left to right
    assert latin_order(right + left, "eng") is None  # no RTL language: Tesseract's own order
    hebrew = _column_words(900, 4, ["שלום", "עולם", "ends"])
    assert latin_order(hebrew + left, "heb+ara+eng") is None  # an RTL page keeps its RTL columns


def test_stray_rtl_letters_on_a_latin_reading_are_read_again_in_its_latin_languages(
    tmp_path: Path,
) -> None:
    """Real Tesseract: a Latin page whose multilingual reading turned a word of one line into an
    Arabic letter (a speck, an italic `v1`): that line alone is read again by `eng`, in its place;
    the other lines are not read again."""
    from pagefleet.workers.engines.tesseract import recognise
    from pagefleet.workers.engines.tesseract_read import ReadPlan, latin_lines

    img, _ = _page(dpi=200)
    _, tsv = recognise(img, "eng", 3, 200, tmp_path, "page")
    words = coverage.parse_tsv(tsv)
    second = next(w for w in words if w.text == "second")
    misread = [
        Word(w.block, w.par, w.line, w.left, w.top, w.width, w.height, 91.0, "ل")
        if w is second
        else w
        for w in words
    ]
    calls: list[str] = []

    def counted(image, langs, *args, **kwargs):  # the real recognise, each call's languages noted
        calls.append(langs)
        return recognise(image, langs, *args, **kwargs)

    fixed = latin_lines(
        img, misread, "heb+ara+eng", 200, ReadPlan.from_options({}), tmp_path, counted
    )
    assert fixed is not None and fixed[1] == 1 and calls == ["eng"]
    assert [line for line in coverage.text_with_lines(fixed[0], []).splitlines() if line] == LINES
    key = (second.block, second.par, second.line)
    before = {w.text: w for w in words if (w.block, w.par, w.line) == key}
    after = [w for w in fixed[0] if (w.block, w.par, w.line) == key]
    assert [w.text for w in after] == list(before)
    for w in after:  # boxes in the page's pixels, not the crop's
        assert abs(w.left - before[w.text].left) <= 4 and abs(w.top - before[w.text].top) <= 4


def test_only_a_latin_reading_with_rtl_languages_and_few_rtl_lines_is_read_again(
    tmp_path: Path,
) -> None:
    from pagefleet.workers.engines.tesseract_read import ReadPlan, latin_lines

    def never(*args, **kwargs):
        raise AssertionError("no re-read expected")

    plan = ReadPlan.from_options({})
    img, words = _page(dpi=150)
    marked = [
        Word(w.block, w.par, w.line, w.left, w.top, w.width, w.height, 90.0, w.text + "ש")
        if w.text == "line"
        else w
        for w in words
    ]
    assert (
        latin_lines(img, words, "heb+ara+eng", 150, plan, tmp_path, never) is None
    )  # no RTL letter
    assert (
        latin_lines(img, marked, "eng", 150, plan, tmp_path, never) is None
    )  # no RTL language: nothing to drop
    assert (
        latin_lines(img, marked, "heb", 150, plan, tmp_path, never) is None
    )  # no Latin language to read with
    hebrew = [
        Word(w.block, w.par, w.line, w.left, w.top, w.width, w.height, 90.0, "שלום") for w in words
    ]
    assert (
        latin_lines(img, hebrew, "heb+eng", 150, plan, tmp_path, never) is None
    )  # a Hebrew reading
    many = [
        Word(1, 1, n, 10, 20 * n, 40, 15, 90.0, text)
        for n in range(1, 11)
        for text in ("word", "more", "ש")
    ]
    assert (
        latin_lines(img, many, "heb+eng", 150, plan, tmp_path, never) is None
    )  # ten such lines: a mixed page


def test_a_latin_re_read_must_keep_the_lines_other_words() -> None:
    """`chapter ل` (a decorated heading) re-read as `LE cnaples a = =` is no fix; a line whose
    neighbour of the speck reads differently (`.` as `o.x`) still is."""
    from pagefleet.workers.engines.tesseract_read import _keeps_latin_words

    def line(text: str) -> list[Word]:
        return [Word(1, 1, 1, 10 * i, 0, 8, 10, 90.0, t) for i, t in enumerate(text.split())]

    assert not _keeps_latin_words(line("chapter ل"), line("LE cnaples a = ="))
    assert _keeps_latin_words(
        line("can generate LIR that reads عد . ס with just two or three loads: one to"),
        line("can generate LIR that reads o.x with just two or three loads: one to"),
    )
    assert not _keeps_latin_words(line("ל ש"), line("l w"))  # nothing Latin to hold on to
    assert not _keeps_latin_words(line("one two three four ש"), line("one tvvo thrce f0ur"))


def test_an_accepted_reading_says_which_lines_another_language_list_read() -> None:
    """Provenance: the page's attempt carries what the engine did beyond its one reading."""
    from pagefleet.routing import chains
    from pagefleet.workers.ladder.ocr_chain import PageWork, _judge
    from pagefleet.workers.model import PendingPage, Rung

    text = "\n".join(LINES * 6) + "\n"
    work = PageWork(
        pending=PendingPage(number=3),
        gpu=False,
        decision=chains.RouteDecision("latin", "osd", 0.05, ("tesseract:heb+ara+eng",)),
    )
    _judge(
        work,
        text,
        "tesseract:heb+ara+eng",
        Rung.OCR,
        1.0,
        95.0,
        detail="2 line(s) with stray RTL letters re-read without the RTL languages",
    )
    assert work.record is not None and work.record.route == "ocr"
    assert work.record.attempts[-1].accepted
    assert (
        work.record.attempts[-1].detail
        == "2 line(s) with stray RTL letters re-read without the RTL languages"
    )
