"""Which lines of a page hold RTL text stored in visual (reversed) order — decided two independent ways.

1. Letters: Hebrew final forms (ך ם ן ף ץ) only end words and their medial counterparts (כ מ נ פ צ)
   don't; words that begin with a final form or end with a medial one are mirrored text. The
   Arabic analogue: teh marbuta (ة) and alef maksura (ى) only end words, and a presentation-form
   word that starts with a final form or ends with an initial form is mirrored.
2. Geometry: inside an RTL run, letters whose x-positions increase in extraction order were stored
   visually (pdf-inspector's test). MuPDF already orders RTL runs by position, so on its output this
   fires only where an extractor kept content order; it never fires on OCR text.

Text produced by OCR is already logical and is never flagged for reversal.
Pure functions, no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from pagefleet.routing.charclass import (
    ARABIC_RANGES,
    F_ARABIC,
    F_HEBREW,
    F_PRESENTATION,
    HEBREW_RANGES,
    LazyTable,
    features,
    ranges_pattern,
)
from pagefleet.routing.mirrored_lines import (
    FINALS,
    fold_hebrew_presentation,
    hebrew_order_evidence,
    hebrew_word_votes,
)

_RTL_ANY = ranges_pattern(HEBREW_RANGES + ARABIC_RANGES)
_ARABIC_WORD = re.compile(r"[\u0620-\u064A\u0671-\u06D3\u06FA-\u06FF]+")
_ARABIC_FINAL_ONLY = "\u0629\u0649"  # ة ى
_ARABIC_SHAPED = re.compile(r"[\u0621-\u064A\uFB50-\uFDFF\uFE70-\uFEFF]+")
_LETTERS = r"\u0620-\u064A\u0671-\u06D3\u06FA-\u06FF"  # _ARABIC_WORD's class
# a final-only letter opening a word of two or more letters / closing one (regular expressions that
# count what a loop over _ARABIC_WORD's words counted); the letter is matched first and the
# look-behind checks the character before it, so the search skips to the two letters in C
_FINAL = f"[{_ARABIC_FINAL_ONLY}]"
_FINAL_FIRST = re.compile(f"{_FINAL}(?<![{_LETTERS}]{_FINAL})(?=[{_LETTERS}])")
_FINAL_LAST = re.compile(f"{_FINAL}(?<=[{_LETTERS}]{_FINAL})(?![{_LETTERS}])")


@dataclass(frozen=True)
class LineEvidence:
    visual_votes: int  # final-first + medial-last (+ Arabic final-only letters at word starts)
    logical_votes: int  # final-last (+ Arabic final-only letters at word ends)
    geometry_visual: int  # RTL letter pairs with increasing x in extraction order
    geometry_logical: int
    final_mid_word: (
        int  # a Hebrew final form inside a word: neither order explains it (letter soup)
    )
    hebrew_words: int

    @property
    def letters_strong(self) -> bool:
        return self.visual_votes >= 2 and self.visual_votes > self.logical_votes

    @property
    def letters_say_visual(self) -> bool:
        return self.letters_strong or (self.hebrew_words <= 3 and self.weak_visual)

    @property
    def letters_say_logical(self) -> bool:
        return self.logical_votes >= 2 and self.logical_votes > self.visual_votes

    @property
    def weak_visual(self) -> bool:
        return self.visual_votes >= 1 and self.logical_votes == 0

    @property
    def geometry_says_visual(self) -> bool:
        return self.geometry_visual >= 2 and self.geometry_visual > 2 * self.geometry_logical


@lru_cache(maxsize=4096)
def _form(ch: str) -> str:
    """The positional form of an Arabic presentation-form character: initial/medial/final/isolated."""
    tag = unicodedata.decomposition(ch)
    return tag[1 : tag.index(">")] if tag.startswith("<") else ""


def arabic_order_votes(text: str) -> tuple[int, int]:
    """(visual, logical) votes from Arabic words: letters that only end words (ة ى) at a word's
    start or end; and for presentation forms, the shape itself — a word whose first shaped glyph
    is a *final* form or whose last is an *initial* form was written mirrored."""
    votes = _arabic_votes(text)
    return sum(1 for _, visual in votes if visual), sum(1 for _, visual in votes if not visual)


def _arabic_votes(text: str) -> list[tuple[int, bool]]:
    """(offset, visual) of each Arabic vote in `text`: True visual, False logical. No vote spans a
    line break (a break is neither a letter nor a shaped glyph): a page's votes are its lines'."""
    votes = [(m.start(), True) for m in _FINAL_FIRST.finditer(text)]
    votes += [(m.start(), False) for m in _FINAL_LAST.finditer(text)]
    if not features(text) & F_PRESENTATION:
        return votes  # a shape vote needs two presentation forms in a word
    codes = ""  # every character's positional form (i, m, f; "-" for none), one translation
    for match in _ARABIC_SHAPED.finditer(text):
        codes = codes or _FORM_CODES.apply(text)
        forms = codes[match.start() : match.end()].replace("-", "")
        if len(forms) < 2:
            continue
        if forms[0] == "f" or forms[-1] == "i":
            votes.append((match.start(), True))
        elif forms[0] == "i" or forms[-1] == "f":
            votes.append((match.start(), False))
    return votes


_FORM_CODES = LazyTable(lambda c: {"initial": "i", "medial": "m", "final": "f"}.get(_form(c), "-"))


def line_evidence(line: str, geometry: Sequence[int] | None = None) -> LineEvidence:
    inc, dec = (geometry[0], geometry[1]) if geometry else (0, 0)
    if _RTL_ANY.search(line) is None:  # every letter vote needs a Hebrew or Arabic character
        return LineEvidence(0, 0, inc, dec, 0, 0)
    he = hebrew_order_evidence(line)
    ar_visual, ar_logical = arabic_order_votes(line)
    return LineEvidence(
        visual_votes=he.final_first + he.medial_last + ar_visual,
        logical_votes=he.final_last + ar_logical,
        geometry_visual=inc,
        geometry_logical=dec,
        final_mid_word=_final_mid_word(line),
        hebrew_words=he.words,
    )


_HEBREW_WORD = re.compile(r"[\u05D0-\u05EA\u0591-\u05C7]+")
_FINAL_THEN_LETTER = re.compile(f"[{FINALS}][\u0591-\u05c7]*[\u05d0-\u05ea]")


def _final_mid_word(text: str) -> int:
    return len(_final_mid_words(text))


def _final_mid_words(text: str) -> list[int]:
    """The offset of each Hebrew word holding a final form inside it (never across a line break)."""
    found: list[int] = []
    if _FINAL_THEN_LETTER.search(text) is None:  # no final form with a letter after it in its word
        return found
    for match in _HEBREW_WORD.finditer(text):
        letters = [c for c in match.group() if "\u05d0" <= c <= "\u05ea"]
        if any(c in FINALS for c in letters[1:-1]):
            found.append(match.start())
    return found


_NO_EVIDENCE = LineEvidence(0, 0, 0, 0, 0, 0)


def _starts(lines: list[str]) -> list[int]:
    """Where each line begins in the text they were split from."""
    starts, at = [], 0
    for line in lines:
        starts.append(at)
        at += len(line) + 1
    return starts


Votes = tuple[list[int], list[int], list[int], list[int], list[int], list[int]]


def _page_evidence(
    text: str, lines: list[str], geometry: Sequence[Sequence[int]] | None, scripts: int
) -> Votes:
    """`line_evidence` of every line as six lists (visual votes, logical votes, geometry visual,
    geometry logical, final mid-word, Hebrew words), from one pass of each pattern over the whole
    page (a line at a time cost a few pattern calls a line, and an object a line): each vote is
    counted on the line its offset falls in."""
    n = len(lines)
    visual, logical, mid, words = [0] * n, [0] * n, [0] * n, [0] * n
    starts = _starts(lines)
    if scripts & F_HEBREW:
        folded = fold_hebrew_presentation(text)  # may lengthen a line, never adds a break
        folded_starts = starts if folded is text else _starts(folded.split("\n"))
        for at, first, medial, last in hebrew_word_votes(folded):
            line = bisect_right(folded_starts, at) - 1
            visual[line] += first + medial
            logical[line] += last
            words[line] += 1
        for at in _final_mid_words(text):
            mid[bisect_right(starts, at) - 1] += 1
    if scripts & F_ARABIC:
        for at, says_visual in _arabic_votes(text):
            line = bisect_right(starts, at) - 1
            if says_visual:
                visual[line] += 1
            else:
                logical[line] += 1
    inc, dec = [0] * n, [0] * n
    for i, g in enumerate(geometry[:n] if geometry else ()):
        if g:
            inc[i], dec[i] = g[0], g[1]
    return visual, logical, inc, dec, mid, words


@dataclass(frozen=True)
class PageOrder:
    line_visual: list[bool]
    page: LineEvidence

    @property
    def visual_lines(self) -> int:
        return sum(self.line_visual)


def page_order(text: str, geometry: Sequence[Sequence[int]] | None, *, from_ocr: bool) -> PageOrder:
    """Per-line visual-order flags. A page with strong evidence lets weakly evidenced lines follow,
    either way: on a page whose letters say logical order, one vote on a short line (a piece of a
    running header, `- חברת דוגמה בע"מ`) reverses nothing; only a line's own strong evidence does."""
    lines = text.split("\n")
    scripts = features(text) & (F_HEBREW | F_ARABIC)
    if not scripts and not any(g and (g[0] or g[1]) for g in geometry or ()):
        return PageOrder(
            [False] * len(lines), _NO_EVIDENCE
        )  # no RTL letter and no RTL geometry: nothing votes
    visual, logical, inc, dec, mid, words = _page_evidence(text, lines, geometry, scripts)
    total = LineEvidence(sum(visual), sum(logical), sum(inc), sum(dec), sum(mid), sum(words))
    if from_ocr:
        return PageOrder([False] * len(lines), total)
    page_strong, page_logical = total.letters_strong, total.letters_say_logical
    flags = []
    for i in range(len(lines)):
        if visual[i] == 0 and inc[i] < 2:  # neither a letter vote nor geometry can say visual
            flags.append(False)
            continue
        e = LineEvidence(visual[i], logical[i], inc[i], dec[i], mid[i], words[i])
        letters_logical = e.logical_votes > 0 and e.visual_votes == 0
        flag = (
            e.letters_strong
            or (e.letters_say_visual and not page_logical)
            or (page_strong and e.weak_visual)
        )
        flags.append(flag or (e.geometry_says_visual and not letters_logical))
    return PageOrder(flags, total)
