"""Visual-order RTL lines: the evidence that a line is stored mirrored, and its conversion back to
logical order. Never a whole-string reversal.

Evidence (seed 001, structural, no vocabulary): Hebrew final forms ך ם ן ף ץ only end words and
their medial counterparts כ מ נ פ צ never do, so in a mirrored line words *start* with a final form
and *end* with a medial one.

    hebrew_order_evidence("Hebrew: םלוע םולש") → final_first=2, medial_last=0, final_last=0, words=2

Conversion of one visual line (the inverse of the Unicode bidi algorithm's L2 reordering, with
levels resolved on the visual text, which L2 maps onto itself for plain runs):

    1. classify: R = Hebrew/Arabic letters and marks; L = other letters and digits, with
       % ₪ $ ° written onto a digit (+ and - join a number only between digits, like any
       neutral); N = everything else (spaces, punctuation, symbols, Private Use)
    2. paragraph direction: LTR if the leftmost strong character is a non-RTL letter, else RTL
    3. a run of N between two strongs of the same class takes that class, else the paragraph's
       (so `1,000.00`, `12:30`, `2.Jun`, URLs, `Hello World` stay one L run) — but for a run of N
       between an L and a later R: the extractor gave every run the neutrals that follow it in
       content order, so these are the L run's trailing neutrals followed by the R run's own,
       mirrored; split at the word space (`12345  םוכסהו250` → `12345 ` + ` םוכסהו`, see
       `_ltr_keeps`)
    4. levels: LTR paragraph L=0 R=1; RTL paragraph R=1 L=2; reverse every maximal run at level
       ≥ k for k = max … 1; mirror ()[]{}<> at odd levels
       → LTR paragraph: RTL runs reversed in place;  RTL paragraph: run order reversed too,
         L runs keep their internal order
    5. combining marks travel with the code points (visual storage keeps a letter's marks after
       the letter to its left), then each cluster with Hebrew/Arabic marks is put in NFC.

Pure functions, no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from pagefleet.routing.charclass import LazyTable
from pagefleet.routing.edits import splice
from pagefleet.routing.scripts import in_ranges, is_arabic, is_hebrew, is_private_use, is_rtl_letter

FINALS = "ךםןףץ"
MEDIALS = "כמנפצ"
ABBREVIATION_MARKS = "'\"\u05f3\u05f4"  # ' " geresh gershayim
PREFIX_JOINERS = "-\u05be"  # hyphen, maqaf: כ-50, מ-2019
NUMBER_SIGNS = (
    "%\u066a\u2030\u20aa$\u20ac\u00a3\u00a5#\u00b0\u00b1"  # bidi ET: written onto a number
)
RTL_MARK_RANGES = (
    (0x0591, 0x05C7), (0x0610, 0x061A), (0x064B, 0x065F), (0x0670, 0x0670), (0x06D6, 0x06ED), (0x08D3, 0x08FF)
)  # fmt: skip
_HEB_LETTER = "\u05d0-\u05ea\u05f0-\u05f2"
_HEB_MARK = "\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7"
_HEBREW_WORD = re.compile(
    f"[{_HEB_LETTER}](?:[{_HEB_LETTER}{_HEB_MARK}]|[{ABBREVIATION_MARKS}](?=[{_HEB_LETTER}]))*"
)
_MARK_CHARS = "".join(
    chr(cp) for cp in range(0x0591, 0x05C8) if re.fullmatch(f"[{_HEB_MARK}]", chr(cp))
)
_RTL_MARK = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in RTL_MARK_RANGES) + "]")

Direction = Literal["ltr", "rtl"]


@dataclass(frozen=True)
class OrderEvidence:
    """Hebrew words (≥ 2 letters) and how their first/last letters sit."""

    final_first: int = 0
    medial_last: int = 0
    final_last: int = 0
    words: int = 0


_HEBREW_PRESENTATION = re.compile("[\ufb1d-\ufb4f]")
_FOLD_HEBREW = LazyTable(
    lambda c: unicodedata.normalize("NFKC", c) if "\ufb1d" <= c <= "\ufb4f" else c
)


def fold_hebrew_presentation(text: str) -> str:
    """NFKC on Hebrew presentation forms only: one translation, and none where there are none."""
    return text.translate(_FOLD_HEBREW) if _HEBREW_PRESENTATION.search(text) else text


def hebrew_order_evidence(text: str) -> OrderEvidence:
    """Count words that start with a final form, end with a medial form, end with a final form.

    Abbreviations (`עמ'`, `צה"ל` keep their quote) and prefixes joined by a hyphen (`כ-50`) are not
    counted as medial-last — nor an acronym's last letter, after the gershayim (`בע"מ`, `מע"מ` are
    written with a plain mem in logical order); one-letter words are not counted at all.
    """
    final_first = medial_last = final_last = words = 0
    for _, first, medial, last in hebrew_word_votes(fold_hebrew_presentation(text)):
        words += 1
        final_first, medial_last, final_last = (
            final_first + first,
            medial_last + medial,
            final_last + last,
        )
    return OrderEvidence(final_first, medial_last, final_last, words)


def hebrew_word_votes(text: str) -> list[tuple[int, int, int, int]]:
    """(offset, final-first, medial-last, final-last) of each Hebrew word of two letters or more in
    `text` (Hebrew presentation forms already folded), for `hebrew_order_evidence`. A word never
    spans a line break, and a break after it counts as the end of the text: the words of a page
    are the words of its lines."""
    found: list[tuple[int, int, int, int]] = []
    for match in _HEBREW_WORD.finditer(text):
        word = match.group()
        # a word opens with a letter and ends with a letter and its marks (a quote inside is always
        # followed by a letter): its letters' first and last without a pass over its characters
        core = word.rstrip(_MARK_CHARS)
        if len(core) < 2:
            continue
        after = text[match.end()] if match.end() < len(text) else ""
        abbreviated = after != "" and after in ABBREVIATION_MARKS + PREFIX_JOINERS
        abbreviated = (
            abbreviated or word[-2] in ABBREVIATION_MARKS
        )  # בע"מ: an acronym's last letter
        found.append(
            (
                match.start(),
                int(word[0] in FINALS),
                int(core[-1] in MEDIALS and not abbreviated),
                int(core[-1] in FINALS),
            )
        )
    return found


def looks_visual_order(evidence: OrderEvidence) -> bool:
    """Mirrored-order verdict: final-first + medial-last ≥ 2 and more than final-last; or, for a
    fragment of ≤ 3 Hebrew words, a final-first word and no final-last word."""
    suspicious = evidence.final_first + evidence.medial_last
    if suspicious >= 2 and suspicious > evidence.final_last:
        return True
    return 0 < evidence.words <= 3 and evidence.final_first >= 1 and evidence.final_last == 0


def _is_rtl_mark(ch: str) -> bool:
    return in_ranges(ch, RTL_MARK_RANGES) and unicodedata.category(ch).startswith("M")


@lru_cache(maxsize=8192)
def _char_class(ch: str) -> str:
    """R, L, N, or M for a combining mark that is not Hebrew/Arabic (it follows its base)."""
    cat = unicodedata.category(ch)
    if is_rtl_letter(ch) or ((is_hebrew(ch) or is_arabic(ch)) and cat.startswith("M")):
        return "R"
    if (cat.startswith("L") or cat == "Nd") and not is_private_use(ch):
        return "L"
    return "M" if cat.startswith("M") else "N"


def _classes(line: str) -> list[str]:
    """R, L or N per character (step 1 of the module docstring)."""
    out: list[str] = []
    for ch in line:
        cls = _char_class(ch)
        out.append((out[-1] if out else "N") if cls == "M" else cls)
    for i, ch in enumerate(line):
        if out[i] == "N" and ch in NUMBER_SIGNS:
            near = line[i - 1 : i] + line[i + 1 : i + 2]
            if any(unicodedata.category(c) == "Nd" for c in near):
                out[i] = "L"
    return out


def paragraph_direction(line: str) -> Direction:
    """LTR when the leftmost strong character is a non-RTL letter, else RTL."""
    for ch in line:
        cls = _char_class(ch)
        if cls == "R" and unicodedata.category(ch).startswith("L"):
            return "rtl"
        if cls == "L" and unicodedata.category(ch).startswith("L"):
            return "ltr"
    return "rtl"


def _ltr_keeps(neutrals: str, ltr_follows: bool) -> int:
    """How many of the neutrals between an L run and the next R run (in visual text) are the L
    run's own. They are the L run's trailing neutrals (`) `, `, `), then the R run's trailing
    neutrals mirrored (`. `, ` ` → `.`, ` `). With more L text after the R run, the R run's ended
    in the space before it: the last of two or more spaces starts the R run's share (`  ` →
    ` ` + ` `, ` ( )` → ` (` + ` )`); a single space, or an R run that ends the line (its own
    neutrals hold no word space), leaves the L run everything through the last space. No space at
    all: the R run's (`100-ב`)."""
    spaces = [i for i, ch in enumerate(neutrals) if ch.isspace()]
    if not spaces:
        return 0
    return spaces[-1] if ltr_follows and len(spaces) >= 2 else spaces[-1] + 1


def _levels(classes: list[str], direction: Direction, line: str) -> list[int]:
    para = "L" if direction == "ltr" else "R"
    resolved = list(classes)
    i = 0
    while i < len(resolved):
        if resolved[i] != "N":
            i += 1
            continue
        j = i
        while j < len(resolved) and resolved[j] == "N":
            j += 1
        left = resolved[i - 1] if i > 0 else para
        right = resolved[j] if j < len(resolved) else para
        if i > 0 and left == "L" and j == len(resolved):
            resolved[i:j] = ["L"] * (j - i)  # an L run's trailing neutrals stay where they are
        elif i > 0 and left == "L" and right == "R":
            k = i + _ltr_keeps(line[i:j], "L" in classes[j:])
            resolved[i:j] = ["L"] * (k - i) + ["R"] * (j - k)
        else:
            resolved[i:j] = [left if left == right else para] * (j - i)
        i = j
    table = {"L": 0, "R": 1} if direction == "ltr" else {"L": 2, "R": 1}
    return [table[c] for c in resolved]


def nfc_rtl_clusters(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, nfc)`` for each grapheme cluster (base + combining marks) that holds a
    Hebrew/Arabic mark and is not already NFC."""
    found: list[tuple[int, int, str]] = []
    end = 0
    for match in _RTL_MARK.finditer(text):
        if match.start() < end:
            continue  # inside the cluster just examined
        start = match.start()
        while start > 0 and unicodedata.category(text[start]).startswith("M"):
            start -= 1
        end = match.end()
        while end < len(text) and unicodedata.category(text[end]).startswith("M"):
            end += 1
        cluster = text[start:end]
        nfc = unicodedata.normalize("NFC", cluster)
        if nfc != cluster:
            found.append((start, end, nfc))
    return found


def apply_nfc_rtl_clusters(text: str) -> str:
    return splice(text, nfc_rtl_clusters(text))


def visual_line_replacements(line: str) -> list[tuple[int, int, str]]:
    """Local replacements ``(start, end, text)`` turning one visual-order line into logical order.

    A position-ordered extractor (MuPDF) reverses every RTL run of a line *in place* — it never
    moves runs — so a producer that drew a logical string left to right comes out with each RTL
    run mirrored and the runs in their drawn order; each run takes the neutrals that follow it in
    content order (`אב 12 גד` → ` בא12 דג`). The inverse is the same: reverse each RTL run
    (neutrals resolved as in the module docstring, step 3) where it stands,
    code points and marks together, with no bracket mirroring (the extractor mirrored none).
    Numbers, Latin runs, URLs and dates keep their order; never a whole-string reversal.
    """
    if "\n" in line:
        raise ValueError("visual_line_replacements takes one line")
    classes = _classes(line)
    if "R" not in classes:
        return []
    levels = _levels(classes, paragraph_direction(line), line)
    found = []
    i = 0
    while i < len(line):
        if levels[i] != 1:
            i += 1
            continue
        j = i
        while j < len(line) and levels[j] == 1:
            j += 1
        new = apply_nfc_rtl_clusters(line[i:j][::-1])
        if new != line[i:j]:
            found.append((i, j, new))
        i = j
    return found


def visual_to_logical(line: str) -> str:
    """One visual-order line in logical order (see `visual_line_replacements`)."""
    return splice(line, visual_line_replacements(line))
