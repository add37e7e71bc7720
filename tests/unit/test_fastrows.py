"""The rows read in C (pagefleet/workers/pdf/stextrows.c, through pagefleet/workers/pdf/fastrows.py) give rung 1 exactly
the Python path's answer (`mupdf.glyph_evidence`: rawdict, `glyphlines.read_rows`, the evidence of
its rows): text, rows and their directions, gap repairs and unresolved rows, page by page, on the
generated fixtures, the documents real producers print (LibreOffice, Chromium, fpdf2) and the
corpus where it is there. Where the C path declines a page the Python path reads it; on the
producers' Hebrew, Arabic and Persian pages it declines none."""

from __future__ import annotations

import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from pagefleet.routing.bidi_order import attachment_faults, logical_order
from tests.conftest import CORPUS
from tests.unit.test_fastwalk import documents
from pagefleet.workers.pdf import fastrows, fastwalk, mupdf

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
pytestmark = pytest.mark.skipif(
    fastwalk.library() is None and shutil.which("cc") is None,
    reason="no C compiler here: rung 1 takes the Python path",
)


def _textpages(*folders: Path) -> Iterator[tuple[str, pymupdf.TextPage]]:
    for doc in documents(*folders):
        for number in range(doc.page_count):
            try:
                page = doc.load_page(number)
            except Exception:
                continue
            for flags in (mupdf._TEXT_FLAGS, mupdf._TEXT_FLAGS | pymupdf.TEXT_PRESERVE_IMAGES):
                yield f"{Path(doc.name).name}:{number + 1}", page.get_textpage(flags=flags)


def _compare(folders: list[Path]) -> dict[str, int]:
    """Every page's C answer against the Python path's; the counts of what was seen."""
    seen = {"pages": 0, "declined": 0, "rtl": 0, "rtl_declined": 0, "rows": 0, "gaps": 0}
    for name, textpage in _textpages(*folders):
        walked = fastrows.evidence(textpage)
        python: dict[str, Any] = mupdf.glyph_evidence(textpage)[0]
        assert walked is None or walked == python, name
        rtl = "R" in fastwalk.glyph_kinds(python["text"])
        seen["pages"] += 1
        seen["declined"] += walked is None
        seen["rtl"] += rtl
        seen["rtl_declined"] += rtl and walked is None
        seen["rows"] += bool(python.get("glyph_rows"))
        seen["gaps"] += len(python.get("gap_repairs", []))
    return seen


def test_the_library_reads_rows() -> None:
    assert fastwalk.library() is not None, "run `make native` (make setup builds the C text walk)"


def test_every_page_reads_its_rows_as_the_python_path(
    fixtures_dir: Path, structure_dir: Path
) -> None:
    seen = _compare([fixtures_dir, structure_dir] + ([CORPUS] if CORPUS.is_dir() else []))
    assert seen["pages"] > 50 and seen["rtl"] > 10 and seen["rows"] > 5, seen
    assert seen["declined"] == 0, seen  # none of these pages needs the rawdict


@pytest.fixture(scope="module")
def producer_docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One document per producer and script (fixtures/make_producer_docs.py)."""
    from fixtures.make_producer_docs import ProducerError, generate

    out = tmp_path_factory.mktemp("producers")
    try:
        generate(out, fonts=("dejavu",))
    except ProducerError as exc:  # LibreOffice, Chromium or a font missing: nothing to compare
        pytest.skip(f"the producers are not installed here: {exc}")
    return out


def test_producer_pages_read_in_c_as_in_python(producer_docs: Path) -> None:
    seen = _compare([producer_docs])
    assert seen["rtl"] >= 12 and seen["rows"] >= 12 and seen["gaps"] > 0, seen
    assert seen["rtl_declined"] == 0, seen


def test_a_page_without_rtl_letters_is_the_walks_evidence(fixtures_dir: Path) -> None:
    for name, textpage in _textpages(fixtures_dir):
        python = mupdf.glyph_evidence(textpage)[0]
        if "R" not in fastwalk.glyph_kinds(python["text"]):
            assert fastrows.evidence(textpage) == fastwalk.evidence(textpage) == python, name


# what a row holds: Hebrew, Arabic and Persian letters and digits, Latin, marks, brackets, the
# punctuation the faults look at, bullets, spaces of several kinds, a ZWNJ (FriBidi leaves it)
_POOL = (
    list("אבגדהוזחטיכלמנסעפצקרשת")
    + list("ابتثجحخدذرزسشصضطظعغفقكلمنهوي")
    + list("0123456789٠١٢٣٤٥٦٧٨٩۱۲۳²_")
    + list("abcXYZ")
    + list("()[]{}<>.,:;!?-+%$₪€/\\#@&*=|~^\"'،؛؟«»•◦▪●")
    + [" "] * 8
    + ["\u05b0", "\u064e", "\u200c", "\t", "\u00a0", "ـ"]
)


def _random_lines(seed: int, count: int) -> Iterator[str]:
    rng = random.Random(seed)
    for _ in range(count):
        yield "".join(rng.choice(_POOL) for _ in range(rng.randint(1, 30)))


def test_fribidi_orders_as_python_bidi() -> None:
    for line in _random_lines(7, 3000):
        for rtl in (True, False):
            assert fastrows.reading_order(list(line), rtl) == logical_order(list(line), rtl)[0], (
                line,
                rtl,
            )


def test_the_faults_counted_in_c_are_the_regexs() -> None:
    lib = fastwalk.library()
    every_kind = [  # each alternative of the regex, matched and just missed
        "מילה :שם",
        "( x",
        "a(b",
        "(a)b",
        "x ,y",
        "x ,1",
        ". start",
        "  ,  x",
        ",",
        "item •",
        "item •  ",
        " •",
        "word 12. word",
        "word 1234. word",
        "a 3) b",
        "a\t2.b",
        "א ١. ב",
        "a 12 . b",
        "_(x",
    ]
    for line in [*every_kind, *_random_lines(11, 5000)]:
        bits = fastrows.CHAR_BITS.apply(line).encode("latin-1")
        found = lib.pf_faults(line.encode("utf-32-le"), bits, len(line))
        assert found == attachment_faults(line), line


_WORDS = (
    "שלום עולם פתח תקווה הפגישה נקבעה ליום בשעה במשרד (באנגלית) [הערה] {סוגריים} "
    "مرحبا بالعالم القاهرة الاجتماع يوم الساعة (بالإنجليزية) لا لأ "
    "DevOps English https://example.com/docs a@b.org 12.5% 054-5715512 12:00 2025-01-15 "
    "₪ 250,000 ١٢٣ ۴۵ -4.3 4.5%- : , . ; ! ? ، ؛ ؟ • ◦ 1. 2) א. ה-12 שָׁלוֹם"
).split()


def _random_pdf(path: Path, seed: int) -> Path:
    """Pages of random mixed-direction lines: some drawn whole, some word by word from right to
    left with gaps of their own (as Chromium and Word draw them), at a few sizes and margins."""
    rng = random.Random(seed)
    font = pymupdf.Font(fontfile=str(DEJAVU))
    doc = pymupdf.open()
    for _ in range(3):
        page = doc.new_page()
        page.insert_font(fontname="dv", fontfile=str(DEJAVU))
        y = 40.0
        while y < 780:
            words = [rng.choice(_WORDS) for _ in range(rng.randint(1, 9))]
            size = rng.choice([8, 10, 11, 12])
            if rng.random() < 0.4:
                page.insert_text(
                    (rng.choice([40, 90]), y), " ".join(words), fontname="dv", fontsize=size
                )
            else:
                x = rng.choice([480.0, 540.0])
                for word in words:
                    x -= font.text_length(word, fontsize=size)
                    page.insert_text((x, y), word, fontname="dv", fontsize=size)
                    x -= rng.choice([0.0, 0.1, 0.3, 0.3, 0.5]) * size
            y += size * rng.choice([1.3, 1.6])
    doc.save(path)
    return path


@pytest.mark.skipif(not DEJAVU.exists(), reason="DejaVu Sans is not installed")
def test_random_rows_read_in_c_as_in_python(tmp_path: Path) -> None:
    for seed in range(6):
        _random_pdf(tmp_path / f"random{seed}.pdf", seed)
    seen = _compare([tmp_path])
    assert seen["rtl"] == seen["pages"] == 36 and seen["rtl_declined"] == 0, seen
    assert seen["rows"] == 36 and seen["gaps"] > 0, seen
