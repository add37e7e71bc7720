"""Arabic text-layer signals (counts only: the quality gate owns the thresholds) and the pattern
finders that normalization shares with them.

    text ─┬─ letters, words, presentation_forms             (shaped glyphs left in the text layer)
          ├─ decomposed_lam_alef   ا + (ا أ إ آ) + ل         (lam-alef ligature mapped alef-first)
          ├─ ligature_order_suspects ا + (ج ح خ م) + ل       (other lam ligatures, same defect)
          ├─ tatweel_runs / tatweel_chars                   (U+0640 justification)
          ├─ kashida_fffd          ل���ل                    (unmapped kashida glyphs, U+FFFD)
          ├─ isolated_letter_fragments  ا ل ع ر ب ي ة        (≥ 3 single-letter words in a row)
          ├─ foreign_letters_in_words   ﺍǄﻌﺎǄﻤﻲ             (Latin-Ext/IPA/Greek/PUA in a word)
          └─ control_chars_in_words     ﺍƾ\x0cﻧﺘﺮﻧﺖ          (C0/C1 controls in a word)

The lam-alef and ligature patterns count only at the start of a word, after at most two of the
one-letter prefixes و ف ب ك ل: `لإلغاء` (valid Arabic) never matches. Pattern counts are taken on
the text with Arabic presentation forms folded (NFKC), so shaped and unshaped layers compare.

Pure functions, no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass
from functools import lru_cache

from pagefleet.routing.charclass import (
    F_ARABIC,
    F_ELONGATION,
    F_PRESENTATION,
    LazyTable,
    features,
    positions,
)
from pagefleet.routing.scripts import (
    ARABIC_PRESENTATION_RANGES,
    in_ranges,
    is_arabic,
    is_private_use,
)

ALEF = "\u0627"
LAM = "\u0644"
TATWEEL = "\u0640"
REPLACEMENT_CHAR = "\ufffd"
ALEF_FORMS = "\u0627\u0623\u0625\u0622"  # ا أ إ آ
LIGATURE_SECONDS = "\u062c\u062d\u062e\u0645"  # ج ح خ م
PREFIXES = "\u0648\u0641\u0628\u0643\u0644"  # و ف ب ك ل
MAX_PREFIXES = 2
FOREIGN_RANGES = ((0x0100, 0x024F), (0x0250, 0x02AF), (0x0370, 0x03FF))
_WORD_SPLIT = re.compile(r"[ \t\n\r\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]+")
_ELONGATION = re.compile("[\u0640\ufffd]+")


@lru_cache(maxsize=8192)
def is_arabic_letter(ch: str) -> bool:
    """An Arabic letter (incl. presentation forms), not tatweel, a mark, a digit or punctuation."""
    return len(ch) == 1 and ch != TATWEEL and is_arabic(ch) and unicodedata.category(ch) == "Lo"


@lru_cache(maxsize=8192)
def is_arabic_mark(ch: str) -> bool:
    return is_arabic(ch) and unicodedata.category(ch) in ("Mn", "Mc", "Me")


@lru_cache(maxsize=8192)
def is_presentation_form(ch: str) -> bool:
    return ch != "\ufeff" and in_ranges(ch, ARABIC_PRESENTATION_RANGES)


def fold_presentation_forms(text: str) -> str:
    """NFKC applied to Arabic presentation forms only (for counting; offsets change). One
    translation (pagefleet.routing.charclass tables), no Python call per character."""
    if not features(text) & F_PRESENTATION:  # F_PRESENTATION holds every form the pattern finds
        return text
    return text.translate(_FOLD_TABLE) if _PRESENTATION_FORM.search(text) else text


_PRESENTATION_FORM = re.compile(
    "[\ufb50-\ufdff\ufe70-\ufefe]"
)  # is_presentation_form, as a pattern
_FOLD_TABLE = LazyTable(
    lambda c: unicodedata.normalize("NFKC", c) if is_presentation_form(c) else c
)
_LETTER_TABLE = LazyTable(
    lambda c: "1" if is_arabic_letter(c) else None
)  # keeps only Arabic letters


def _word_initial(text: str, pos: int) -> bool:
    """Is `pos` the start of a word, allowing up to two one-letter prefixes (with marks) before it?"""
    k, taken = pos, 0
    while taken < MAX_PREFIXES:
        j = k - 1
        while j >= 0 and is_arabic_mark(text[j]):
            j -= 1
        if j >= 0 and text[j] in PREFIXES:
            k, taken = j, taken + 1
        else:
            break
    return k == 0 or not (
        is_arabic_letter(text[k - 1]) or is_arabic_mark(text[k - 1]) or text[k - 1] == TATWEEL
    )


def _alef_x_lam(text: str, pattern: re.Pattern[str]) -> list[int]:
    """Where `pattern` (ا, one of a set of letters, ل) matches at a word start. Two matches never
    overlap: the second letter is never ا where ل follows, and ل is never ا."""
    if ALEF not in text:
        return []
    return [m.start() for m in pattern.finditer(text) if _word_initial(text, m.start())]


_LAM_ALEF_PATTERN = re.compile(f"{ALEF}[{ALEF_FORMS}]{LAM}")
_LIGATURE_PATTERN = re.compile(f"{ALEF}[{LIGATURE_SECONDS}]{LAM}")


def lam_alef_positions(text: str) -> list[int]:
    """Offsets of the word-initial ا in each `ا + (ا أ إ آ) + ل` (a lam-alef stored alef-first:
    `اآلتى` is `الآتى`). The repair swaps the two characters after the ا."""
    return _alef_x_lam(text, _LAM_ALEF_PATTERN)


def ligature_order_positions(text: str) -> list[int]:
    """Offsets of the word-initial ا in each `ا + (ج ح خ م) + ل` (`اجلريدة` for `الجريدة`). Only a
    suspect: `املأ` is a real word. Repair only with page evidence (a lam-alef decomposition)."""
    return _alef_x_lam(text, _LIGATURE_PATTERN)


def _base_before(text: str, pos: int) -> str:
    """The character before `pos`, skipping combining marks (the base of the previous cluster)."""
    j = pos - 1
    while j >= 0 and unicodedata.combining(text[j]):
        j -= 1
    return text[j] if j >= 0 else ""


def is_kashida_run(text: str, i: int, j: int) -> bool:
    """A U+FFFD-holding elongation run `text[i:j]` that is an unmapped kashida glyph: glued to an
    Arabic letter on one side and to an Arabic letter or a word boundary on the other (InDesign
    justification kashidas; a line break inside a stretched word leaves `\n ���ا`)."""
    if REPLACEMENT_CHAR not in text[i:j]:
        return False
    before = _base_before(text, i)
    nxt = text[j] if j < len(text) else ""
    letter_before, letter_after = is_arabic_letter(before), bool(nxt) and is_arabic_letter(nxt)
    boundary_before, boundary_after = before == "" or before.isspace(), nxt == "" or nxt.isspace()
    return (letter_before and (letter_after or boundary_after)) or (
        boundary_before and letter_after
    )


def elongation_repairs(text: str) -> list[tuple[int, int, str]]:
    """Removable elongation: ``(start, end, kind)`` for each tatweel or U+FFFD sub-run to delete.

    A run of U+0640/U+FFFD that holds a U+FFFD is removed only when `is_kashida_run` says it is an
    unmapped kashida glyph (`تس���رى`); a pure tatweel run is removed after an Arabic letter unless
    a combining mark follows (the mark sits on the tatweel).
    """
    found: list[tuple[int, int, str]] = []
    if not features(text) & F_ELONGATION:
        return found
    for i, j in _elongation_runs(text):
        after_letter = is_arabic_letter(_base_before(text, i))
        nxt = text[j] if j < len(text) else ""
        if REPLACEMENT_CHAR in text[i:j]:
            if is_kashida_run(text, i, j):
                found.extend(_sub_runs(text, i, j))
        elif after_letter and not (nxt and unicodedata.combining(nxt)):
            found.append((i, j, "tatweel"))
    return found


def _elongation_runs(text: str) -> list[tuple[int, int]]:
    """The spans `_ELONGATION.finditer` finds (maximal runs of U+0640 and U+FFFD, the characters
    of F_ELONGATION), from the page's cached code points instead of a scan of the pattern."""
    runs: list[tuple[int, int]] = []
    for pos in positions(text, F_ELONGATION):
        if runs and runs[-1][1] == pos:
            runs[-1] = (runs[-1][0], pos + 1)
        else:
            runs.append((pos, pos + 1))
    return runs


def _sub_runs(text: str, i: int, j: int) -> list[tuple[int, int, str]]:
    runs: list[tuple[int, int, str]] = []
    start = i
    for k in range(i + 1, j + 1):
        if k == j or text[k] != text[start]:
            runs.append((start, k, "tatweel" if text[start] == TATWEEL else "kashida_unmapped"))
            start = k
    return runs


def _is_foreign(ch: str) -> bool:
    return in_ranges(ch, FOREIGN_RANGES) or is_private_use(ch)


@dataclass(frozen=True)
class ArabicSignals:
    """Counts over one text; the gate turns them into reasons."""

    letters: int = 0
    words: int = 0
    presentation_forms: int = 0
    decomposed_lam_alef: int = 0
    ligature_order_suspects: int = 0
    tatweel_runs: int = 0
    tatweel_chars: int = 0
    kashida_fffd: int = 0
    kashida_fffd_chars: int = 0
    isolated_letter_fragments: int = 0
    isolated_letters: int = 0
    foreign_letters_in_words: int = 0
    control_chars_in_words: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def _word_code(ch: str) -> str:
    """For _TOKEN_CODES: a Arabic letter, f foreign letter, g foreign non-letter (PUA), o other
    non-Arabic letter, c control character, . anything else (one code per character)."""
    if is_arabic_letter(ch):
        return "a"
    letter = unicodedata.category(ch).startswith("L") and not is_arabic(ch)
    if _is_foreign(ch):
        return "f" if letter else "g"
    if letter:
        return "o"
    return "c" if unicodedata.category(ch) == "Cc" else "."


_TOKEN_CODES = LazyTable(
    lambda c: " " if _WORD_SPLIT.fullmatch(c) else _word_code(c)
)  # words: split()


def _word_counts(text: str) -> tuple[int, int, int, int, int]:
    """(Arabic words, fragment runs, letters in those runs, foreign letters and control characters
    inside Arabic words). Words split on spaces, tabs and line breaks only, so a stray control
    character (`ﺍƾ\x0cﻧﺘﺮﻧﺖ`) stays inside the word it broke. One translation of the text gives
    every character's code (the split characters a space); the counts are str.count per word."""
    if not features(text) & F_ARABIC:  # most pages: no Arabic at all, nothing to count
        return 0, 0, 0, 0, 0
    words = runs = run_letters = foreign = controls = streak = 0
    for word in _TOKEN_CODES.apply(text).split():
        arabic = word.count("a")
        if arabic:
            words += 1
            foreign += word.count("f") + word.count("g")
            controls += word.count("c")
            if arabic == 1 and "f" not in word and "o" not in word:
                streak += 1  # a one-letter "word": a fragment run goes on
                continue
        if streak >= 3:
            runs, run_letters = runs + 1, run_letters + streak
        streak = 0
    if streak >= 3:
        runs, run_letters = runs + 1, run_letters + streak
    return words, runs, run_letters, foreign, controls


def arabic_signals(text: str) -> ArabicSignals:
    """Count the Arabic text-layer defects in `text` (see the module docstring)."""
    if not features(text) & F_ARABIC:  # every count needs an Arabic letter, tatweel or form
        return ArabicSignals()
    folded = fold_presentation_forms(text)
    tatweel: list[int] = []
    kashida = kashida_chars = 0
    if features(text) & F_ELONGATION:  # every run needs a tatweel or a U+FFFD
        for i, j in _elongation_runs(text):  # a run of U+0640 lies inside one of these
            tatweel += [k - h for h, k, kind in _sub_runs(text, i, j) if kind == "tatweel"]
            if is_kashida_run(text, i, j):
                kashida += 1
                kashida_chars += text[i:j].count(REPLACEMENT_CHAR)
    words, runs, run_letters, foreign, controls = _word_counts(text)
    return ArabicSignals(
        letters=len(_LETTER_TABLE.apply(text)),
        words=words,
        presentation_forms=(
            len(_PRESENTATION_FORM.findall(text)) if features(text) & F_PRESENTATION else 0
        ),
        decomposed_lam_alef=len(lam_alef_positions(folded)),
        ligature_order_suspects=len(ligature_order_positions(folded)),
        tatweel_runs=len(tatweel),
        tatweel_chars=sum(tatweel),
        kashida_fffd=kashida,
        kashida_fffd_chars=kashida_chars,
        isolated_letter_fragments=runs,
        isolated_letters=run_letters,
        foreign_letters_in_words=foreign,
        control_chars_in_words=controls,
    )
