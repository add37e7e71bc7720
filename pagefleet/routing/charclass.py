"""What one character is (by explicit Unicode ranges, never by bidi class), and translation tables
that let a whole text be classified in one C-level pass.

    CLASS_TABLE.apply(text)       one class code per character (see CLASS_CODES); counting codes
                                  with str.count gives every per-script count the classifier and
                                  the quality gate need, without a Python call per character
    FAMILY_TABLE.apply(text)      letter families for mixed-script words (separators → space)
    features(text)                which kinds of character a text holds (F_* bits): a check of
                                  characters a page does not hold is skipped without a scan

The tables are filled lazily, one entry per distinct code point ever seen (dict `__missing__`), so
a line costs one dict lookup in C per character, and a page one numpy gather. Pure functions, no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache
from typing import ClassVar

import numpy as np

HEBREW_RANGES = ((0x0590, 0x05FF), (0xFB1D, 0xFB4F))
ARABIC_RANGES = (
    (0x0600, 0x06FF),
    (0x0750, 0x077F),
    (0x08A0, 0x08FF),
    (0xFB50, 0xFDFF),
    (0xFE70, 0xFEFF),
)
ARABIC_PRESENTATION_RANGES = ((0xFB50, 0xFDFF), (0xFE70, 0xFEFF))
HEBREW_PRESENTATION_RANGES = ((0xFB1D, 0xFB4F),)
PRIVATE_USE_RANGES = ((0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD))
CJK_RANGES = (
    (0x3040, 0x30FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
)
EUROPEAN_RANGES = (
    (0xC0, 0x24F),
    (0x370, 0x4FF),
    (0x1E00, 0x1EFF),
)  # Latin-1..Ext-B, Greek, Cyrillic
CP1252_SPECIALS = frozenset("€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ")
NFKC_RANGES = (
    (0xFB50, 0xFDFF),  # Arabic Presentation Forms-A
    (0xFE70, 0xFEFE),  # Arabic Presentation Forms-B (U+FEFF, the BOM, excluded)
    (0xFB1D, 0xFB4F),  # Hebrew presentation forms
    (0xFB00, 0xFB06),  # Latin ligatures
    (0xFF00, 0xFFEF),  # halfwidth and fullwidth forms
)
TABLE_CAP = 200_000  # distinct code points kept per table (a hostile text cannot grow it further)


def _chars(ranges: tuple[tuple[int, int], ...]) -> frozenset[str]:
    return frozenset(chr(cp) for lo, hi in ranges for cp in range(lo, hi + 1))


_HEBREW = _chars(HEBREW_RANGES)
_ARABIC = _chars(ARABIC_RANGES)


def ranges_pattern(ranges: tuple[tuple[int, int], ...]) -> re.Pattern[str]:
    """A compiled character class for `ranges`: one C-level search instead of a call per character."""
    return re.compile("[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges) + "]")


ARABIC_ANY = ranges_pattern(ARABIC_RANGES)


def in_ranges(ch: str, ranges: tuple[tuple[int, int], ...]) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in ranges)


def is_latin(ch: str) -> bool:
    return ("A" <= ch <= "Z") or ("a" <= ch <= "z")


def is_hebrew(ch: str) -> bool:
    return ch in _HEBREW


def is_arabic(ch: str) -> bool:
    return ch in _ARABIC


def is_private_use(ch: str) -> bool:
    return (
        ("\ue000" <= ch <= "\uf8ff")
        or ("\U000f0000" <= ch <= "\U000ffffd")
        or ("\U00100000" <= ch <= "\U0010fffd")
    )


def is_letter(ch: str) -> bool:
    return unicodedata.category(ch)[0] == "L"


def is_rtl_letter(ch: str) -> bool:
    """A Hebrew or Arabic letter (not a mark, digit or punctuation of those blocks)."""
    return (ch in _HEBREW or ch in _ARABIC) and is_letter(ch)


def letter_script(ch: str) -> str:
    """The script bucket of one character: latin, he, ar, pua, cjk, other_letter or none."""
    if is_latin(ch):
        return "latin"
    if ch in _HEBREW:
        return "he" if is_letter(ch) else "none"
    if ch in _ARABIC:
        return "ar" if is_letter(ch) else "none"
    if is_private_use(ch):
        return "pua"
    if in_ranges(ch, CJK_RANGES):
        return "cjk"
    if is_letter(ch):
        return "other_letter"
    return "none"


# One code per character; every count below is a sum of code counts.
CLASS_CODES = {
    " ": "whitespace",
    "X": "whitespace that is also a control character (VT, FS..US, NEL)",
    "x": "control character (Cc other than tab/newline/return/form feed)",
    "d": "digit (str.isdigit)",
    "a": "Latin letter A-Z a-z",
    "h": "Hebrew letter",
    "r": "Arabic letter (presentation forms included)",
    "p": "Private Use",
    "c": "CJK letter",
    "k": "CJK-range non-letter",
    "e": "European letter (Latin-1..Ext-B, Greek, Cyrillic, Latin Ext. Additional)",
    "E": "European letter that is also a Latin-1/cp1252 mojibake character",
    "o": "other letter",
    "O": "other letter that is also a cp1252 special (ˆ)",
    "m": "Latin-1/cp1252 mojibake character that is not a letter",
    "n": "anything else (punctuation, symbols, marks, RTL-block non-letters)",
}


def char_class(ch: str) -> str:
    control = unicodedata.category(ch) == "Cc" and ch not in "\t\n\r\f"
    if ch.isspace():
        return "X" if control else " "
    if control:
        return "x"
    if ch.isdigit():
        return "d"
    bucket = letter_script(ch)
    if bucket in ("latin", "he", "ar", "pua"):
        return {"latin": "a", "he": "h", "ar": "r", "pua": "p"}[bucket]
    letter = is_letter(ch)
    if bucket == "cjk":
        return "c" if letter else "k"
    moji = 0xC0 <= ord(ch) <= 0xFF or ch in CP1252_SPECIALS
    if letter:
        european = in_ranges(ch, EUROPEAN_RANGES)
        return ("E" if moji else "e") if european else ("O" if moji else "o")
    return "m" if moji else "n"


def letter_family(ch: str) -> str | None:
    """The family of a letter for mixed-script words; Latin mixes legitimately and is not counted."""
    if not is_letter(ch):
        return None
    cp = ord(ch)
    if ch in _HEBREW:
        return "h"
    if ch in _ARABIC:
        return "a"
    if 0x370 <= cp <= 0x3FF:
        return "g"
    if 0x400 <= cp <= 0x4FF:
        return "y"
    if 0x3040 <= cp <= 0x9FFF or 0xAC00 <= cp <= 0xD7AF:
        return "k"
    return None


TOKEN_SEPARATORS = frozenset("-\u05be/.,;:!?()[]{}\"'״׳«»")


def family_code(ch: str) -> str | None:
    """For FAMILY_TABLE: separators of mixed-script tokens → space, family letters → a code,
    everything else deleted."""
    if ch.isspace() or ch in TOKEN_SEPARATORS:
        return " "
    return letter_family(ch)


class LazyTable(dict):  # type: ignore[type-arg]
    """A str.translate table computed per code point on first sight; later lookups stay in C.

    `apply(text)` is `text.translate(table)`; a long text is translated in numpy instead (one
    gather over its code points: str.translate looks every character up in the dict, ~70 ns
    each, a tenth of that in numpy). That needs every value to be one character or none. While
    every value seen is one character from U+0002 to U+00FF or none (the class codes, the glyph
    kinds, the brackets kept), the gather is of bytes, read back as Latin-1: a page in a third of
    the time of the general gather, which makes room for any code point."""

    LONG: ClassVar[int] = (
        256  # shorter texts: str.translate (numpy's fixed cost per call is a few µs)
    )

    def __init__(self, fn: Callable[[str], str | None]) -> None:
        super().__init__()
        self._fn = fn
        self._array: np.ndarray | None = None  # code point -> 0 unseen, 1 deleted, value + 2
        self._bytes: np.ndarray | None = (
            None  # code point -> 0 unseen, 1 deleted, else the value (while narrow)
        )
        self._arrayable = True
        self._narrow = True  # every value so far none or one character of U+0002..U+00FF
        self._deletes = False  # some value so far is none

    def __missing__(self, cp: int) -> str | None:
        value = self._fn(chr(cp))
        if len(self) < TABLE_CAP:
            self[cp] = value
        return value

    def apply(self, text: str) -> str:
        if len(text) < self.LONG or not self._arrayable:
            return text.translate(self)
        if self._array is None or self._bytes is None:
            self._array = np.zeros(
                0x110000, dtype=np.uint32
            )  # calloc: only the pages used get memory
            self._bytes = np.zeros(0x110000, dtype=np.uint8)
        points = code_points(text)
        out = (self._bytes if self._narrow else self._array).take(points)  # 0: unseen in either
        if not out.all():
            if not self._fill(set(points[out == 0].tolist())):  # (np.unique: 20 ms on first use)
                return text.translate(self)
            out = (self._bytes if self._narrow else self._array).take(
                points
            )  # (narrow may have ended)
        if self._narrow:  # a deleted character is byte 1, no value is: drop it from the bytes
            raw = out.tobytes()
            return (raw.replace(b"\x01", b"") if self._deletes else raw).decode("latin-1")
        return (out[out != 1] - 2).tobytes().decode("utf-32-le", "surrogatepass")

    def _fill(self, unseen: set[int]) -> bool:
        assert self._array is not None and self._bytes is not None
        for cp in unseen:
            value = self[cp]
            if value is not None and len(value) > 1:
                self._arrayable = False  # a value of several characters: str.translate from now on
                return False
            self._array[cp] = ord(value) + 2 if value else 1
            if not value:
                self._bytes[cp], self._deletes = 1, True
            elif 2 <= ord(value) < 0x100:
                self._bytes[cp] = ord(value)
            else:
                self._narrow = False  # U+0000, U+0001 or a wider character: the general gather
        return True


CLASS_TABLE = LazyTable(char_class)
FAMILY_TABLE = LazyTable(family_code)


def classes(text: str) -> str:
    """`text` with every character replaced by its class code (same length)."""
    return CLASS_TABLE.apply(text)


def class_counts(text: str) -> list[int]:
    """How many characters of `text` carry each class code, indexed by the code's ordinal: one
    translation, then one numpy count over its bytes (a `str.count` per code scans the page
    once for each of them)."""
    codes = classes(text).encode("latin-1")  # the codes are ASCII
    counts: list[int] = np.bincount(np.frombuffer(codes, dtype=np.uint8), minlength=128).tolist()
    return counts


def has_rtl_letter(text: str) -> bool:
    """Does `text` hold a Hebrew or Arabic letter (`is_rtl_letter`)? One translation, no Python
    call per character."""
    codes = classes(text)
    return "h" in codes or "r" in codes


# What `features` reports: one bit per kind of character, each the characters (code point ranges)
# that some check looks for; a check whose bit a text lacks cannot find anything in it.
F_ARABIC, F_HEBREW, F_PRESENTATION, F_NFKC, F_SPACE, F_BIDI = 1, 2, 4, 8, 16, 32
F_ELONGATION, F_PRIVATE_USE, F_BRACKET, F_CONTROL, F_CR, F_MOJIBAKE = 64, 128, 256, 512, 1024, 2048
F_GREEK, F_CYRILLIC, F_CJK = 4096, 8192, 16384


def _points(chars: str) -> tuple[tuple[int, int], ...]:
    return tuple((ord(c), ord(c)) for c in chars)


FEATURE_RANGES: dict[int, tuple[tuple[int, int], ...]] = {
    F_ARABIC: ARABIC_RANGES,
    F_HEBREW: HEBREW_RANGES,
    F_PRESENTATION: ARABIC_PRESENTATION_RANGES,
    F_NFKC: NFKC_RANGES,
    F_SPACE: (
        (0xA0, 0xA0),
        (0x1680, 0x1680),
        (0x2000, 0x200A),
        (0x202F, 0x202F),
        (0x205F, 0x205F),
        (0x3000, 0x3000),
    ),  # Zs other than " "
    F_BIDI: ((0x061C, 0x061C), (0x200E, 0x200F), (0x202A, 0x202E), (0x2066, 0x2069)),
    F_ELONGATION: ((0x0640, 0x0640), (0xFFFD, 0xFFFD)),  # tatweel, U+FFFD
    F_PRIVATE_USE: PRIVATE_USE_RANGES,
    F_BRACKET: _points("()[]{}"),
    F_CONTROL: ((0x00, 0x08), (0x0B, 0x0B), (0x0E, 0x1F), (0x7F, 0x9F)),  # Cc but \t \n \f \r
    F_CR: _points("\r"),
    F_MOJIBAKE: _points("ÃÂ×ØÙÚÛ"),  # the lead bytes of UTF-8 read as cp1252
    F_GREEK: ((0x0370, 0x03FF),),
    F_CYRILLIC: ((0x0400, 0x04FF),),
    F_CJK: ((0x3040, 0x9FFF), (0xAC00, 0xD7AF)),
}
_FEATURES: list[np.ndarray] = []  # the code point -> bits table, built on first use (4 MB)


def _feature_table() -> np.ndarray:
    if not _FEATURES:
        table = np.zeros(0x110000, dtype=np.uint32)
        for bit, ranges in FEATURE_RANGES.items():
            for lo, hi in ranges:
                table[lo : hi + 1] |= bit
        _FEATURES.append(table)
    return _FEATURES[0]


@lru_cache(maxsize=8)
def code_points(text: str) -> np.ndarray:
    """The code points of `text` as an index array, cached per text: the feature bits and each
    table's gather over one page share one conversion. Shared: never written to (a read-only
    flag would make every `take` copy it)."""
    raw = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    points: np.ndarray = raw.astype(np.intp)
    return points


@lru_cache(maxsize=32)
def features(text: str) -> int:
    """The F_* bits of the characters `text` holds: one numpy gather over its code points (a
    regular expression scans a page's characters at ~5-13 ns each, a check at a time). Cached per
    text: the gate and the repair stages ask about the same page many times."""
    if not text:
        return 0
    return int(np.bitwise_or.reduce(_feature_table().take(code_points(text))))


def positions(text: str, bit: int) -> list[int]:
    """The offsets of the characters of `text` that carry `bit` (one numpy pass)."""
    found: list[int] = np.flatnonzero(_feature_table().take(code_points(text)) & bit).tolist()
    return found
