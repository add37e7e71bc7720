"""A row's glyph units and the word-gap repairs found between them (`workers.pdf.glyphlines`).

    unit         a glyph with its combining marks, or the code points of one ligature glyph
    placeholder  a space drawn where another glyph stands (LibreOffice leaves one in a run for
                 each character another font draws): kept out of the order, taken out by an edit
    gaps         a space positioned but never drawn between two letters or digits (inserted), a
                 space between two touching letters (taken out)
    ligature     a ligature ending in alef whose alef MuPDF gives first, after another alef

Plain data in the sandbox child.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from routing.arabic import ALEF, LAM
from routing.scripts import is_latin, is_rtl_letter

ZERO = 0.01  # a box narrower than this (points) has no width
SPACE_GAP = 0.16  # font sizes: a gap this wide between two glyphs is a word boundary
TOUCH_GAP = 0.03  # font sizes: glyphs closer than this belong to one word
MARKER_SPACE = 0.5  # font sizes: a gap this wide beside a list marker's bullet or dot is a space


@dataclass
class Unit:
    chars: list[tuple[dict[str, Any], dict[str, Any]]]  # (char, span) in logical order
    x0: float
    x1: float
    space: bool
    key: str  # the code point the bidi algorithm sees
    synthetic: bool = False
    dropped: bool = False
    under: "Unit | None" = None  # a space drawn under this unit's glyph: a placeholder, not a word gap

    @property
    def centre(self) -> float:
        return (self.x0 + self.x1) / 2


def swapped_ligature(members: list[tuple[dict[str, Any], dict[str, Any]]], before: str) -> str | None:
    """A ligature glyph ending in alef whose alef MuPDF gives first, with no width, right after
    another alef (`خا` + `اب` for the glyph of `با`): Arabic never writes two alefs in a row, so
    the alef is the glyph's second letter. Where nothing says which neighbour a zero-width code
    point belongs to (Chromium gives `ل` + zero-width `ا` for `لا` with the same geometry), the
    order is left as drawn; lam ligatures are the repairs' (`routing.lam`)."""
    if len(members) != 2 or before != ALEF:
        return None
    (first, _), (second, _) = members
    if first["c"] != ALEF or first["bbox"][2] - first["bbox"][0] > ZERO:
        return None
    if second["bbox"][2] - second["bbox"][0] <= ZERO or not is_rtl_letter(second["c"]) or second["c"] in (ALEF, LAM):
        return None
    return second["c"] + first["c"]


_MARKS = frozenset("\u2022\u25e6\u25aa\u25cf.)")


def _word_gap(left: str, right: str, share: float) -> bool:
    """A positioned gap is a word boundary between two letters or digits; beside a list marker's
    bullet or dot only a wide one is (punctuation has side bearings of its own)."""
    if left.isalnum() and right.isalnum():
        return True
    return share > MARKER_SPACE and (left.isalnum() or left in _MARKS) and (right.isalnum() or right in _MARKS)


def placeholders(units: list[Unit]) -> list[Unit]:
    """Spaces drawn where another glyph stands (LibreOffice leaves one in a run for each character
    another font draws): each is marked with the unit it lies under and kept out of the reading's
    order, so `2025-01-15` is one number, not three."""
    found = []
    for i, unit in enumerate(units):
        width = unit.x1 - unit.x0
        if not unit.space or width <= ZERO:
            continue
        for other in units[max(0, i - 3): i + 4]:
            if other is unit or other.under is not None or (other.space and other in found):
                continue
            if min(unit.x1, other.x1) - max(unit.x0, other.x0) >= 0.6 * width:
                unit.under = other
                found.append(unit)
                break
    return found


def mark_gaps(units: list[Unit], size: float) -> list[Unit]:
    """The visual units with a synthetic space at each gap wider than a word gap that holds no
    space between two letters or digits (punctuation keeps its own side bearings), and each space
    between two touching glyphs marked dropped."""
    out: list[Unit] = []
    prev: Unit | None = None
    spaces: list[Unit] = []
    for unit in units:
        if unit.space:
            spaces.append(unit)
            continue
        if prev is not None:
            gap = unit.x0 - prev.x1
            if not spaces and gap > SPACE_GAP * size and _word_gap(prev.key, unit.key, gap / size):
                out.append(Unit([], prev.x1, unit.x0, True, " ", synthetic=True))
            elif spaces and gap < TOUCH_GAP * size and len(spaces) == 1 and _same_word(prev, unit):
                spaces[0].dropped = True
        out += spaces
        spaces = []
        out.append(unit)
        prev = unit
    return out + spaces


def _same_word(a: Unit, b: Unit) -> bool:
    """Two glyphs that may be parts of one word: letters of one script."""
    ka, kb = a.key, b.key
    if is_rtl_letter(ka) and is_rtl_letter(kb):
        return True
    return is_latin(ka) and is_latin(kb)
