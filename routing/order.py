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
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from routing.charclass import ARABIC_RANGES, F_ARABIC, F_HEBREW, HEBREW_RANGES, features, ranges_pattern
from routing.rtl_order import FINALS, OrderEvidence, hebrew_order_evidence

_RTL_ANY = ranges_pattern(HEBREW_RANGES + ARABIC_RANGES)
_NO_ORDER = OrderEvidence()
_ARABIC_WORD = re.compile(r"[\u0620-\u064A\u0671-\u06D3\u06FA-\u06FF]+")
_ARABIC_FINAL_ONLY = "\u0629\u0649"  # ة ى
_ARABIC_SHAPED = re.compile(r"[\u0621-\u064A\uFB50-\uFDFF\uFE70-\uFEFF]+")
_LETTERS = r"\u0620-\u064A\u0671-\u06D3\u06FA-\u06FF"  # _ARABIC_WORD's class
# a final-only letter opening a word of two or more letters / closing one (regular expressions that
# count what a loop over _ARABIC_WORD's words counted)
_FINAL_FIRST = re.compile(f"(?<![{_LETTERS}])[{_ARABIC_FINAL_ONLY}](?=[{_LETTERS}])")
_FINAL_LAST = re.compile(f"(?<=[{_LETTERS}])[{_ARABIC_FINAL_ONLY}](?![{_LETTERS}])")


@dataclass(frozen=True)
class LineEvidence:
    visual_votes: int  # final-first + medial-last (+ Arabic final-only letters at word starts)
    logical_votes: int  # final-last (+ Arabic final-only letters at word ends)
    geometry_visual: int  # RTL letter pairs with increasing x in extraction order
    geometry_logical: int
    final_mid_word: int  # a Hebrew final form inside a word: neither order explains it (letter soup)
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
    return tag[1:tag.index(">")] if tag.startswith("<") else ""


def arabic_order_votes(text: str) -> tuple[int, int]:
    """(visual, logical) votes from Arabic words: letters that only end words (ة ى) at a word's
    start or end; and for presentation forms, the shape itself — a word whose first shaped glyph
    is a *final* form or whose last is an *initial* form was written mirrored."""
    visual = len(_FINAL_FIRST.findall(text))
    logical = len(_FINAL_LAST.findall(text))
    for word in _ARABIC_SHAPED.findall(text):
        forms = [f for f in map(_form, word) if f in ("initial", "medial", "final")]
        if len(forms) < 2:
            continue
        if forms[0] == "final" or forms[-1] == "initial":
            visual += 1
        elif forms[0] == "initial" or forms[-1] == "final":
            logical += 1
    return visual, logical


def line_evidence(line: str, geometry: Sequence[int] | None = None, scripts: int = F_HEBREW | F_ARABIC) -> LineEvidence:
    """One line's votes; `scripts`: the F_HEBREW / F_ARABIC bits of the page (`features`): a
    script the page does not hold casts no vote on any of its lines."""
    inc, dec = (geometry[0], geometry[1]) if geometry else (0, 0)
    if _RTL_ANY.search(line) is None:  # every letter vote needs a Hebrew or Arabic character
        return LineEvidence(0, 0, inc, dec, 0, 0)
    he = hebrew_order_evidence(line) if scripts & F_HEBREW else _NO_ORDER
    ar_visual, ar_logical = arabic_order_votes(line) if scripts & F_ARABIC else (0, 0)
    return LineEvidence(
        visual_votes=he.final_first + he.medial_last + ar_visual,
        logical_votes=he.final_last + ar_logical,
        geometry_visual=inc,
        geometry_logical=dec,
        final_mid_word=_final_mid_word(line) if scripts & F_HEBREW else 0,
        hebrew_words=he.words,
    )


_HEBREW_WORD = re.compile(r"[\u05D0-\u05EA\u0591-\u05C7]+")


def _final_mid_word(text: str) -> int:
    count = 0
    for word in _HEBREW_WORD.findall(text):
        letters = [c for c in word if "\u05D0" <= c <= "\u05EA"]
        count += any(c in FINALS for c in letters[1:-1])
    return count


_NO_EVIDENCE = LineEvidence(0, 0, 0, 0, 0, 0)


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
        return PageOrder([False] * len(lines), _NO_EVIDENCE)  # no RTL letter and no RTL geometry: nothing votes
    evidence = [line_evidence(line, geometry[i] if geometry and i < len(geometry) else None, scripts)
                for i, line in enumerate(lines)]
    total = LineEvidence(
        visual_votes=sum(e.visual_votes for e in evidence),
        logical_votes=sum(e.logical_votes for e in evidence),
        geometry_visual=sum(e.geometry_visual for e in evidence),
        geometry_logical=sum(e.geometry_logical for e in evidence),
        final_mid_word=sum(e.final_mid_word for e in evidence),
        hebrew_words=sum(e.hebrew_words for e in evidence),
    )
    if from_ocr:
        return PageOrder([False] * len(lines), total)
    page_strong, page_logical = total.letters_strong, total.letters_say_logical
    flags = []
    for e in evidence:
        letters_logical = e.logical_votes > 0 and e.visual_votes == 0
        visual = e.letters_strong or (e.letters_say_visual and not page_logical) or (page_strong and e.weak_visual)
        visual = visual or (e.geometry_says_visual and not letters_logical)
        flags.append(visual)
    return PageOrder(flags, total)
