"""Lam ligatures whose code points come out in the wrong order (issue 12).

A lam ligature is one glyph (ﻻ ﻷ ﻹ ﻵ, and ﳉ ﳊ ﳋ ﳌ … in Naskh fonts) that stands for two or three
letters, lam first. Many PDFs give such a glyph its code points in the wrong order: a ToUnicode
map written alef-first, or a line drawn left to right (InDesign) that the extractor reorders code
point by code point, putting the glyph's zero-width second code point first. `لا يجوز` ("must
not") then reads `ال يجوز`: the negation is gone.

    geometry (text layer)  code points of one glyph (zero-width or shared boxes, see
                           pagefleet.workers.pdf.clusters.glyph_clusters) form a cluster; a cluster whose
                           letters, reversed, are a lam ligature and which does not start with
                           lam is swapped → signal `swapped_lam_ligature`, repaired by restoring
                           the cluster's order (edit kind `lam_ligature_order`)
    lexical (OCR, pdftotext, a layer without geometry)
                           a lone `ال` (the article never stands alone) → `lone_al`; swapped
                           words (`خالل` `ثالث` `آالف` `إال`) on a page that never shows lam
                           before alef → `swapped_lam_ligature`. Never repaired from the text
                           alone: a page that still holds either after repair is refused.

Hebrew, Latin and correct Arabic text hold none of these: nothing here changes them.

Pure functions, no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from pagefleet.routing.arabic import (
    ALEF_FORMS,
    LAM,
    PREFIXES,
    fold_presentation_forms,
    is_arabic_letter,
    is_arabic_mark,
    is_presentation_form,
)
from pagefleet.routing.charclass import ARABIC_RANGES, F_ARABIC, LazyTable, features

SWAPPED_WORDS = frozenset({"خالل", "ثالث", "آالف", "إال"})  # خلال ثلاث آلاف إلا, stored alef-first
_LAM_ALEF = re.compile(
    f"{LAM}(?=[{re.escape(ALEF_FORMS)}](?!{LAM}))"
)  # lam, an alef form, then no lam
MIN_WORDS_FOR_ABSENCE = 20  # "the page never shows lam before alef" means something from here on


@lru_cache(maxsize=1)
def lam_ligatures() -> frozenset[str]:
    """The letter sequences of Unicode's lam ligature presentation forms (لا لأ لج لمح …)."""
    found = set()
    for cp in [*range(0xFB50, 0xFE00), *range(0xFE70, 0xFEFF)]:
        letters = unicodedata.normalize("NFKC", chr(cp))
        if (
            2 <= len(letters) <= 3
            and letters[0] == LAM
            and all(is_arabic_letter(c) for c in letters)
        ):
            found.add(letters)
    return frozenset(found)


def _units(cluster: str) -> list[str]:
    """Base letters, each with the combining marks that follow it."""
    units: list[str] = []
    for ch in cluster:
        if units and unicodedata.combining(ch):
            units[-1] += ch
        else:
            units.append(ch)
    return units


def _letter_chars(ch: str) -> str:
    """For _LETTER_CHARS: the character with its presentation form folded, marks dropped."""
    folded = unicodedata.normalize("NFKC", ch) if is_presentation_form(ch) else ch
    return "".join(c for c in folded if not unicodedata.combining(c))


_LETTER_CHARS = LazyTable(_letter_chars)


def _letters(text: str) -> str:
    """`text` with presentation forms folded and combining marks dropped, in one translation."""
    return text.translate(_LETTER_CHARS)


def restored_cluster(cluster: str) -> str | None:
    """The cluster in its right order if it is a swapped lam ligature, else None.

    `ال` → `لا`, `أل` → `لأ`, `جل` → `لج`, `حمل` → `لمح`; `لا` (right already), `كل` (kaf-lam,
    a ligature that starts with kaf) and anything else → None."""
    if _letters(cluster)[:1] == LAM:
        return None
    restored = "".join(reversed(_units(cluster)))
    return restored if _letters(restored) in lam_ligatures() else None


def is_lam_alef(cluster: str) -> bool:
    """Is `cluster` (in the right order) a lam-alef, not another lam ligature?"""
    return _letters(cluster)[1:2] in tuple(ALEF_FORMS)


def swapped_clusters(text: str, spans: Iterable[Sequence[int]]) -> list[tuple[int, int, str]]:
    """``(start, end, restored)`` for each cluster span of `text` that is a swapped lam ligature."""
    found = []
    for start, end in spans:
        new = restored_cluster(text[start:end])
        if new is not None:
            found.append((start, end, new))
    return found


def _attached(ch: str) -> bool:
    return is_arabic_letter(ch) or is_arabic_mark(ch) or ch == "\u0640"


def _attached_class() -> str:
    """`_attached` as a regular-expression class: every such character lies in the Arabic blocks."""
    found = sorted(
        {ch for lo, hi in ARABIC_RANGES for ch in map(chr, range(lo, hi + 1)) if _attached(ch)}
    )
    return "[" + "".join(re.escape(ch) for ch in found) + "]"


# `ال` with nothing attached on either side; two never overlap (the ل of one is not the ا of the next).
# The ا comes first and the look-behind checks the character before it: a search for a literal
# runs several times faster than one that tries the look-behind at every offset.
_ATTACHED = _attached_class()
_LONE_AL = re.compile(f"\u0627(?<!{_ATTACHED}\u0627)\u0644(?!{_ATTACHED})")


def lone_al_positions(text: str) -> list[int]:
    """Offsets of each `ال` that stands alone (no Arabic letter, mark or tatweel on either side)."""
    return [m.start() for m in _LONE_AL.finditer(text)]


def lam_before_alef(text: str) -> int:
    """How often lam is followed by an alef form that no lam follows (the right order of a
    lam-alef; `ولإلجراءات` is the prefix lam before a swapped `إل`, not a lam-alef)."""
    return _lam_before_alef(fold_presentation_forms(text))


def _lam_before_alef(folded: str) -> int:
    return len(_LAM_ALEF.findall(folded))


def _word_char(ch: str) -> str:
    """An Arabic letter stays, an Arabic mark goes (it neither joins nor ends a word), anything
    else ends the word."""
    if is_arabic_letter(ch):
        return ch
    return "" if is_arabic_mark(ch) else " "


_WORD_CHARS = LazyTable(_word_char)


def _word_tokens(text: str) -> list[str]:
    """Arabic words of an already folded text (marks skipped), in one C-level pass."""
    return _WORD_CHARS.apply(text).split()


def _is_swapped_word(word: str) -> bool:
    return word in SWAPPED_WORDS or (word[:1] in PREFIXES and word[1:] in SWAPPED_WORDS)


@dataclass(frozen=True)
class LamSignals:
    """Counts over one page; `swapped` is the verdict the gate and the invariant use."""

    swapped_clusters: int = 0  # geometry: clusters in the wrong order
    lone_al: int = 0
    lam_before_alef: int = 0
    swapped_words: int = 0
    arabic_words: int = 0

    @property
    def lexical_swap(self) -> bool:
        """Swapped words on a page long enough to show lam before alef, which never does."""
        return (
            self.swapped_words > 0
            and self.lam_before_alef == 0
            and self.arabic_words >= MIN_WORDS_FOR_ABSENCE
        )

    @property
    def swapped(self) -> bool:
        return self.swapped_clusters > 0 or self.lexical_swap


def lam_signals(text: str, clusters: Iterable[Sequence[int]] | None = None) -> LamSignals:
    """Count the evidence of swapped lam ligatures in `text` (clusters: spans into `text`)."""
    if not features(text) & F_ARABIC:
        return LamSignals()  # Hebrew, Latin: no scan at all
    folded = fold_presentation_forms(text)
    if LAM not in folded:
        return LamSignals()
    words = _word_tokens(folded)
    joined = " ".join(
        words
    )  # a swapped word (after its prefix) is a piece of it: most pages hold none
    swapped = (
        sum(1 for w in words if _is_swapped_word(w))
        if any(w in joined for w in SWAPPED_WORDS)
        else 0
    )
    return LamSignals(
        swapped_clusters=len(swapped_clusters(text, clusters or ())),
        lone_al=len(lone_al_positions(folded)),
        lam_before_alef=_lam_before_alef(folded),
        swapped_words=swapped,
        arabic_words=len(words),
    )


def lam_violations(text: str) -> list[str]:
    """What an accepted page's repaired text must not hold (the canonical invariant)."""
    sig = lam_signals(text)
    found = []
    if sig.lone_al:
        found.append("lone_al")
    if sig.lexical_swap:
        found.append("swapped_lam_ligature")
    return found
