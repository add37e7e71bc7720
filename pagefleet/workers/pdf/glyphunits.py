"""A row's glyph units and the word-gap repairs found between them (`pagefleet.workers.pdf.glyphlines`).

    unit         a glyph with its combining marks, or the code points of one ligature glyph
    placeholder  a space drawn where another glyph stands (LibreOffice leaves one in a run for
                 each character another font draws): kept out of the order, taken out by an edit
    gaps         a space positioned but never drawn between two letters or digits (inserted), a
                 space between two touching letters (taken out)
    ligature     a ligature ending in alef whose alef MuPDF gives first, after another alef
    direction    which of a row's two readings (RTL, LTR) a reader takes, and a row of numbers' side

Plain data in the sandbox child.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pagefleet.routing.arabic import ALEF, LAM
from pagefleet.routing.bidi_order import attachment_faults, line_direction, logical_order
from pagefleet.routing.brackets import BRACKET_SWAP, brackets_balanced
from pagefleet.routing.scripts import is_latin, is_rtl_letter

ZERO = 0.01  # a box narrower than this (points) has no width
SPACE_GAP = 0.16  # font sizes: a gap this wide between two glyphs is a word boundary
TOUCH_GAP = 0.03  # font sizes: glyphs closer than this belong to one word
CLEAR_FAULTS = 2  # punctuation faults one reading must have fewer of to win on them alone
MARKER_SPACE = 0.5  # font sizes: a gap this wide beside a list marker's bullet or dot is a space


@dataclass(slots=True)
class Unit:
    chars: list[tuple[dict[str, Any], dict[str, Any]]]  # (char, span) in logical order
    x0: float
    x1: float
    space: bool
    key: str  # the code point the bidi algorithm sees
    synthetic: bool = False
    dropped: bool = False
    under: "Unit | None" = (
        None  # a space drawn under this unit's glyph: a placeholder, not a word gap
    )

    @property
    def centre(self) -> float:
        return (self.x0 + self.x1) / 2


def swapped_ligature(
    members: list[tuple[dict[str, Any], dict[str, Any]]], before: str
) -> str | None:
    """A ligature glyph ending in alef whose alef MuPDF gives first, with no width, right after
    another alef (`خا` + `اب` for the glyph of `با`): Arabic never writes two alefs in a row, so
    the alef is the glyph's second letter. Where nothing says which neighbour a zero-width code
    point belongs to (Chromium gives `ل` + zero-width `ا` for `لا` with the same geometry), the
    order is left as drawn; lam ligatures are the repairs' (`pagefleet.routing.lam`)."""
    if len(members) != 2 or before != ALEF:
        return None
    (first, _), (second, _) = members
    if first["c"] != ALEF or first["bbox"][2] - first["bbox"][0] > ZERO:
        return None
    if (
        second["bbox"][2] - second["bbox"][0] <= ZERO
        or not is_rtl_letter(second["c"])
        or second["c"] in (ALEF, LAM)
    ):
        return None
    return second["c"] + first["c"]


_MARKS = frozenset("\u2022\u25e6\u25aa\u25cf.)")


def _word_gap(left: str, right: str, share: float) -> bool:
    """A positioned gap is a word boundary between two letters or digits; beside a list marker's
    bullet or dot only a wide one is (punctuation has side bearings of its own)."""
    if left.isalnum() and right.isalnum():
        return True
    return (
        share > MARKER_SPACE
        and (left.isalnum() or left in _MARKS)
        and (right.isalnum() or right in _MARKS)
    )


def placeholders(units: list[Unit]) -> list[Unit]:
    """Spaces drawn where another glyph stands (LibreOffice leaves one in a run for each character
    another font draws): each is marked with the unit it lies under and kept out of the reading's
    order, so `2025-01-15` is one number, not three."""
    found = []
    for i, unit in enumerate(units):
        width = unit.x1 - unit.x0
        if not unit.space or width <= ZERO:
            continue
        for other in units[max(0, i - 3) : i + 4]:
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


def mirrored_number(units: list[Unit]) -> bool:
    """A row of numbers and signs that an RTL paragraph laid out: Arabic-Indic digits (the bidi
    algorithm's Arabic numbers: `٤٥٪` stands as `٪٤٥`), or a sign written before a number that
    stands at its right end (`4.5%-`, `250 ₪`). A European number drawn with its sign on the left
    reads left to right as it stands (`-4.3`)."""
    return mirrored_keys([u.key for u in units if not u.space])


def mirrored_keys(inked: list[str]) -> bool:
    """`mirrored_number` of a row's inked units, given by their keys."""
    if any("\u0660" <= k <= "\u0669" or "\u06f0" <= k <= "\u06f9" for k in inked):
        return True
    return len(inked) > 1 and inked[0].isdigit() and not inked[-1].isdigit()


def letters_order(
    units: list[Unit], page_rtl: bool, aligned: bool | None
) -> tuple[list[int], list[int] | None, bool]:
    """The logical order of a row holding RTL letters, read in both directions: a reading that
    keeps punctuation with its words clearly better (`(English :באנגלית) אנגלית` is `אנגלית
    (באנגלית: English)`; brackets a producer mapped to their mirrored glyphs are balanced first, as
    the repairs will) wins, then the direction the end letters give, then fewer punctuation
    faults at all, then the side the row is flush with, then the page's direction. Where only the
    page's direction chose between two different readings, the other comes back too."""
    return letters_order_of(
        [u.key for u in units], [unit_text(u) for u in units], page_rtl, aligned
    )


def letters_order_of(
    keys: list[str],
    texts: list[str],
    page_rtl: bool,
    aligned: bool | None,
    reading: Callable[[list[str], bool], list[int]] | None = None,
) -> tuple[list[int], list[int] | None, bool]:
    """`letters_order` of units given by their keys (what the bidi algorithm sees) and texts;
    `reading`: `logical_order`'s order by another implementation of the same algorithm."""
    ends = line_direction("".join(keys))
    readings = []
    for rtl in (True, False) if ends is not False else (False, True):
        order = reading(keys, rtl) if reading else logical_order(keys, rtl)[0]
        text = balanced_brackets("".join([texts[i] for i in order]))
        if rtl is ends and not readings and attachment_faults(text) == 0:
            return order, None, rtl  # the end letters' direction, and nothing against it
        faults = attachment_faults(text)
        readings.append(
            [
                faults,
                rtl != ends if ends is not None else 0,
                faults,
                rtl != aligned if aligned is not None else 0,
                rtl != page_rtl,
                order,
                text.split(),
                rtl,
            ]
        )
    if abs(readings[0][0] - readings[1][0]) < CLEAR_FAULTS:  # then the end letters first
        readings[0][0] = readings[1][0] = 0
    readings = [(tuple(r[:5]), r[5], r[6], r[7]) for r in readings]
    readings.sort(key=lambda r: r[0])
    best, other = readings
    if best[0][:4] == other[0][:4] and best[2] != other[2]:
        return best[1], other[1], best[3]
    return best[1], None, best[3]


def unit_text(unit: Unit) -> str:
    if unit.synthetic:
        return " "
    return (
        unit.chars[0][0]["c"] if len(unit.chars) == 1 else "".join([c["c"] for c, _ in unit.chars])
    )


def balanced_brackets(text: str) -> str:
    """`text` with its brackets swapped where only the swap balances them (a producer that maps a
    bracket drawn mirrored to the mirror's code point), as the repairs' bracket stage does."""
    if brackets_balanced(text):
        return text
    swapped = text.translate(BRACKET_SWAP)
    return swapped if brackets_balanced(swapped) else text
