"""The quality gate: each detector on real strings from the dev corpus and the field."""

from __future__ import annotations

import pytest

from pagefleet.routing.detectors import repetition_loop, word_agreement
from pagefleet.routing.evidence import GlyphFacts
from pagefleet.routing.quality import GateInput, assess


def gate(text: str, origin: str = "text_layer", **kw) -> tuple[bool, list[str], list[str]]:
    v = assess(GateInput(text=text, origin=origin, **kw))  # type: ignore[arg-type]
    return v.ok, v.reasons, v.warnings


def test_clean_hebrew_passes() -> None:
    ok, reasons, _ = gate("רוב ההרפתקאות שתועדו בספר זה באמת התרחשו; אחד או\nשתיים היו חוויות משלי")
    assert ok and reasons == []


def test_clean_english_and_arabic_pass() -> None:
    assert gate("Trace-based Just-in-Time Type Specialization for Dynamic Languages")[0]
    assert gate("قرر مجلس النواب القانون الآتى نصه ، وقد أصدرناه")[0]


def test_visual_order_hebrew_is_repairable() -> None:
    v = assess(GateInput(text="Hebrew: םלוע םולש", origin="text_layer"))
    assert v.reasons == ["visual_order_rtl"] and v.repairable
    assert v.order is not None and v.order.line_visual == [True]


def test_ocr_text_is_never_flagged_for_reversal() -> None:
    ok, reasons, warnings = gate("Hebrew: םלוע םולש and more words here", origin="ocr")
    assert "visual_order_rtl" not in reasons
    assert "ocr_visual_order_suspect" in warnings


def test_broken_truetype_junk() -> None:
    ok, reasons, _ = gate('"7+%-')
    assert not ok and {"too_little_text", "glyph_soup"} <= set(reasons)


def test_latin1_mojibake_of_legacy_hebrew_font() -> None:
    legacy = "שלום עולם זהו דף סרוק".encode("cp1255").decode("latin-1")
    ok, reasons, _ = gate(legacy)
    assert not ok and "latin1_mojibake" in reasons
    assert (
        gate("‰ÎÂÓÎ ‰ÎÂÓÎ ÈÏ‰")[1] == ["latin1_mojibake"]
        or "latin1_mojibake" in gate("‰ÎÂÓÎ ‰ÎÂÓÎ ÈÏ‰")[1]
    )


def test_french_is_not_mojibake() -> None:
    assert gate("Le café était fermé à côté de l'hôtel, mais la pâtisserie était ouverte.")[0]


def test_utf8_read_as_cp1252() -> None:
    ok, reasons, _ = gate("×©×œ×•× ×¢×•×œ×")
    assert not ok and "utf8_mojibake" in reasons


def test_cjk_garbage_with_hebrew_codepoints() -> None:
    ok, reasons, _ = gate("漢字ש語ם文ך字 ן日本ק中文 ף的ץ字体 ו乱码ה\n文字化け ט漢ש字 ךן語 中ק文")
    assert not ok and "unexpected_script_letters" in reasons


def test_hebrew_letter_soup() -> None:
    ok, reasons, _ = gate("אםב גךד הןו זףח טץי כםל מןנ סךע פףצ")
    assert not ok and "hebrew_letter_soup" in reasons


def test_replacement_and_private_use_and_controls() -> None:
    assert "replacement_chars" in gate("Some text with \ufffd\ufffd missing glyphs in it")[1]
    assert "private_use_chars" in gate("Formula \ue123\ue124 value and more words")[1]
    assert "control_chars" in gate("حَبيبي habibi\x03ϲΒϴΒ ˴حَبيبي")[1]


def test_symbol_font_bullets_are_a_warning_not_a_rejection() -> None:
    ok, reasons, warnings = gate("\uf0b7 First item of the list\n\uf0b7 Second item of the list")
    assert ok and "symbol_glyphs" in warnings


def test_arabic_broken_font_map_letters_inside_words() -> None:
    ok, reasons, _ = gate("ﺍǄﻌﺎǄﻤﻲ ﺍǄﻤﻔﺘﻮﺡ ﻫﻮ ﺃﻗﻮﻯ ﺍﺗﺼﺎﻝ ﻭ ﻣﻮﺭﺩ ﺗﻌﺎﻭﻥ ﺭﺃﻳﻨﺎﻩ")
    assert not ok and "foreign_letters_in_words" in reasons


def test_arabic_repairable_signals_are_warnings() -> None:
    ok, reasons, warnings = gate("قائمة حزب األمان وقائمة االتحاد من أجل تونس اﻧﻮاع اﳋﻄﻮط")
    assert ok, reasons
    assert {"decomposed_lam_alef", "presentation_forms"} <= set(warnings)


def test_unmapped_kashida_inside_arabic_words_is_repairable() -> None:
    ok, reasons, warnings = gate("تس���رى أحكام ه���ذا القان���ون والقان���ون المرافق")
    assert ok, reasons
    assert "kashida_unmapped" in warnings


def test_glyph_maps_to_whole_word() -> None:
    ok, reasons, _ = gate("حَبيبي habibi", glyphs=GlyphFacts(shared_position_runs=1))
    assert not ok and "broken_tounicode" in reasons


def test_image_page_with_almost_no_text_layer() -> None:
    ok, reasons, _ = gate("Page 12", glyphs=GlyphFacts(image_coverage=0.98))
    assert not ok and reasons == ["text_below_visible"]


def test_no_text() -> None:
    assert gate("   \n ") == (False, ["no_text"], [])


def test_ocr_low_confidence_and_expected_script() -> None:
    assert (
        "low_confidence"
        in gate("some words that were read badly", origin="ocr", confidence=20.0)[1]
    )
    ok, reasons, _ = gate(
        "This page came out entirely in English words", origin="ocr", expected_script="he"
    )
    assert not ok and "expected_script_low" in reasons


def test_repetition_loop() -> None:
    looping = "intro text " + "the same phrase again " * 30
    assert repetition_loop(looping)
    assert "repetition_loop" in gate(looping, origin="ocr")[1]
    assert not repetition_loop("a normal paragraph with many different words " * 2)
    # a text layer repeating one line four times (ar_cid_truetype) is not a loop
    assert gate("انواع الخطوط العربية\n" * 4)[0]


def test_cross_engine_disagreement() -> None:
    ref = "the quick brown fox jumps over the lazy dog near the river bank"
    assert word_agreement(ref, ref) == (1.0, 1.0)
    p, r = word_agreement("the quick brown fox", ref)
    assert p == 1.0 and r < 0.85
    assert "engine_disagreement" in gate("the quick brown fox", origin="ocr", reference_text=ref)[1]
    assert gate(ref, origin="ocr", reference_text=ref)[0]


@pytest.mark.parametrize(
    "text",
    ["בנימין\nבן", "כלבלב הובידיבמבם", "2014\n2013\n תוצר מקומי גולמי\n2.6\n1.9         סך הכל"],
)
def test_short_good_hebrew_from_the_corpus_passes(text: str) -> None:
    assert gate(text)[0]


def test_foreign_script_letters_inside_hebrew_words() -> None:
    # a VLM writing Arabic letters into Hebrew words (dots.ocr #225)
    ok, reasons, _ = gate("המערכת צרيכה לקרוא את הטקסט ולא להמציא מילים חדشות", origin="ocr")
    assert not ok and "mixed_script_words" in reasons
    # Hebrew next to Latin or numbers is ordinary
    assert gate("ההכנסות של Google עלו ב-12% בשנת 2024, אמר ה-CEO", origin="ocr")[0]


def test_mirrored_arabic_presentation_forms_are_detected_and_repaired() -> None:
    from pagefleet.routing.normalize import normalize

    mirrored = "ﺔﻴﺑﺮﻌﻟا ﻁﻮﻄﺨﻟا"  # "الخطوط العربية" stored in visual order, shaped glyphs
    v = assess(GateInput(text=mirrored, origin="text_layer"))
    assert v.reasons == ["visual_order_rtl"] and v.repairable
    assert normalize(mirrored, line_visual=v.order.line_visual).text == "الخطوط العربية"
    # the same words in logical order carry no such evidence
    assert gate("اﻟﺨﻄﻮﻁ اﻟﻌﺮﺑﻴﺔ")[0]
