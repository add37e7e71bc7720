"""`paddle`: PP-OCRv4 through rapidocr_onnxruntime on rendered pages (its models ship in the wheel)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from pagefleet.workers.engines import paddle
from pagefleet.workers.engines.base import PageImage, create
from pagefleet.workers.errors import EngineCrashed, EngineUnavailable

BOX_H = 20.0


def _box(x: float, y: float, w: float = 50.0) -> list[list[float]]:
    return [[x, y], [x + w, y], [x + w, y + BOX_H], [x, y + BOX_H]]


def test_lines_are_ordered_by_rows_then_x() -> None:
    lines = [
        (_box(300, 102), "second-row-right", 0.9),
        (_box(10, 10), "first-row-left", 0.8),
        (_box(20, 100), "second-row-left", 0.7),
        (_box(200, 13), "first-row-right", 1.0),
    ]
    text, confidence = paddle.lines_to_text(lines)
    assert text == "first-row-left first-row-right\nsecond-row-left second-row-right"
    assert confidence == pytest.approx(85.0)
    rtl, _ = paddle.lines_to_text(lines, rtl=True)
    assert rtl == "first-row-right first-row-left\nsecond-row-right second-row-left"
    assert paddle.lines_to_text([]) == ("", None)


pytest.importorskip("PIL")
from PIL import Image, ImageDraw, ImageFont  # noqa: E402

needs_rapidocr = pytest.mark.skipif(
    importlib.util.find_spec("rapidocr_onnxruntime") is None,
    reason="rapidocr_onnxruntime is not installed",
)


@pytest.fixture(scope="module")
def english_page(tmp_path_factory: pytest.TempPathFactory) -> PageImage:
    font = ImageFont.load_default(size=36)
    image = Image.new("RGB", (640, 220), "white")
    draw = ImageDraw.Draw(image)
    draw.text((30, 30), "Invoice total amount", font=font, fill="black")
    draw.text((30, 130), "Quick brown fox", font=font, fill="black")
    path = tmp_path_factory.mktemp("paddle") / "english.png"
    image.save(path)
    return PageImage(str(path), 1, 150)


@needs_rapidocr
def test_reads_english_words_in_reading_order(english_page: PageImage) -> None:
    engine = create("paddle")
    assert engine.health().available
    [out] = engine.read([english_page], script="latin")
    assert out.engine == "paddle"
    words = out.text.lower().split()
    for word in ("invoice", "total", "amount", "quick", "brown", "fox"):
        assert word in words, out.text
    assert words.index("invoice") < words.index("quick")
    assert out.confidence is not None and out.confidence > 60
    assert out.details["lines"] >= 2 and out.seconds > 0


@needs_rapidocr
def test_blank_page_reads_nothing(tmp_path: Path) -> None:
    blank = tmp_path / "blank.png"
    Image.new("RGB", (200, 200), "white").save(blank)
    [out] = create("paddle").read([PageImage(str(blank), 2)], script="latin")
    assert out.text == "" and out.confidence is None


@needs_rapidocr
def test_pipeline_is_built_once_per_process(english_page: PageImage) -> None:
    create("paddle")._pipeline()
    before = dict(paddle._PIPELINES)
    assert create("paddle")._pipeline() is create("paddle:en")._pipeline()
    assert paddle._PIPELINES == before


@needs_rapidocr
def test_missing_page_is_a_crash(tmp_path: Path) -> None:
    with pytest.raises(EngineCrashed, match="does not exist"):
        create("paddle").read([PageImage(str(tmp_path / "gone.png"), 1)], script="latin")


@needs_rapidocr
def test_arabic_needs_a_recogniser_that_does_not_ship(english_page: PageImage) -> None:
    engine = create("paddle:arabic")
    health = engine.health()
    assert not health.available
    assert "rec_model_path" in health.detail and "rec_keys_path" in health.detail
    with pytest.raises(EngineUnavailable, match="ships only the ch/en recogniser"):
        engine.read([english_page], script="ar")


@needs_rapidocr
def test_arabic_with_a_recogniser_on_disk_is_available(tmp_path: Path) -> None:
    """The option wiring, with stand-in files (the shipped rec model; a dictionary file)."""
    import rapidocr_onnxruntime

    rec = Path(rapidocr_onnxruntime.__file__).parent / "models" / "ch_PP-OCRv4_rec_infer.onnx"
    keys = tmp_path / "arabic_dict.txt"
    keys.write_text("ا\nب\n", encoding="utf-8")
    health = create("paddle:arabic", rec_model_path=str(rec), rec_keys_path=str(keys)).health()
    assert health.available and str(rec) in health.detail


@needs_rapidocr
def test_unknown_variant_is_unavailable() -> None:
    health = create("paddle:hebrew").health()
    assert not health.available and "unknown variant" in health.detail
