"""The benchmark's own arithmetic and verdict rules."""

from __future__ import annotations

import pytest

from pagefleet.workers.cli.error_rates import bag_error, cer
from pagefleet.workers.cli.evaluate import judge_page, mirror_line


def test_cer_folds_whitespace_and_nfkc() -> None:
    assert cer("שלום   עולם\n", "שלום עולם") == 0.0
    assert cer("ﻻ", "لا") == 0.0
    assert cer("abcd", "abce") == pytest.approx(0.25)


def test_bag_error_ignores_order() -> None:
    assert bag_error("b a c", "a b c") == 0.0
    assert bag_error("", "a b") == 1.0
    assert bag_error("a b", "a b c d") == pytest.approx(1 - 2 * 1.0 * 0.5 / 1.5)


@pytest.mark.parametrize(
    "label, route, seen, ok",
    [
        ("good", "text_layer", [], True),
        ("good", "ocr", [], False),
        ("needs_normalization", "text_layer_repaired", [], True),
        ("garbage", "text_layer", [], False),
        ("garbage", "ocr", [], True),
        ("garbage", "review_required", [], True),
        ("reversed", "text_layer", [], False),
        ("reversed", "text_layer_repaired", ["visual_order_rtl"], True),
        ("none", "ocr", [], True),
        ("none", "text_layer", [], False),
    ],
)
def test_verdict_rules(label: str, route: str, seen: list[str], ok: bool) -> None:
    assert judge_page(label, route, seen)[1] is ok


def test_synthetic_mirroring_is_its_own_inverse() -> None:
    line = 'מספר החשבון הוא 12345 והסכום 250 ש"ח'
    assert mirror_line(line) != line
    assert mirror_line(mirror_line(line)) == line
