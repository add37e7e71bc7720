"""`charclass.features`: the bits that let the gate and the repair stages skip a check of characters
a text does not hold. A skipped check must be one that would have found nothing: every character
each guarded pattern can match carries the bit that guards it (checked on every code point), and
`features` reports exactly the bits of the characters a text holds.
"""

from __future__ import annotations

import dataclasses
import random
import re
import unicodedata

import pytest

from pagefleet.routing import (
    arabic,
    brackets,
    charclass,
    detectors,
    lam,
    mirrored_lines,
    normalize,
    quality,
    visual_order,
)
from pagefleet.routing.charclass import FEATURE_RANGES, features

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
    (detectors._BIDI_CONTROL, charclass.F_BIDI),
    (normalize._SYMBOL_PUA, charclass.F_PRIVATE_USE),
    (brackets._BRACKET, charclass.F_BRACKET),
    (mirrored_lines._RTL_MARK, charclass.F_HEBREW | charclass.F_ARABIC),
    (arabic._ELONGATION, charclass.F_ELONGATION),
    (arabic._PRESENTATION_FORM, charclass.F_ARABIC),
    (quality._ANY_PRIVATE_USE, charclass.F_PRIVATE_USE),
    (quality._PRESENTATION_FORM, charclass.F_PRESENTATION),
    (quality._CONTROL, charclass.F_CONTROL),
    (re.compile("[ÃÂ×ØÙÚÛ]"), charclass.F_MOJIBAKE),  # what _UTF8_MOJIBAKE's match starts with
    (visual_order._RTL_ANY, charclass.F_HEBREW | charclass.F_ARABIC),
    (visual_order._ARABIC_SHAPED, charclass.F_ARABIC),
    (
        re.compile("[\u0620-\u064a\u0671-\u06d3\u06fa-\u06ff]"),
        charclass.F_ARABIC,
    ),  # order's final-only votes
    (
        re.compile("[\u05d0-\u05ea\u0591-\u05c7\ufb1d-\ufb4f]"),
        charclass.F_HEBREW,
    ),  # Hebrew words, folded forms
]


@pytest.mark.parametrize("pattern, bits", GUARDS, ids=[p.pattern[:24] for p, _ in GUARDS])
def test_every_character_a_guarded_pattern_matches_carries_its_bit(
    pattern: re.Pattern[str], bits: int
) -> None:
    allowed = set().union(*(_with_bit(bit) for bit in FEATURE_RANGES if bit & bits))
    assert _matched(pattern) <= allowed


def test_nfkc_runs_are_exactly_the_nfkc_ranges() -> None:
    """The NFKC stage reads its runs from the F_NFKC bit: the bit holds exactly NFKC_RANGES, and the
    runs found are the maximal runs of those characters."""
    pattern = re.compile(
        "[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in normalize.NFKC_RANGES) + "]+"
    )
    assert {ord(c) for m in pattern.finditer(ALL) for c in m.group()} == _with_bit(charclass.F_NFKC)
    text = "ﬁne ﬀ\ufb01x ﻻ ﺍﻟ ＡＢ\ufeff \ufb1f"
    runs = [(m.start(), m.end(), m.group()) for m in pattern.finditer(text)]
    expected = [
        (a, b, "".join(unicodedata.normalize("NFKC", c) for c in run)) for a, b, run in runs
    ]
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
    pool = [
        chr(cp)
        for cp in (
            *range(0x250),
            *range(0x590, 0x700),
            *range(0x2000, 0x2070),
            *range(0xFB00, 0xFF00),
            0x3000,
            0x4E00,
            0xAC00,
            0xD800,
            0xDFFF,
            0xE000,
            0xFFFD,
            0x1F600,
            0xF0001,
            0x10FFFF,
        )
    ]
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
        expected = [
            i for i, line in enumerate(text.split("\n")) if not brackets.brackets_balanced(line)
        ]
        assert brackets.unbalanced_lines(text) == expected, text
    long = "(a)\n" * 200 + "(]\n" + "x" * 300
    assert brackets.unbalanced_lines(long) == [200]


def _alef_x_lam_reference(text: str, seconds: str) -> list[int]:
    """The lam-alef / ligature finder as first written: a scan from every ا."""
    found, start = [], 0
    while True:
        pos = text.find(arabic.ALEF, start)
        if pos < 0 or pos + 2 >= len(text):
            return found
        if (
            text[pos + 1] in seconds
            and text[pos + 2] == arabic.LAM
            and arabic._word_initial(text, pos)
        ):
            found.append(pos)
            start = pos + 3
        else:
            start = pos + 1


def test_lam_alef_and_ligature_finders_match_their_definition() -> None:
    rng = random.Random(12)
    pool = list(
        "\u0627\u0627\u0644\u0644\u0623\u0625\u0622\u062c\u062d\u062e\u0645\u0648\u0641\u0628\u0643 \u064e\u0640x"
    )
    for _ in range(3000):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 40)))
        assert arabic.lam_alef_positions(text) == _alef_x_lam_reference(text, arabic.ALEF_FORMS), (
            text
        )
        assert arabic.ligature_order_positions(text) == _alef_x_lam_reference(
            text, arabic.LIGATURE_SECONDS
        ), text


def test_lone_al_finder_matches_its_definition() -> None:
    """`lone_al_positions` by one pattern: the `ال` with no Arabic letter, mark or tatweel on
    either side, as the scan from every `ال` found them."""

    def reference(text: str) -> list[int]:
        found, pos = [], text.find("ال")
        while pos >= 0:
            before = text[pos - 1] if pos else ""
            after = text[pos + 2] if pos + 2 < len(text) else ""
            if not (before and lam._attached(before)) and not (after and lam._attached(after)):
                found.append(pos)
            pos = text.find("ال", pos + 1)
        return found

    rng = random.Random(3)
    pool = list("\u0627\u0644\u0627\u0644 \u064e\u0640\u0628\u06a9\ufefbx(\n")
    for _ in range(3000):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 30)))
        assert lam.lone_al_positions(text) == reference(text), text
    every = "".join(chr(cp) for lo, hi in charclass.ARABIC_RANGES for cp in range(lo, hi + 1))
    for ch in every + "a ":
        for text in (f"{ch}ال", f"ال{ch}"):
            assert lam.lone_al_positions(text) == reference(text), hex(ord(ch))


@pytest.fixture(scope="module")
def page_texts(fixtures_dir, structure_dir) -> list[str]:
    """Text layers of the generated fixtures (Hebrew, Arabic, mixed, visual order, shaped forms)."""
    from pagefleet.workers.pdf import mupdf

    texts = []
    for pdf in sorted(fixtures_dir.glob("*.pdf")) + sorted(structure_dir.glob("*.pdf")):
        try:
            texts += [page["text"] for page in mupdf.extract_range(str(pdf), 1, 50)["pages"]]
        except Exception:  # encrypted or broken fixtures are not text layers
            continue
    return texts


def test_page_order_counts_each_line_as_line_evidence_does(page_texts: list[str]) -> None:
    """`page_order` reads the votes of a whole page in one pass of each pattern; every line's
    evidence must be what `line_evidence` gives that line alone, on fixture pages and on random
    pages of Hebrew (with presentation forms that fold to two characters), Arabic (shaped and
    not), digits and breaks."""
    texts = list(page_texts)
    assert any(features(t) & charclass.F_HEBREW for t in texts) and any(
        features(t) & charclass.F_ARABIC for t in texts
    )
    rng = random.Random(5)
    pool = (
        list("אבגדהוזחטיכךלמםנןסעפףצץקרשת\ufb2e\ufb4b\u05b7'\"-\u05be")
        + list("\u0627\u0644\u0629\u0649\u0628\u062a\ufe8e\ufe91\ufe92\ufe90\ufb50")
        + list("  \n\n12ab")
    )
    texts += ["".join(rng.choice(pool) for _ in range(rng.randint(0, 120))) for _ in range(1500)]
    both = charclass.F_HEBREW | charclass.F_ARABIC
    flagged = 0
    for text in texts:
        lines = text.split("\n")
        geometry = [[rng.randint(0, 2), rng.randint(0, 2)] for _ in lines]
        got = visual_order.page_order(text, geometry, from_ocr=True).page
        each = [visual_order.line_evidence(line, geometry[i]) for i, line in enumerate(lines)]
        assert got.visual_votes == sum(e.visual_votes for e in each), text
        assert got.logical_votes == sum(e.logical_votes for e in each), text
        assert got.final_mid_word == sum(e.final_mid_word for e in each), text
        assert got.hebrew_words == sum(e.hebrew_words for e in each), text
        scripts = features(text) & both
        fields = (
            "visual_votes",
            "logical_votes",
            "geometry_visual",
            "geometry_logical",
            "final_mid_word",
            "hebrew_words",
        )
        expected = tuple([getattr(e, name) for e in each] for name in fields)
        assert visual_order._page_evidence(text, lines, geometry, scripts) == expected, text
        flags = visual_order.page_order(text, geometry, from_ocr=False).line_visual
        assert flags == _reference_flags(each), text
        flagged += sum(flags)
    assert flagged  # lines said visual (by letters or geometry) were among them


def _reference_flags(each: list[visual_order.LineEvidence]) -> list[bool]:
    """page_order's per-line flags as first written, from every line's evidence."""
    total = visual_order.LineEvidence(
        *(
            sum(getattr(e, f.name) for e in each)
            for f in dataclasses.fields(visual_order.LineEvidence)
        )
    )
    flags = []
    for e in each:
        letters_logical = e.logical_votes > 0 and e.visual_votes == 0
        visual = (
            e.letters_strong
            or (e.letters_say_visual and not total.letters_say_logical)
            or (total.letters_strong and e.weak_visual)
        )
        flags.append(visual or (e.geometry_says_visual and not letters_logical))
    return flags


def test_arabic_shape_votes_match_their_definition() -> None:
    """The shaped-word votes read the positional forms from one translation of the page; they are
    the votes a word-by-word reading of `_form` gives, on every presentation form in words."""

    def reference(text: str) -> tuple[int, int]:
        visual = len(visual_order._FINAL_FIRST.findall(text))
        logical = len(visual_order._FINAL_LAST.findall(text))
        for word in visual_order._ARABIC_SHAPED.findall(text):
            forms = [
                f for f in map(visual_order._form, word) if f in ("initial", "medial", "final")
            ]
            if len(forms) < 2:
                continue
            if forms[0] == "final" or forms[-1] == "initial":
                visual += 1
            elif forms[0] == "initial" or forms[-1] == "final":
                logical += 1
        return visual, logical

    shaped = [
        chr(cp) for lo, hi in ((0xFB50, 0xFDFF), (0xFE70, 0xFEFF)) for cp in range(lo, hi + 1)
    ]
    rng = random.Random(9)
    pool = shaped + list("\u0627\u0644\u0629\u0649\u0628 \n")
    for _ in range(3000):
        text = "".join(
            rng.choice(pool) for _ in range(rng.randint(0, 300 if rng.random() < 0.1 else 12))
        )
        assert visual_order.arabic_order_votes(text) == reference(text), text


def test_reorder_candidates_of_a_page_are_the_lines_may_reorder_lets_through(
    page_texts: list[str],
) -> None:
    """The C walk's run-order candidates come from one class translation of the page: the same
    lines `may_reorder` accepts one at a time (fixture pages, random Arabic/Hebrew/Latin lines)."""
    from pagefleet.workers.pdf.runs import may_reorder, may_reorder_lines

    rng = random.Random(21)
    pool = list("\u0627\u0644\u0628\ufe8e\u0660 abc12()\u05d0\u05be\u0591.")
    texts = list(page_texts) + [
        "\n".join(
            "".join(rng.choice(pool) for _ in range(rng.randint(0, 9)))
            for _ in range(rng.randint(1, 12))
        )
        for _ in range(1500)
    ]
    for text in texts:
        lines = text.split("\n")
        assert may_reorder_lines(lines, text) == [
            i for i, line in enumerate(lines) if may_reorder(line)
        ], text


def test_hebrew_word_votes_and_mid_word_finals_match_their_definition() -> None:
    """Hebrew word votes without a pass over each word's characters, and mid-word finals only
    where a final form has a letter after it in its word: as the letter-by-letter definitions
    count them, on random Hebrew with points, quotes, maqaf and hyphens."""

    def votes_reference(text: str) -> list[tuple[int, int, int, int]]:
        found = []
        for match in mirrored_lines._HEBREW_WORD.finditer(text):
            letters = re.sub(f"[^{mirrored_lines._HEB_LETTER}]", "", match.group())
            if len(letters) < 2:
                continue
            after = text[match.end()] if match.end() < len(text) else ""
            abbreviated = (
                after != ""
                and after in mirrored_lines.ABBREVIATION_MARKS + mirrored_lines.PREFIX_JOINERS
            )
            abbreviated = abbreviated or match.group()[-2] in mirrored_lines.ABBREVIATION_MARKS
            found.append(
                (
                    match.start(),
                    int(letters[0] in mirrored_lines.FINALS),
                    int(letters[-1] in mirrored_lines.MEDIALS and not abbreviated),
                    int(letters[-1] in mirrored_lines.FINALS),
                )
            )
        return found

    def mid_reference(text: str) -> list[int]:
        return [
            m.start()
            for m in visual_order._HEBREW_WORD.finditer(text)
            if any(
                c in mirrored_lines.FINALS
                for c in [c for c in m.group() if "\u05d0" <= c <= "\u05ea"][1:-1]
            )
        ]

    rng = random.Random(33)
    pool = list("אבכךמםנןפףצץשת\u05f0\u05b0\u05b7\u05bc\u05be\u05c3'\"- \n")
    for _ in range(4000):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 25)))
        assert mirrored_lines.hebrew_word_votes(text) == votes_reference(text), text
        assert visual_order._final_mid_words(text) == mid_reference(text), text
