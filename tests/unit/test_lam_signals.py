"""Swapped lam ligatures (issue 12): detection from glyph clusters and from words, repair in the
edit map, and the canonical invariant."""

from __future__ import annotations

import pytest

from pagefleet.routing.edits import Edit, apply_edits
from pagefleet.routing.lam import (
    lam_ligatures,
    lam_signals,
    lam_violations,
    lone_al_positions,
    restored_cluster,
)
from pagefleet.routing.normalize import normalize
from pagefleet.routing.evidence import GlyphFacts
from pagefleet.routing.quality import GateInput, assess, canonical_violations
from pagefleet.routing.spans import current_spans

LOGICAL = "لا يجوز التصرف في الأموال خلال ثلاث سنوات وفقا لأحكام القانون وللإجراءات المقررة"
HEBREW = "שלום עולם, זהו טקסט בעברית עם מספרים כמו 2024 ושמות כמו Tel Aviv."


def _swap_clusters(text: str) -> tuple[str, list[tuple[int, int]]]:
    """What a swapped ToUnicode map gives: every lam + alef form stored alef first, with the spans
    of those two-code-point clusters (ground truth built from the logical text)."""
    out, spans, i = [], [], 0
    while i < len(text):
        if text[i] == "ل" and i + 1 < len(text) and text[i + 1] in "اأإآ":
            spans.append((len(out), len(out) + 2))
            out += [text[i + 1], "ل"]
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out), spans


def test_lam_ligatures_come_from_unicode_presentation_forms() -> None:
    ligatures = lam_ligatures()
    assert {"لا", "لأ", "لإ", "لآ", "لج", "لح", "لخ", "لم", "لمح"} <= ligatures
    assert all(seq[0] == "ل" for seq in ligatures) and "كل" not in ligatures


@pytest.mark.parametrize(
    ("cluster", "restored"),
    [("ال", "لا"), ("أل", "لأ"), ("إل", "لإ"), ("آل", "لآ"), ("جل", "لج"), ("مل", "لم"), ("حمل", "لمح"),
     ("ﺎﻟ", "ﻟﺎ"), ("لا", None), ("لأ", None), ("كل", None), ("بت", None), ("ا", None)],
)  # fmt: skip
def test_restored_cluster(cluster: str, restored: str | None) -> None:
    assert restored_cluster(cluster) == restored


def test_lone_al_is_the_article_standing_alone() -> None:
    assert lone_al_positions("ال يجوز") == [0]
    assert lone_al_positions("قال إن (ال) هنا") == [8]
    assert lone_al_positions("الكتاب مال حال والد") == []
    assert lone_al_positions("ال\u064e كتاب") == []  # a mark belongs to the word


def test_repair_from_glyph_clusters_gives_the_logical_text_and_replays() -> None:
    raw, spans = _swap_clusters(LOGICAL)
    assert "ال يجوز" in raw and "خالل" in raw
    result = normalize(raw, glyph_clusters=spans)
    assert result.text == LOGICAL
    assert apply_edits(raw, result.edits) == result.text
    assert {e.kind for e in result.edits} == {"lam_alef_order"}
    assert result.counters["lam_alef_order"] == len(spans)


def test_other_lam_ligature_clusters_are_ligature_order_edits() -> None:
    raw = "الجريدة الرسمية"
    swapped = "اجلريدة الرسمية"
    result = normalize(swapped, glyph_clusters=[(1, 3)])
    assert result.text == raw and [e.kind for e in result.edits] == ["ligature_order"]


def test_clusters_in_the_right_order_and_clean_text_are_untouched() -> None:
    spans = [(i, i + 2) for i in range(len(LOGICAL) - 1) if LOGICAL[i : i + 2] == "لا"]
    assert normalize(LOGICAL, glyph_clusters=spans).edits == []
    assert normalize(HEBREW, glyph_clusters=[(0, 2)]).edits == []


def test_cluster_spans_follow_earlier_edits() -> None:
    raw = "\u200fال\u00a0يجوز\r\nال"
    result = normalize(raw, glyph_clusters=[(1, 3), (10, 12)])
    assert result.text == "لا يجوز\nلا"
    assert apply_edits(raw, result.edits) == result.text


def test_current_spans_mirror_with_a_reversed_run_and_drop_what_changed_otherwise() -> None:
    raw = "abcdef"
    edits = [
        Edit(0, 1, "", "bidi_control_removed", 0, 0),
        Edit(2, 5, "edc", "visual_order_reversal", 1, 4),
    ]
    assert current_spans(raw, "bedcf", edits, [(5, 6), (2, 4), (0, 2), (1, 3)]) == [
        (4, 5),
        (2, 4),
        (0, 1),
    ]
    changed = [Edit(1, 3, "xy", "nfkc", 1, 3)]
    assert current_spans(raw, "axydef", changed, [(2, 4), (4, 6), (0, 4)]) == [(4, 6), (0, 4)]
    inserted = [Edit(2, 2, "+", "nfkc", 2, 3), Edit(4, 4, "+", "nfkc", 5, 6)]
    assert current_spans(raw, "ab+cd+ef", inserted, [(2, 4)]) == [(3, 5)]


def test_lexical_evidence_without_geometry() -> None:
    raw, _ = _swap_clusters(LOGICAL + " " + LOGICAL)
    sig = lam_signals(raw)
    assert sig.lone_al == 2 and sig.swapped_words >= 4 and sig.lam_before_alef == 0
    assert sig.lexical_swap and sig.swapped
    assert lam_violations(raw) == ["lone_al", "swapped_lam_ligature"]
    assert lam_violations(LOGICAL + " " + LOGICAL) == []
    assert lam_signals(HEBREW) == lam_signals("")


def test_a_real_word_alone_is_no_evidence() -> None:
    """`ثالث` ("third") is a word: it counts only on a page that never shows lam before alef."""
    text = "الفصل الثالث من القانون " * 10 + "لا يجوز"
    assert not lam_signals(text).lexical_swap and lam_violations(text) == []


def test_gate_warns_and_the_invariant_refuses_what_repair_left() -> None:
    raw, spans = _swap_clusters(LOGICAL)
    verdict = assess(
        GateInput(
            text=raw,
            origin="text_layer",
            glyphs=GlyphFacts(glyph_clusters=[list(s) for s in spans]),
        )
    )
    assert (
        verdict.ok and "swapped_lam_ligature" in verdict.warnings and "lone_al" in verdict.warnings
    )
    assert verdict.glyph_clusters == [list(s) for s in spans]
    fixed = normalize(raw, glyph_clusters=verdict.glyph_clusters)
    assert canonical_violations(fixed.text) == []
    assert "lone_al" in canonical_violations(
        normalize(raw).text
    )  # no geometry: refused, not guessed
    ocr = assess(GateInput(text=raw, origin="ocr", glyphs=GlyphFacts(glyph_clusters=spans)))
    assert ocr.glyph_clusters is None


def test_hebrew_and_latin_are_never_touched() -> None:
    for text in (HEBREW, "Hello world, 2024 (test)."):
        verdict = assess(
            GateInput(text=text, origin="text_layer", glyphs=GlyphFacts(glyph_clusters=[[0, 2]]))
        )
        assert "swapped_lam_ligature" not in verdict.warnings
        assert normalize(text, glyph_clusters=[(0, 2)]).text == text


def _reference_word_tokens(text: str) -> list[str]:
    """The definition, one character at a time: letters join, marks are skipped, the rest splits."""
    from pagefleet.routing.arabic import is_arabic_letter, is_arabic_mark

    tokens, current = [], []
    for ch in text:
        if is_arabic_letter(ch):
            current.append(ch)
        elif not is_arabic_mark(ch):
            if current:
                tokens.append("".join(current))
            current = []
    return tokens + (["".join(current)] if current else [])


def test_word_tokens_match_their_definition() -> None:
    import random

    from pagefleet.routing.lam import _word_tokens

    alphabet = "لاأإآبتثخمنو" + "\u064b\u064e\u0650\u0651\u0670" + "\u0640 .،1٣aשׁ\n\u200f\ufefb"
    rng = random.Random(12)
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(500)]
    for text in [*texts, LOGICAL, HEBREW, "\u064eلا", "لا\u064e"]:
        assert _word_tokens(text) == _reference_word_tokens(text)
    assert any(
        "\u064e" in t and len(_word_tokens(t)) > 1 for t in texts
    )  # marks between words occur


def test_lam_before_alef_matches_its_definition() -> None:
    import random

    from pagefleet.routing.arabic import ALEF_FORMS, LAM, fold_presentation_forms
    from pagefleet.routing.lam import lam_before_alef

    def reference(text: str) -> int:
        folded = fold_presentation_forms(text) + " "
        return sum(
            1
            for i, c in enumerate(folded[:-2])
            if c == LAM and folded[i + 1] in ALEF_FORMS and folded[i + 2] != LAM
        )

    rng = random.Random(3)
    alphabet = "لاأإآب \ufefb\ufef5"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20))) for _ in range(800)]
    for text in [*texts, "لا", "ل", "لال", LOGICAL]:
        assert lam_before_alef(text) == reference(text)
    assert sum(reference(t) > 1 for t in texts) > 50
