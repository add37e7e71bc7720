"""`charclass.features`: the bits that let the gate and the repair stages skip a check of characters
a text does not hold. A skipped check must be one that would have found nothing: every character
each guarded pattern can match carries the bit that guards it (checked on every code point), and
`features` reports exactly the bits of the characters a text holds.
"""

from __future__ import annotations

import random
import re
import unicodedata

import pytest

from routing import arabic, charclass, lam, normalize, order, quality, rtl_order
from routing.charclass import FEATURE_RANGES, features

ALL = "".join(chr(cp) for cp in range(0x110000))  # every code point, surrogates included


def _with_bit(bit: int) -> set[int]:
    return {cp for lo, hi in FEATURE_RANGES[bit] for cp in range(lo, hi + 1)}


def _matched(pattern: re.Pattern[str]) -> set[int]:
    """Every code point a one-character class pattern matches."""
    return {ord(m.group()[0]) for m in pattern.finditer(ALL)}


# (pattern, the bits any one of which a text must hold for the pattern to match)
GUARDS = [
    (normalize._LINE_END, charclass.F_CR),
    (normalize._UNICODE_SPACE, charclass.F_SPACE),
    (normalize._BIDI_CONTROL, charclass.F_BIDI),
    (quality._BIDI_CONTROL, charclass.F_BIDI),
    (normalize._SYMBOL_PUA, charclass.F_PRIVATE_USE),
    (normalize._BRACKET, charclass.F_BRACKET),
    (rtl_order._RTL_MARK, charclass.F_HEBREW | charclass.F_ARABIC),
    (arabic._ELONGATION, charclass.F_ELONGATION),
    (arabic._PRESENTATION_FORM, charclass.F_ARABIC),
    (quality._ANY_PRIVATE_USE, charclass.F_PRIVATE_USE),
    (quality._PRESENTATION_FORM, charclass.F_PRESENTATION),
    (quality._CONTROL, charclass.F_CONTROL),
    (re.compile("[ÃÂ×ØÙÚÛ]"), charclass.F_MOJIBAKE),  # what _UTF8_MOJIBAKE's match starts with
    (order._RTL_ANY, charclass.F_HEBREW | charclass.F_ARABIC),
    (order._ARABIC_SHAPED, charclass.F_ARABIC),
    (re.compile("[\u0620-\u064a\u0671-\u06d3\u06fa-\u06ff]"), charclass.F_ARABIC),  # order's final-only votes
    (re.compile("[\u05d0-\u05ea\u0591-\u05c7\ufb1d-\ufb4f]"), charclass.F_HEBREW),  # Hebrew words, folded forms
]


@pytest.mark.parametrize("pattern, bits", GUARDS, ids=[p.pattern[:24] for p, _ in GUARDS])
def test_every_character_a_guarded_pattern_matches_carries_its_bit(pattern: re.Pattern[str], bits: int) -> None:
    allowed = set().union(*(_with_bit(bit) for bit in FEATURE_RANGES if bit & bits))
    assert _matched(pattern) <= allowed


def test_nfkc_runs_are_exactly_the_nfkc_ranges() -> None:
    """The NFKC stage reads its runs from the F_NFKC bit: the bit holds exactly NFKC_RANGES, and the
    runs found are the maximal runs of those characters."""
    pattern = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in normalize.NFKC_RANGES) + "]+")
    assert {ord(c) for m in pattern.finditer(ALL) for c in m.group()} == _with_bit(charclass.F_NFKC)
    text = "ﬁne ﬀ\ufb01x ﻻ ﺍﻟ ＡＢ\ufeff \ufb1f"
    runs = [(m.start(), m.end(), m.group()) for m in pattern.finditer(text)]
    expected = [(a, b, "".join(unicodedata.normalize("NFKC", c) for c in run)) for a, b, run in runs]
    got = [(r.start, r.end, r.text) for r in normalize._stage_nfkc(text)]
    assert got == [e for e, (_, _, run) in zip(expected, runs) if e[2] != run]
    assert got  # the text holds runs that change


def test_the_displaced_punctuation_pattern_needs_a_bidi_control() -> None:
    assert normalize._DISPLACED.match(".\u202bשלום\u202c")
    assert not normalize._DISPLACED.match(".שלום")
    assert {"\u202b", "\u202e"} <= {chr(cp) for cp in _with_bit(charclass.F_BIDI)}


def test_arabic_and_lam_signals_count_only_arabic_block_characters() -> None:
    """arabic_signals / lam_signals return all-zero counts on a text without F_ARABIC: every
    character outside the Arabic blocks, in one text, counts nothing."""
    outside = "".join(chr(cp) for cp in range(0x3000) if not 0x0600 <= cp <= 0x08FF) + "\ufffd" * 3
    assert not features(outside) & charclass.F_ARABIC
    assert arabic.arabic_signals(outside) == arabic.ArabicSignals()
    assert lam.lam_signals(outside) == lam.LamSignals()


def _reference(text: str) -> int:
    bits = 0
    for ch in set(text):
        for bit, ranges in FEATURE_RANGES.items():
            if any(lo <= ord(ch) <= hi for lo, hi in ranges):
                bits |= bit
    return bits


def test_features_reports_exactly_the_bits_of_the_characters_held() -> None:
    rng = random.Random(15)
    pool = [chr(cp) for cp in (*range(0x250), *range(0x590, 0x700), *range(0x2000, 0x2070), *range(0xFB00, 0xFF00),
                               0x3000, 0x4E00, 0xAC00, 0xD800, 0xDFFF, 0xE000, 0xFFFD, 0x1F600, 0xF0001, 0x10FFFF)]
    assert features("") == 0
    for n in (1, 5, 300, 4000):
        for _ in range(30):
            text = "".join(rng.choice(pool) for _ in range(n))
            assert features(text) == _reference(text)
    assert features("plain ASCII words, no brackets.") == 0


def test_the_gate_skips_nothing_a_page_holds() -> None:
    """A Hebrew page with a bidi control, a bracket that does not nest and a no-break space still
    gets every repair those characters call for."""
    text = "שלום (עולם\u00a0טוב\n.\u202bמה נשמע\u202c"
    fixed = normalize.normalize(text)
    kinds = {e.kind for e in fixed.edits}
    assert {"whitespace", "rtl_punctuation_repair", "bidi_control_removed"} <= kinds
    assert fixed.counters["unbalanced_brackets"] == 1


def test_unbalanced_lines_are_the_lines_brackets_balanced_refuses() -> None:
    """The bracket stage finds its lines from the brackets and line breaks alone: the same lines
    a per-line `brackets_balanced` refuses, on random texts of brackets, letters and breaks."""
    rng = random.Random(7)
    pool = list("()[]{}\n\n ab\u05d0\u0628<>")
    for _ in range(2000):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 60)))
        expected = [i for i, line in enumerate(text.split("\n")) if not normalize.brackets_balanced(line)]
        assert normalize._unbalanced_lines(text) == expected, text
    long = "(a)\n" * 200 + "(]\n" + "x" * 300
    assert normalize._unbalanced_lines(long) == [200]


def _alef_x_lam_reference(text: str, seconds: str) -> list[int]:
    """The lam-alef / ligature finder as first written: a scan from every ا."""
    found, start = [], 0
    while True:
        pos = text.find(arabic.ALEF, start)
        if pos < 0 or pos + 2 >= len(text):
            return found
        if text[pos + 1] in seconds and text[pos + 2] == arabic.LAM and arabic._word_initial(text, pos):
            found.append(pos)
            start = pos + 3
        else:
            start = pos + 1


def test_lam_alef_and_ligature_finders_match_their_definition() -> None:
    rng = random.Random(12)
    pool = list("\u0627\u0627\u0644\u0644\u0623\u0625\u0622\u062c\u062d\u062e\u0645\u0648\u0641\u0628\u0643 \u064e\u0640x")
    for _ in range(3000):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 40)))
        assert arabic.lam_alef_positions(text) == _alef_x_lam_reference(text, arabic.ALEF_FORMS), text
        assert arabic.ligature_order_positions(text) == _alef_x_lam_reference(text, arabic.LIGATURE_SECONDS), text
