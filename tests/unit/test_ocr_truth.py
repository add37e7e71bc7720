"""The OCR ground-truth generator (bench/ocr_truth.py) and the benchmark's arithmetic
(bench/eval_ocr.py): seeded pages come out identical, every variant is what it says, the image-only
PDF holds the image at its DPI, and the table's groups and closing line are computed right."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pymupdf
import pytest

from bench import eval_ocr, ocr_truth
from bench.ocr_truth import VARIANTS, Variant
from pagefleet.workers.cli.error_rates import cer, wer
from pagefleet.workers.engines.scan_prep import estimate_skew, load_gray


def _digest(path: Path) -> str:
    return hashlib.sha256(load_gray(str(path)).tobytes()).hexdigest()


def test_plan_covers_every_kind_variant_and_at_least_60_pages() -> None:
    full, quick = ocr_truth.plan(), ocr_truth.plan(quick=True)
    assert len(full) >= 60
    assert {v.name for _, _, v in full} == {v.name for v in VARIANTS}
    assert {k for _, k, _ in full} == {"he", "ar", "en", "mixed_he", "mixed_ar"}
    assert {v.name for _, _, v in quick} == {
        v.name for v in VARIANTS
    }  # quick: every degradation once
    assert {v.dpi for _, _, v in quick} == {150, 200, 300}
    assert {i for i, _, _ in quick} <= {i for i, _, _ in full}


def test_same_seed_same_pages_other_seed_other_text(tmp_path: Path) -> None:
    variant = next(v for v in VARIANTS if v.name == "skew+1.5_jpeg200")
    made = {}
    for name, seed in (("a", 12), ("b", 12), ("c", 13)):
        (tmp_path / name).mkdir()
        made[name] = ocr_truth.make_page(tmp_path / name, 7, "he", variant, seed=seed)
    a, b, c = made["a"], made["b"], made["c"]
    assert a == b
    assert _digest(tmp_path / "a" / a.png) == _digest(tmp_path / "b" / b.png)
    assert (tmp_path / "a" / a.pdf).read_bytes() == (tmp_path / "b" / b.pdf).read_bytes()
    assert c.text != a.text


def test_page_text_is_logical_known_sentences(tmp_path: Path) -> None:
    page = ocr_truth.make_page(tmp_path, 48, "mixed_he", VARIANTS[0], seed=12)
    from bench.ocr_texts import ENGLISH, MIXED_HEBREW

    known = set(ENGLISH) | set(MIXED_HEBREW)
    sentences = [s for p in page.text.split("\n")[1:] for s in ocr_truth._sentences(p)]
    assert sentences and all(s in known for s in sentences)
    assert any(s in ENGLISH for s in sentences) and any(s in MIXED_HEBREW for s in sentences)
    assert page.langs == "heb+eng"


def test_image_only_pdf_holds_the_image_at_its_dpi(tmp_path: Path) -> None:
    variant = next(v for v in VARIANTS if v.dpi == 150 and v.jpeg)
    page = ocr_truth.make_page(tmp_path, 3, "ar", variant, seed=12)
    with pymupdf.open(tmp_path / page.pdf) as doc:
        pdf_page = doc[0]
        assert pdf_page.get_text().strip() == ""
        (info,) = pdf_page.get_image_info()
        inches = pdf_page.rect.width / 72
        assert info["width"] / inches == pytest.approx(150, abs=0.5)
        xref = pdf_page.get_images()[0][0]
        assert doc.extract_image(xref)["ext"] in ("jpeg", "jpg")  # a JPEG scan stays a JPEG


def test_degradations_do_what_they_say() -> None:
    clean, _ = ocr_truth.render_text(
        ["heading", "one line of English text for the test"],
        "en",
        "ltr",
        150,
        "DejaVuSans.ttf",
        12.0,
    )
    rng = np.random.default_rng(1)
    low = ocr_truth.degrade(clean, Variant("low", 150, contrast=0.4), rng, None)
    assert low.min() > 100 and low.max() <= 236  # grey ink on grey paper
    noisy = ocr_truth.degrade(
        clean, Variant("noise", 150, noise=20), np.random.default_rng(1), None
    )
    assert noisy.std() > clean.std()
    skewed = ocr_truth.degrade(clean, Variant("skew", 150, skew=2.5), rng, None)
    assert estimate_skew(skewed, 150) == pytest.approx(2.5, abs=0.3)
    assert estimate_skew(clean, 150) == pytest.approx(0.0, abs=0.3)


def test_metrics_fold_whitespace_and_count_words() -> None:
    ref = "שלום  עולם\nhello world"
    assert cer("שלום עולם hello world", ref) == 0.0
    assert wer("שלום עולם hello", ref) == pytest.approx(0.25)
    assert wer("", ref) == 1.0
    assert eval_ocr.strip_marks("\u200eNetflix\u200f") == "Netflix"


def _row(kind: str, dpi: int, degr: list[str], fleet: float, tess: float, conf: float) -> dict:
    cell = {"cer": 0.0, "wer": 0.0, "bag": 0.0, "accepted": True, "reasons": []}
    return {
        "id": kind,
        "kind": kind,
        "dpi": dpi,
        "degradations": degr,
        "fleet": {**cell, "cer": fleet, "confidence": conf},
        "tesseract": {**cell, "cer": tess, "confidence": None},
    }


def test_groups_calibration_and_closing_line() -> None:
    rows = [
        _row("he", 150, ["skew"], 0.1, 0.3, 80.0),
        _row("ar", 300, ["clean"], 0.3, 0.1, 60.0),
        _row("en", 300, ["blur", "jpeg"], 0.0, 0.0, 95.0),
    ]
    by_label = dict(eval_ocr.groups(rows))
    assert (
        len(by_label["300 dpi"]) == 2 and len(by_label["jpeg"]) == 1 and len(by_label["all"]) == 3
    )
    assert eval_ocr.mean(rows, "fleet", "cer") == pytest.approx(0.4 / 3)
    calib = eval_ocr.calibration(rows)
    assert calib["safe_floor"] == pytest.approx(60.01)  # the only page over 0.15 has confidence 60
    runs = {"fleet": eval_ocr.SystemRun({}, 2.0), "tesseract": eval_ocr.SystemRun({}, 1.0)}
    runs["fleet"].readings = {"a": eval_ocr.Reading("x"), "b": eval_ocr.Reading("y")}
    runs["tesseract"].readings = {"a": eval_ocr.Reading("x"), "b": eval_ocr.Reading("y")}
    line = eval_ocr.closing_line(rows, runs)
    assert (
        line
        == "cer_fleet=0.1333 cer_tesseract=0.1333 fleet_pages_per_s=1.0000 tesseract_pages_per_s=2.0000"
    )


def test_degradation_names_match_variants() -> None:
    assert eval_ocr.degradations("clean300") == ["clean"]
    assert eval_ocr.degradations("worn300") == [
        "blur",
        "noise",
        "skew",
        "jpeg",
        "low contrast",
        "show-through",
    ]
    json.dumps([eval_ocr.degradations(v.name) for v in VARIANTS])
