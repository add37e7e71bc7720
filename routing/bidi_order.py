"""Visual order to logical order for one line of glyphs, with the Unicode bidirectional algorithm.

A PDF draws a line's glyphs at positions; sorted by x they are the line as a reader sees it
(visual order). The producer got there from the logical text with the Unicode bidirectional
algorithm (UAX #9), so the logical text is what the algorithm maps back onto the visual line:
levels resolved on the visual sequence, then rule L2 (reverse every run at level k or higher,
from the highest level down to the lowest odd one). For the patterns producers meet — RTL words,
numbers and their separators (`1,250.40`, `054-5715512`, `12:00`, `12.5%`, `₪ 250,000`), URLs,
e-mail addresses and Latin terms inside RTL lines — the resolution is symmetric, so this "inverse
like direct" reading gives back the producer's logical text; rule L4 mirrors brackets on the way
(`)` drawn at the right end of an RTL phrase is its opening parenthesis).

The levels come from python-bidi's implementation of UAX #9 (`bidi.algorithm`: its rules X1–I2,
L1 and L2 run unchanged); this module only hands it one representative code point per unit
(a glyph with its marks, or a ligature glyph's code points) and reads back which unit went where.

Pure functions, no I/O.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from bidi import algorithm as uba

from routing.scripts import is_rtl_letter

MIRRORED: dict[str, str] = dict(uba.MIRRORED)
# rule X9 drops these classes from the sequence; a glyph reading keeps every code point it was
# given (a Persian ZWNJ inside a word, a bidi control the repairs remove later as an edit), so
# each stands where its glyph stands, as a neutral
_KEPT_AS_NEUTRAL = frozenset(uba.X9_REMOVED) | {"LRI", "RLI", "FSI", "PDI"}


def logical_order(units: Sequence[str], rtl: bool) -> tuple[list[int], list[bool]]:
    """(order, odd): the units of a visual line (left to right; each given by one representative
    code point) in logical order as indices into `units`, and per index of `order` whether that
    unit resolved to an odd (right-to-left) level — where a mirrored character is drawn by its
    mirror glyph. `rtl`: the paragraph's direction."""
    if not units:
        return [], []
    base = 1 if rtl else 0
    storage = uba.get_empty_storage()
    storage["base_level"] = base
    storage["base_dir"] = "R" if rtl else "L"
    for i, unit in enumerate(units):
        kind = uba.bidirectional(unit[:1] or " ") or "ON"
        if kind in _KEPT_AS_NEUTRAL:
            kind = "ON"
        storage["chars"].append({"ch": unit, "level": base, "type": kind, "orig": kind, "i": i})
    uba.explicit_embed_and_overrides(storage)
    uba.resolve_weak_types(storage)
    uba.resolve_neutral_types(storage, False)
    uba.resolve_implicit_levels(storage, False)
    uba.reorder_resolved_levels(storage, False)
    chars = storage["chars"]
    return [c["i"] for c in chars], [bool(c["level"] % 2) for c in chars]


def line_is_rtl(line: str, default: bool) -> bool:
    """A visual line's paragraph direction, from the letters at its two ends: a paragraph starts
    with its first strong letter (UAX #9, P2), at the right end of an RTL line and the left end of
    an LTR one. Where the ends disagree (or there is no letter) the line reads both ways alike,
    and `default` (the page's direction) decides."""
    strong = [is_rtl_letter(ch) for ch in line if ch.isalpha()]
    if not strong or strong[0] != strong[-1]:
        return default
    return strong[-1]


def mirror(ch: str) -> str:
    """The character whose glyph mirrors `ch`'s (`(` ↔ `)`), or `ch`."""
    return MIRRORED.get(ch, ch)


def _units(line: str) -> list[str]:
    """A line's characters, each with the combining marks that follow it."""
    units: list[str] = []
    for ch in line:
        if units and unicodedata.category(ch).startswith("M"):
            units[-1] += ch
        else:
            units.append(ch)
    return units


def reread_line(line: str, rtl: bool) -> str:
    """The line a row read from its glyphs gives when its glyphs were drawn in the producer's
    logical order from left to right (an unshaped producer: the page itself shows mirrored RTL
    words): the row's reading taken as the visual sequence once more, which gives back the
    string the producer drew. Marks stay with their letters."""
    units = _units(line)
    order, _ = logical_order(units, rtl)
    return "".join(units[i] for i in order)
