"""Arabic text-layer signals: counts on real failure shapes, zeros on clean text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pagefleet.routing.arabic import (
    ArabicSignals,
    arabic_signals,
    elongation_repairs,
    fold_presentation_forms,
    lam_alef_positions,
    ligature_order_positions,
)

DEFECTS = (
    "presentation_forms", "decomposed_lam_alef", "ligature_order_suspects", "tatweel_runs",
    "tatweel_chars", "kashida_fffd", "isolated_letter_fragments", "isolated_letters",
    "foreign_letters_in_words", "control_chars_in_words",
)  # fmt: skip


def defects(signals: ArabicSignals) -> dict[str, int]:
    return {k: v for k, v in signals.to_dict().items() if k in DEFECTS and v}


def test_clean_arabic_has_no_defects() -> None:
    signals = arabic_signals("قائمة حزب الأمان: تسري أحكام هذا القانون لإلغاء الاتفاق إلى الآتي.")
    assert defects(signals) == {}
    assert signals.words == 11 and signals.letters > 40


def test_non_arabic_text_counts_nothing() -> None:
    assert arabic_signals("שלום עולם, hello 123") == ArabicSignals()
    assert arabic_signals("") == ArabicSignals()


def test_presentation_forms() -> None:
    signals = arabic_signals("اﻧﻮاع اﳋﻄﻮط اﻟﻌﺮﺑﻴﺔ")
    assert signals.presentation_forms == 11 and signals.words == 3
    assert arabic_signals("\ufeffنص").presentation_forms == 0  # the BOM is not a shape
    assert fold_presentation_forms("اﳋﻄﻮط") == "الخطوط"


def test_decomposed_lam_alef() -> None:
    assert arabic_signals("قائمة حزب األمان").decomposed_lam_alef == 1
    assert arabic_signals("اآلتى األولى واالشتراطات").decomposed_lam_alef == 3
    assert lam_alef_positions("اآلتى واالشتراطات") == [0, 7]
    # shaped (presentation-form) layers are folded before the pattern is counted
    assert arabic_signals("\ufe8d\ufe83\ufedf\ufeee\ufedf\ufef0").decomposed_lam_alef == 1


def test_valid_words_are_not_lam_alef_decompositions() -> None:
    for text in ("لإلغاء", "لالتزام", "الأمان", "الآتى", "سالم", "ماآل"):
        assert arabic_signals(text).decomposed_lam_alef == 0, text


def test_ligature_order_suspects() -> None:
    signals = arabic_signals("اجلريدة املجد احلكومة اخلاصة")
    assert signals.ligature_order_suspects == 4
    assert signals.decomposed_lam_alef == 0
    assert ligature_order_positions("قائمة حزب املجد") == [10]
    assert ligature_order_positions("واملجد بامل") == [1, 8]
    assert ligature_order_positions("كاملجد") == [1]  # ك is a prefix letter
    assert ligature_order_positions("ساملجد") == []  # mid-word: not a suspect


def test_tatweel_runs_and_chars() -> None:
    signals = arabic_signals("العـــربية رسـالة ـ")
    assert signals.tatweel_runs == 3 and signals.tatweel_chars == 5


def test_unmapped_kashida() -> None:
    assert arabic_signals("تس\ufffd\ufffd\ufffdرى أحكام ه\ufffd\ufffd\ufffdذا").kashida_fffd == 2
    assert arabic_signals("\ufffd تس \ufffd").kashida_fffd == 0
    assert arabic_signals("ab\ufffdcd").kashida_fffd == 0


def test_elongation_repairs_split_mixed_runs_by_kind() -> None:
    text = "تـ\ufffd\ufffdـرى"
    assert elongation_repairs(text) == [
        (1, 2, "tatweel"),
        (2, 4, "kashida_unmapped"),
        (4, 5, "tatweel"),
    ]


def test_isolated_letter_fragments() -> None:
    signals = arabic_signals("كلمة ا ل ع ر ب ي ة كلمة")
    assert signals.isolated_letter_fragments == 1 and signals.isolated_letters == 7
    assert arabic_signals("و الله و").isolated_letter_fragments == 0  # one-letter words, not a run
    assert arabic_signals("ا ل ع\nر ب ي").isolated_letter_fragments == 1
    two_runs = arabic_signals("ا ل ع كلمة ر ب ي")
    assert two_runs.isolated_letter_fragments == 2 and two_runs.isolated_letters == 6


def test_foreign_letters_inside_arabic_words() -> None:
    assert arabic_signals("ﺍǄﻌﺎǄﻤﻲ").foreign_letters_in_words == 2
    broken = arabic_signals("ﺍƾ\x0cﻧﺘﺮﻧﺖ")
    assert broken.foreign_letters_in_words == 1 and broken.control_chars_in_words == 1
    assert arabic_signals("كلمة\ue000").foreign_letters_in_words == 1  # Private Use attached
    assert arabic_signals("αβγ كلمة Ǆ").foreign_letters_in_words == 0  # standing alone
    assert arabic_signals("كلمةα").foreign_letters_in_words == 1


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_signals_never_raise_and_are_non_negative(text: str) -> None:
    signals = arabic_signals(text)
    assert all(v >= 0 for v in signals.to_dict().values())
    assert signals.isolated_letters >= 3 * signals.isolated_letter_fragments
    assert signals.tatweel_chars >= signals.tatweel_runs


def _reference_word_counts(text: str) -> tuple[int, int, int, int, int]:
    """The per-character definition `_word_counts` computes with one translation."""
    import re
    import unicodedata

    from pagefleet.routing.arabic import _is_foreign, is_arabic, is_arabic_letter

    words = runs = run_letters = foreign = controls = streak = 0
    tokens = re.split(r"[ \t\n\r\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]+", text) + [""]
    for token in tokens:
        arabic = sum(1 for c in token if is_arabic_letter(c))
        other = sum(
            1 for c in token if unicodedata.category(c).startswith("L") and not is_arabic(c)
        )
        if arabic:
            words += 1
            foreign += sum(1 for c in token if _is_foreign(c))
            controls += sum(1 for c in token if unicodedata.category(c) == "Cc")
        if arabic == 1 and other == 0:
            streak += 1
            continue
        if streak >= 3:
            runs, run_letters = runs + 1, run_letters + streak
        streak = 0
    return words, runs, run_letters, foreign, controls


@settings(max_examples=400, deadline=None)
@given(
    st.text(
        alphabet="ابتثجحخدذرزسشصضطظعغفقكلمنهويـ\ufffd\ufeb1ǄƾΩ\ue000\x0c\x01 \t\n\u00a0\u2003abcא1.ﻧ",
        max_size=80,
    )
)
def test_word_counts_equal_their_per_character_definition(text: str) -> None:
    from pagefleet.routing.arabic import _word_counts

    assert _word_counts(text) == (
        _reference_word_counts(text)
        if any("\u0600" <= c <= "\u06ff" or "\ufb50" <= c <= "\ufeff" for c in text)
        else (0, 0, 0, 0, 0)
    )
