"""Script statistics and the text-layer classifier (seed 003, extended to Hebrew).

Letters are counted by explicit Unicode ranges, never by bidi class: Private Use glyphs report
bidi class "L" and would inflate a "Latin" count tenfold on Arabic PDFs (seed 003, bug 2).

Pure functions, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from pagefleet.routing.charclass import (  # noqa: F401 - re-exported: the per-character predicates live there
    ARABIC_PRESENTATION_RANGES,
    ARABIC_RANGES,
    CJK_RANGES,
    HEBREW_PRESENTATION_RANGES,
    HEBREW_RANGES,
    PRIVATE_USE_RANGES,
    class_counts,
    classes,
    in_ranges,
    is_arabic,
    is_hebrew,
    is_latin,
    is_private_use,
    is_rtl_letter,
    letter_script,
)

Script = Literal["he", "ar", "latin", "mixed", "unknown"]


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
    # what the quality gate reads from the same pass
    controls: int = 0  # C0/C1 controls other than tab, newline, return, form feed
    cjk_letters: int = 0  # the letters among `cjk` (that bucket counts the whole CJK ranges)
    european: int = 0  # letters of Latin-1..Latin Ext-B, Greek, Cyrillic (inside other_letter)
    mojibake: int = 0  # U+00C0..U+00FF and the cp1252 specials (letters or not)

    @property
    def scored(self) -> int:
        """Letters that vote in the classifier: Latin + Hebrew + Arabic."""
        return self.latin + self.he + self.ar

    @property
    def letters(self) -> int:
        return self.latin + self.he + self.ar + self.cjk + self.other_letter

    @property
    def all_letters(self) -> int:
        """Every character of a Unicode letter category (what the gate calls letters)."""
        return self.latin + self.he + self.ar + self.cjk_letters + self.other_letter

    @property
    def known_letters(self) -> int:
        """Letters of the scripts the gate expects: Latin A-Z, Hebrew, Arabic, European."""
        return self.latin + self.he + self.ar + self.european

    def share(self, script: str) -> float:
        return getattr(self, script) / self.scored if self.scored else 0.0


@lru_cache(maxsize=64)
def script_stats(text: str) -> ScriptStats:
    """One pass over `text` (a translation to class codes, then one count of the codes); cached per text,
    so the gate and the classifier looking at the same page share it."""
    n = class_counts(text)
    spaces, space_controls = n[ord(" ")], n[ord("X")]
    european, european_moji, other, other_moji = n[ord("e")], n[ord("E")], n[ord("o")], n[ord("O")]
    cjk_letters = n[ord("c")]
    return ScriptStats(
        latin=n[ord("a")],
        he=n[ord("h")],
        ar=n[ord("r")],
        pua=n[ord("p")],
        cjk=cjk_letters + n[ord("k")],
        other_letter=european + european_moji + other + other_moji,
        digits=n[ord("d")],
        chars=len(text),
        non_space=len(text) - spaces - space_controls,
        controls=space_controls + n[ord("x")],
        cjk_letters=cjk_letters,
        european=european + european_moji,
        mojibake=european_moji + other_moji + n[ord("m")],
    )


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


def classify_text_layer(
    text: str, thresholds: ClassifierThresholds = ClassifierThresholds()
) -> ScriptDecision:
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
    return {"he": "rtl", "ar": "rtl", "latin": "ltr"}.get(
        script, "mixed" if script == "mixed" else "unknown"
    )
