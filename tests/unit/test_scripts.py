"""The text-layer classifier (seed 003's cases, Hebrew added)."""

from __future__ import annotations

import pytest

from pagefleet.routing.scripts import ClassifierThresholds, classify_text_layer, script_stats


def test_pure_english() -> None:
    d = classify_text_layer("The quick brown fox jumps over the lazy dog. " * 5)
    assert d.script == "latin" and d.margin == pytest.approx(0.05)


def test_pure_arabic() -> None:
    d = classify_text_layer("مرحبا بالعالم هذه وثيقة اختبار")
    assert d.script == "ar" and d.margin == pytest.approx(0.5)


def test_pure_hebrew() -> None:
    d = classify_text_layer("שלום עולם זהו מסמך בדיקה")
    assert d.script == "he" and d.margin == pytest.approx(0.5)


def test_mixed_is_undecided() -> None:
    d = classify_text_layer("Revenue grew ההכנסות עלו by twelve percent בשנה")
    assert d.script is None and d.observed() == "mixed"


@pytest.mark.parametrize("text", ["", "   \n\t  ", "2024 15.3% 1,000 -- ()"])
def test_empty_whitespace_numbers_are_undecided(text: str) -> None:
    d = classify_text_layer(text)
    assert d.script is None and d.margin is None and d.observed() == "unknown"


def test_arabic_presentation_forms_count_as_arabic() -> None:
    d = classify_text_layer("ﺍﻟﻌﺮﺑﻴﺔ ﻣﻘﺪﻣﺔ ﺍﻟﻔﺼﻞ")  # U+FExx forms only
    assert d.script == "ar"
    assert script_stats("ﻻ ﻣﺮﺣﺒﺎ").ar == 6


def test_hebrew_presentation_forms_count_as_hebrew() -> None:
    assert script_stats("שּׁ").he == 1 and classify_text_layer("שּׁלום").script == "he"


def test_borderline_latin_threshold_is_strict() -> None:
    # exactly 95% Latin is not > 95%: undecided; one more Latin letter decides it
    assert classify_text_layer("a" * 95 + "ب" * 5).script is None
    assert classify_text_layer("a" * 96 + "ب" * 4).script == "latin"


def test_borderline_rtl_threshold_is_strict() -> None:
    assert classify_text_layer("ש" * 50 + "a" * 50).script is None
    assert classify_text_layer("ש" * 51 + "a" * 49).script == "he"


def test_private_use_glyphs_never_count_as_latin() -> None:
    # seed 003's bug: PUA glyphs report bidi class "L"; they must not inflate the Latin count
    text = "\uf061\uf062\uf063" * 100 + " مرحبا بالعالم"
    stats = script_stats(text)
    assert stats.latin == 0 and stats.pua == 300
    assert classify_text_layer(text).script == "ar"


def test_thresholds_are_configurable() -> None:
    t = ClassifierThresholds(latin_min_share=0.8, rtl_min_share=0.3)
    assert classify_text_layer("a" * 85 + "ب" * 15, t).script == "latin"
    assert classify_text_layer("ש" * 35 + "a" * 65, t).script == "he"
