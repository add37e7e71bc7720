"""The one-pass character statistics count exactly what per-character definitions count.

The reference below is the definition written out character by character (the way the classifier
and the gate counted before the translation tables); the fast pass must agree with it on every
code point of the BMP, a sample of the other planes, and random mixed texts.
"""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from pagefleet.routing.arabic import arabic_signals
from pagefleet.routing.normalize import SYMBOL_PUA_MAP
from pagefleet.routing.detectors import mixed_script_words
from pagefleet.routing.quality import GateInput, assess, canonical_violations
from pagefleet.routing.scripts import script_stats

HE = ((0x0590, 0x05FF), (0xFB1D, 0xFB4F))
AR = ((0x0600, 0x06FF), (0x0750, 0x077F), (0x08A0, 0x08FF), (0xFB50, 0xFDFF), (0xFE70, 0xFEFF))
PUA = ((0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD))
CJK = ((0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF))
CP1252 = set("€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ")


def _in(ch: str, ranges) -> bool:
    return any(lo <= ord(ch) <= hi for lo, hi in ranges)


def _letter(ch: str) -> bool:
    return unicodedata.category(ch).startswith("L")


def _latin(ch: str) -> bool:
    return "A" <= ch <= "Z" or "a" <= ch <= "z"


def _bucket(ch: str) -> str:
    if _latin(ch):
        return "latin"
    if _in(ch, HE):
        return "he" if _letter(ch) else "none"
    if _in(ch, AR):
        return "ar" if _letter(ch) else "none"
    if _in(ch, PUA):
        return "pua"
    if _in(ch, CJK):
        return "cjk"
    return "other_letter" if _letter(ch) else "none"


def reference(text: str) -> dict[str, int]:
    counts = dict.fromkeys(("latin", "he", "ar", "pua", "cjk", "other_letter"), 0)
    digits = non_space = 0
    for ch in text:
        if ch.isspace():
            continue
        non_space += 1
        if ch.isdigit():
            digits += 1
            continue
        if (b := _bucket(ch)) != "none":
            counts[b] += 1
    letters = [c for c in text if _letter(c)]
    european = ((0xC0, 0x24F), (0x370, 0x4FF), (0x1E00, 0x1EFF))
    return {
        **counts,
        "digits": digits,
        "non_space": non_space,
        "chars": len(text),
        "controls": sum(1 for c in text if unicodedata.category(c) == "Cc" and c not in "\t\n\r\f"),
        "all_letters": len(letters),
        "known_letters": sum(
            1 for c in letters if _latin(c) or _in(c, HE) or _in(c, AR) or _in(c, european)
        ),
        "mojibake": sum(1 for c in text if 0xC0 <= ord(c) <= 0xFF or c in CP1252),
    }


def fast(text: str) -> dict[str, int]:
    s = script_stats(text)
    fields = (
        "latin",
        "he",
        "ar",
        "pua",
        "cjk",
        "other_letter",
        "digits",
        "non_space",
        "chars",
        "controls",
        "all_letters",
        "known_letters",
        "mojibake",
    )
    return {f: getattr(s, f) for f in fields}


def test_every_bmp_code_point_is_counted_as_defined() -> None:
    for start in range(0, 0x10000, 0x100):
        block = "".join(chr(cp) for cp in range(start, start + 0x100) if not 0xD800 <= cp <= 0xDFFF)
        assert fast(block) == reference(block), hex(start)
        for ch in block[::7]:  # and single characters, so no two errors cancel inside a block
            assert fast(ch) == reference(ch), hex(ord(ch))


def test_other_planes_sampled() -> None:
    for start in range(0x10000, 0x110000, 0x1000):
        block = "".join(chr(cp) for cp in range(start, start + 0x1000, 13))
        assert fast(block) == reference(block), hex(start)


def _mixed_reference(text: str) -> tuple[int, int]:
    import re

    def family(c: str) -> str | None:
        cp = ord(c)
        for name, ok in (
            ("he", _in(c, HE)),
            ("ar", _in(c, AR)),
            ("gr", 0x370 <= cp <= 0x3FF),
            ("cy", 0x400 <= cp <= 0x4FF),
            ("cjk", 0x3040 <= cp <= 0x9FFF or 0xAC00 <= cp <= 0xD7AF),
        ):
            if ok:
                return name
        return None

    mixed = words = 0
    for token in re.findall(r"[^\s\-\u05be/.,;:!?()\[\]{}\"'״׳«»]+", text):
        words += 1
        mixed += len({f for c in token if _letter(c) and (f := family(c))}) >= 2
    return mixed, words


ALPHABET = st.sampled_from(
    list("abc XYZ é ß Ω Ж שלום ך מרحبا ﻻ ﺍ ٣ 7 ² \t\n\x0b\x1c\x85\x07 ‰ € ˆ × 中 ー ・ ")
    + [
        "\ue000",
        "\uf061",
        "\uf020",
        "\U000f0001",
        "\u200f",
        "\u202b",
        "\ufffd",
        "-",
        "/",
        "״",
        "ا",
        "أ",
        "ل",
        "و",
        "ﺍ",
        "ﺃ",
        "ﻟ",
        "ﻻ",
        "ﻷ",
        "\ufeff",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(ALPHABET, max_size=80).map("".join))
def test_random_mixed_texts(text: str) -> None:
    assert fast(text) == reference(text)
    assert mixed_script_words(text) == _mixed_reference(text)
    pua = [c for c in text if _in(c, PUA)]
    metrics = assess(GateInput(text=text, origin="text_layer")).metrics
    if reference(text)["non_space"]:
        assert metrics.get("private_use", 0) == len(pua)
    violations = canonical_violations(text)
    assert ("private_use_chars" in violations) == bool(pua)
    assert ("control_chars" in violations) == any(
        unicodedata.category(c) == "Cc" and c not in "\t\n\r\f" for c in text
    )
    assert ("decomposed_lam_alef" in violations) == bool(arabic_signals(text).decomposed_lam_alef)
    unmapped = [c for c in pua if c not in SYMBOL_PUA_MAP]
    reasons = assess(GateInput(text=text, origin="text_layer")).reasons
    if unmapped:
        assert "private_use_chars" in reasons


def test_canonical_lam_alef_check_matches_the_arabic_signal() -> None:
    for text in ("اآلتى", "وال يجوز", "ﺍﺁﻟﺘﻰ", "لإلغاء", "الآتى", "abc", "ﻻ ا أ ل", "\ufeffاأل"):
        found = "decomposed_lam_alef" in canonical_violations(text)
        assert found == bool(arabic_signals(text).decomposed_lam_alef), text


@settings(max_examples=300, deadline=None)
@given(st.lists(ALPHABET, max_size=80).map("".join))
def test_arabic_counts_match_their_per_character_definitions(text: str) -> None:
    from pagefleet.routing.arabic import (
        fold_presentation_forms,
        is_arabic_letter,
        is_presentation_form,
    )

    sig = arabic_signals(text)
    assert sig.letters == sum(1 for c in text if is_arabic_letter(c))
    assert sig.presentation_forms == sum(1 for c in text if is_presentation_form(c))
    assert fold_presentation_forms(text) == "".join(
        unicodedata.normalize("NFKC", c) if is_presentation_form(c) else c for c in text
    )


def test_long_texts_are_translated_alike_in_numpy() -> None:
    """`LazyTable.apply` on a text of LONG characters or more gathers in numpy; it must give what
    str.translate gives, for every table applied to whole pages (surrogates and other planes
    included), and a table with a value of several characters falls back to str.translate."""
    import random

    from pagefleet.routing import arabic, lam
    from pagefleet.routing.charclass import CLASS_TABLE, FAMILY_TABLE, LazyTable
    from pagefleet.workers.pdf import fastwalk

    pool = [
        chr(c)
        for c in [
            *range(0x250),
            *range(0x590, 0x700),
            *range(0xFB1D, 0xFB50),
            *range(0xFE70, 0xFEFF),
            0xD800,
            0xDFFF,
            0x1F600,
            0x10FFFF,
            0xE000,
            0xF0001,
            0x4E00,
            0x3000,
        ]
    ]
    rng = random.Random(15)
    narrow_then_wide = LazyTable(
        lambda c: "w" if c < "\u0590" else c
    )  # bytes first, the general gather later
    narrow_then_deleting = LazyTable(lambda c: "n" if c < "\u0590" else None)
    with_nul = LazyTable(lambda c: "\x00" if c == "a" else "b")
    deleting_then_wide = LazyTable(lambda c: None if c in "ab" else ("x" if c < "\u0590" else c))
    for table in (
        CLASS_TABLE,
        FAMILY_TABLE,
        arabic._LETTER_TABLE,
        arabic._TOKEN_CODES,
        lam._WORD_CHARS,
        fastwalk.GLYPH_KINDS,
        LazyTable(lambda c: "ab" if c == "x" else c),
        narrow_then_wide,
        narrow_then_deleting,
        with_nul,
        deleting_then_wide,
    ):
        for n in (LazyTable.LONG - 1, LazyTable.LONG, 3000):
            for _ in range(20):
                latin = "".join(
                    rng.choice(pool[:0x250]) for _ in range(n)
                )  # narrow tables' byte gather
                assert table.apply(latin) == latin.translate(table)
                text = "".join(
                    rng.choice(pool) for _ in range(n)
                )  # then, for some, a value that widens
                assert table.apply(text) == text.translate(table)
        page = "".join(rng.choice(pool) for _ in range(3000))
        assert fast(page) == reference(page)
