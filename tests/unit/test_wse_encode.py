"""Word Shape Encoding: the encoded page is mirrored, English-looking, and its mapping is complete."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pymupdf
import pytest

from pagefleet.routing.scripts import is_rtl_letter
from pagefleet.routing.wse import needs_token
from pagefleet.workers.errors import InvalidPdfError
from pagefleet.workers.wse.encode import encode_pdf
from pagefleet.workers.wse.mapping import Mapping, mapping_path
from pagefleet.workers.wse.words import page_words

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"


def _fixture_module():
    spec = importlib.util.spec_from_file_location(
        "make_wse_fixtures", ROOT / "fixtures" / "make_wse_fixtures.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def wse_pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Generated Hebrew and Arabic table pages (fixtures/make_wse_fixtures.py) with their truth."""
    make = _fixture_module()
    out = tmp_path_factory.mktemp("wse")
    wanted = {"wse_he_ruled", "wse_ar_plain"}
    return {spec[0]: make.build(*spec, out) for spec in make.SPECS if spec[0] in wanted}


def _rtl_letters(text: str) -> int:
    return sum(is_rtl_letter(ch) for ch in text)


@pytest.mark.parametrize("name", ["wse_he_ruled", "wse_ar_plain"])
def test_encoded_page_holds_tokens_only_and_a_complete_mapping(wse_pages, tmp_path, name):
    src = wse_pages[name]
    result = encode_pdf(str(src), str(tmp_path / "enc.pdf"))
    with pymupdf.open(result.pdf) as doc:
        text = doc[0].get_text()
    assert _rtl_letters(text) == 0
    mapping = Mapping.load(mapping_path(result.pdf))
    assert mapping.pages == [1] and mapping.collisions == 0
    with pymupdf.open(src) as doc:
        originals = {w.text for w in page_words(doc[0]) if needs_token(w.text)}
    assert {entry["word"] for entry in mapping.tokens.values()} == originals
    drawn = set(text.split())
    assert set(mapping.tokens) <= drawn  # every token is on the page, as one word
    assert not set(mapping.tokens) & {w.lower() for w in mapping.passthrough}


def test_words_land_mirrored_with_size_and_weight_kept(wse_pages, tmp_path):
    src = wse_pages["wse_he_ruled"]
    result = encode_pdf(str(src), str(tmp_path / "enc.pdf"))
    with pymupdf.open(src) as doc:
        width = doc[0].rect.width
        words = page_words(doc[0])
    with pymupdf.open(result.pdf) as doc:
        spans = {
            s["text"].strip(): s
            for b in doc[0].get_text("dict")["blocks"]
            for line in b.get("lines", [])
            for s in line["spans"]
        }
    header = next(w for w in words if w.text == "2012")  # a bold header cell
    span = spans["2012"]
    assert span["bbox"][0] == pytest.approx(width - header.end[0], abs=0.5)
    assert span["size"] == pytest.approx(header.size, abs=0.1)
    assert span["flags"] & pymupdf.TEXT_FONT_BOLD
    token = result.mapping.token_for(next(w.text for w in words if needs_token(w.text)))
    assert token in spans


def test_vector_graphics_are_mirrored(wse_pages, tmp_path):
    src = wse_pages["wse_he_ruled"]
    result = encode_pdf(str(src), str(tmp_path / "enc.pdf"))

    def vertical_rules(path):
        with pymupdf.open(path) as doc:
            width = doc[0].rect.width
            xs = set()
            for d in doc[0].get_drawings():
                for item in d["items"]:
                    if item[0] == "l" and abs(item[1].x - item[2].x) < 0.1:
                        xs.add(round(item[1].x, 1))
                    elif item[0] == "re" and item[1].width < 2:
                        xs.add(round((item[1].x0 + item[1].x1) / 2, 1))
            return xs, width

    before, width = vertical_rules(src)
    after, _ = vertical_rules(result.pdf)
    assert len(before) >= 5
    assert {round(width - x, 1) for x in before} == after


def test_page_selection_and_bad_input(wse_pages, tmp_path):
    with pytest.raises(InvalidPdfError):
        encode_pdf(str(wse_pages["wse_he_ruled"]), str(tmp_path / "x.pdf"), [2])
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"%PDF-1.4 nothing else")
    with pytest.raises(InvalidPdfError):
        encode_pdf(str(bad), str(tmp_path / "y.pdf"))


@pytest.mark.skipif(
    not (CORPUS / "he_macro_table_ghostscript.pdf").exists(), reason="corpus not present"
)
def test_corpus_hebrew_table_encodes_to_english_words_only(tmp_path):
    result = encode_pdf(str(CORPUS / "he_macro_table_ghostscript.pdf"), str(tmp_path / "macro.pdf"))
    with pymupdf.open(result.pdf) as doc:
        text = doc[0].get_text()
    assert _rtl_letters(text) == 0
    letters = [w for w in text.split() if w.isalpha()]
    assert len(letters) > 100 and all(w.isascii() for w in letters)
    side = json.loads(Path(result.mapping_path).read_text(encoding="utf-8"))
    assert side["tokens"] and all(_rtl_letters(e["word"]) for e in side["tokens"].values())


def test_images_are_mirrored(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=300)
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 8, 8), False)
    pix.clear_with(200)
    page.insert_image(pymupdf.Rect(20, 40, 120, 90), pixmap=pix)
    page.insert_text((300, 60), "Total", fontsize=12)
    src = tmp_path / "image.pdf"
    doc.save(src)
    doc.close()
    result = encode_pdf(str(src), str(tmp_path / "enc.pdf"))
    with pymupdf.open(result.pdf) as enc:
        boxes = [pymupdf.Rect(info["bbox"]) for info in enc[0].get_image_info()]
        words = enc[0].get_text("words")
    assert len(boxes) == 1
    assert (boxes[0].x0, boxes[0].y0, boxes[0].x1, boxes[0].y1) == pytest.approx(
        (280, 40, 380, 90), abs=0.5
    )
    assert [w[4] for w in words] == ["Total"] and words[0][2] == pytest.approx(
        100, abs=0.5
    )  # 400 − 300
