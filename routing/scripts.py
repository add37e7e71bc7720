"""Script statistics and the text-layer classifier (seed 003, extended to Hebrew).

Letters are counted by explicit Unicode ranges, never by bidi class: Private Use glyphs report
bidi class "L" and would inflate a "Latin" count tenfold on Arabic PDFs (seed 003, bug 2).

Pure functions, no I/O.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Literal

Script = Literal["he", "ar", "latin", "mixed", "unknown"]

HEBREW_RANGES = ((0x0590, 0x05FF), (0xFB1D, 0xFB4F))
ARABIC_RANGES = ((0x0600, 0x06FF), (0x0750, 0x077F), (0x08A0, 0x08FF), (0xFB50, 0xFDFF), (0xFE70, 0xFEFF))
ARABIC_PRESENTATION_RANGES = ((0xFB50, 0xFDFF), (0xFE70, 0xFEFF))
HEBREW_PRESENTATION_RANGES = ((0xFB1D, 0xFB4F),)
PRIVATE_USE_RANGES = ((0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD))
CJK_RANGES = ((0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF))


def in_ranges(ch: str, ranges: tuple[tuple[int, int], ...]) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in ranges)


def is_latin(ch: str) -> bool:
    return ("A" <= ch <= "Z") or ("a" <= ch <= "z")


def is_hebrew(ch: str) -> bool:
    return in_ranges(ch, HEBREW_RANGES)


def is_arabic(ch: str) -> bool:
    return in_ranges(ch, ARABIC_RANGES)


def is_rtl_letter(ch: str) -> bool:
    """A Hebrew or Arabic letter (not a mark, digit or punctuation of those blocks)."""
    return (is_hebrew(ch) or is_arabic(ch)) and unicodedata.category(ch).startswith("L")


def is_private_use(ch: str) -> bool:
    return in_ranges(ch, PRIVATE_USE_RANGES)


def letter_script(ch: str) -> str:
    """The script bucket of one character: latin, he, ar, pua, cjk, other_letter or none."""
    if is_latin(ch):
        return "latin"
    if is_hebrew(ch):
        return "he" if unicodedata.category(ch).startswith("L") else "none"
    if is_arabic(ch):
        return "ar" if unicodedata.category(ch).startswith("L") else "none"
    if is_private_use(ch):
        return "pua"
    if in_ranges(ch, CJK_RANGES):
        return "cjk"
    if unicodedata.category(ch).startswith("L"):
        return "other_letter"
    return "none"


@dataclass(frozen=True)
class ScriptStats:
    """Counts of the characters of one text, by script bucket."""

    latin: int = 0
    he: int = 0
    ar: int = 0
    pua: int = 0
    cjk: int = 0
    other_letter: int = 0
    digits: int = 0
    chars: int = 0
    non_space: int = 0

    @property
    def scored(self) -> int:
        """Letters that vote in the classifier: Latin + Hebrew + Arabic."""
        return self.latin + self.he + self.ar

    @property
    def letters(self) -> int:
        return self.latin + self.he + self.ar + self.cjk + self.other_letter

    def share(self, script: str) -> float:
        return getattr(self, script) / self.scored if self.scored else 0.0


def script_stats(text: str) -> ScriptStats:
    counts = {"latin": 0, "he": 0, "ar": 0, "pua": 0, "cjk": 0, "other_letter": 0}
    digits = non_space = 0
    for ch in text:
        if ch.isspace():
            continue
        non_space += 1
        if ch.isdigit():
            digits += 1
            continue
        bucket = letter_script(ch)
        if bucket != "none":
            counts[bucket] += 1
    return ScriptStats(digits=digits, chars=len(text), non_space=non_space, **counts)


@dataclass(frozen=True)
class ClassifierThresholds:
    """Seed 003's thresholds, configurable."""

    latin_min_share: float = 0.95
    rtl_min_share: float = 0.50
    min_letters: int = 1


@dataclass(frozen=True)
class ScriptDecision:
    """What the text layer says about a page's script. `script` is None when undecided."""

    script: Script | None
    margin: float | None
    stats: ScriptStats = field(repr=False)

    @property
    def decided(self) -> bool:
        return self.script is not None

    def observed(self) -> Script:
        """The script to record on a page even when undecided: mixed, or unknown."""
        if self.script is not None:
            return self.script
        return "mixed" if self.stats.scored else "unknown"


def classify_text_layer(text: str, thresholds: ClassifierThresholds = ClassifierThresholds()) -> ScriptDecision:
    """Seed 003: >95% Latin → latin; >50% Hebrew or Arabic → that script; otherwise undecided.

    The margin is the winning share minus its threshold (how far inside the decision the page is).
    """
    stats = script_stats(text)
    if stats.scored < thresholds.min_letters:
        return ScriptDecision(None, None, stats)
    latin, he, ar = stats.share("latin"), stats.share("he"), stats.share("ar")
    if latin > thresholds.latin_min_share:
        return ScriptDecision("latin", round(latin - thresholds.latin_min_share, 4), stats)
    if he > thresholds.rtl_min_share:
        return ScriptDecision("he", round(he - thresholds.rtl_min_share, 4), stats)
    if ar > thresholds.rtl_min_share:
        return ScriptDecision("ar", round(ar - thresholds.rtl_min_share, 4), stats)
    return ScriptDecision(None, round(max(latin, he, ar) - thresholds.rtl_min_share, 4), stats)


def direction_of(script: str) -> str:
    return {"he": "rtl", "ar": "rtl", "latin": "ltr"}.get(script, "mixed" if script == "mixed" else "unknown")
