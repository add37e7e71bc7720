"""Visual order to logical order for one line of glyphs, with the Unicode bidirectional algorithm.

A PDF draws a line's glyphs at positions; sorted by x they are the line as a reader sees it
(visual order). The producer got there from the logical text with the Unicode bidirectional
algorithm (UAX #9), so the logical text is what the algorithm maps back onto the visual line:
levels resolved on the visual sequence, then rule L2 (reverse every run at level k or higher,
from the highest level down to the lowest odd one). For the patterns producers meet — RTL words,
numbers and their separators (`1,250.40`, `054-5715512`, `12:00`, `12.5%`, `₪ 250,000`), URLs,
e-mail addresses, Latin terms and bracketed phrases inside RTL lines — the resolution is
symmetric, so this "inverse like direct" reading gives back the producer's logical text.

The levels come from python-bidi, the Rust `unicode-bidi` crate's implementation of UAX #9
(paired brackets, rule N0, included): its `get_display(..., debug=True)` answer lists the
resolved level of every UTF-8 byte of the paragraph. Rules L1 and L2 — the reordering of one line
by those levels — are applied here, to units: one representative code point per unit (a glyph
with its marks, or a ligature glyph's code points) goes in, and which unit went where comes out.
Where that answer cannot be read (another python-bidi), python-bidi's pure-Python algorithm
(`bidi.algorithm`, which predates rule N0) resolves the levels instead.

Pure functions, no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from itertools import accumulate
from collections.abc import Sequence

from bidi import algorithm as uba  # type: ignore[import-untyped]
from bidi import get_display  # type: ignore[import-untyped]

from pagefleet.routing.charclass import LazyTable
from pagefleet.routing.scripts import is_rtl_letter

# rule X9 drops these classes from the pure-Python sequence; a glyph reading keeps every code
# point it was given (a Persian ZWNJ inside a word, a bidi control the repairs remove later as an
# edit), so each stands where its glyph stands, as a neutral
_KEPT_AS_NEUTRAL = frozenset(uba.X9_REMOVED) | {"LRI", "RLI", "FSI", "PDI"}
_LEVEL = re.compile(r"Level\(\s*(\d+)")
# a character that can take a level other than an RTL paragraph's own (1): its class is not R, AL
# or a neutral (paired brackets resolve to the embedding's direction between RTL letters alone)
_MOVES = LazyTable(
    lambda ch: (
        None
        if unicodedata.bidirectional(ch) in {"R", "AL", "WS", "ON", "NSM", "BN", "CS", "B", "S"}
        else "x"
    )
)
_L1_RESET = frozenset({"WS", "BN", "LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"})
_SEPARATOR = frozenset({"S", "B"})


def logical_order(units: Sequence[str], rtl: bool) -> tuple[list[int], list[bool]]:
    """(order, odd): the units of a visual line (left to right; each given by one representative
    code point) in logical order as indices into `units`, and per index of `order` whether that
    unit resolved to an odd (right-to-left) level. `rtl`: the paragraph's direction."""
    if not units:
        return [], []
    keys = [(unit[:1] or " ").replace("\n", " ") for unit in units]
    if rtl and not _MOVES.apply("".join(keys)):  # RTL letters and neutrals only: every level is 1
        return list(range(len(keys) - 1, -1, -1)), [True] * len(keys)
    levels = _resolved_levels("".join(keys), rtl)
    if levels is None:
        return _pure_python_order(units, rtl)
    levels = _line_levels(keys, levels, 1 if rtl else 0)
    order = _reorder(levels)
    return order, [bool(levels[i] % 2) for i in order]


def _resolved_levels(text: str, rtl: bool) -> list[int] | None:
    """The level of each code point of `text` (one paragraph), from the Rust implementation's
    report of the levels of its UTF-8 bytes; None where the report does not add up."""
    try:
        report = get_display(text, base_dir="R" if rtl else "L", debug=True)
        part = report[report.index("levels:") : report.index("paragraphs:")]
    except (ValueError, TypeError):
        return None
    per_byte = _LEVEL.findall(part)
    starts = list(accumulate((_utf8_length(ch) for ch in text), initial=0))
    if starts[-1] != len(per_byte):
        return None
    return [int(per_byte[at]) for at in starts[:-1]]


def _utf8_length(ch: str) -> int:
    code = ord(ch)
    return 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4


def _line_levels(keys: Sequence[str], levels: list[int], base: int) -> list[int]:
    """Rule L1: segment separators, and whitespace before them or at the line's end, take the
    paragraph's level."""
    out = list(levels)
    trailing = True
    for i in range(len(keys) - 1, -1, -1):
        kind = unicodedata.bidirectional(keys[i])
        if kind in _SEPARATOR:
            out[i], trailing = base, True
        elif trailing and kind in _L1_RESET:
            out[i] = base
        else:
            trailing = False
    return out


def _reorder(levels: list[int]) -> list[int]:
    """Rule L2: from the highest level down to the lowest odd one, reverse every run of
    positions at that level or higher."""
    order = list(range(len(levels)))
    odd = [lv for lv in levels if lv % 2]
    if not odd:
        return order
    for level in range(max(levels), min(odd) - 1, -1):
        i = 0
        while i < len(order):
            if levels[order[i]] >= level:
                j = i
                while j < len(order) and levels[order[j]] >= level:
                    j += 1
                order[i:j] = order[i:j][::-1]
                i = j
            else:
                i += 1
    return order


def _pure_python_order(units: Sequence[str], rtl: bool) -> tuple[list[int], list[bool]]:
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


_FAULTS = re.compile(
    r" [:;,.!?)\]}\u060c\u061b\u061f](?=\s|$)|[(\[{] |[^\W_][(\[{]|[)\]}][^\W_]"  # a mark apart from its word
    r"|(?<=\s)[:;,\u060c\u061b](?=[^\W\d_])"  # a colon or comma glued to the next word
    r"|^\s*[.,:;!?\u060c\u061b\u061f](?=\s*\w)"  # a sentence that starts with its closing mark
    r"|(?<=\S)\s*[\u2022\u25e6\u25aa\u25cf]\s*$"  # a bullet at the end of its item
    r"|(?<=[^\W\d_])\s+\d{1,3}[.)]\s*(?=[^\W\d_])"  # a list number between two words
)


def attachment_faults(text: str) -> int:
    """How often punctuation stands apart from the word it belongs to: a space before a colon,
    comma or closing bracket, an opening bracket with a space after it or a letter before it, a
    closing bracket with a letter after it, a line that opens with a full stop, a bullet after
    its item, a list number between two words. Of two readings of one line, the reader's has
    fewer."""
    return len(_FAULTS.findall(text))


_LETTER = re.compile(r"[^\W\d_]")


def line_direction(line: str) -> bool | None:
    """A visual line's paragraph direction from the letters at its two ends (True: RTL), or None
    where the ends disagree or there is no letter (the line reads both ways): a paragraph starts
    with its first strong letter (UAX #9, P2), at the right end of an RTL line and the left end of
    an LTR one."""
    first = _LETTER.search(line)
    if first is None:
        return None
    last = _LETTER.search(line[::-1])
    start, end = is_rtl_letter(first.group()), is_rtl_letter(last.group()) if last else False
    return start if start == end else None


def line_is_rtl(line: str, default: bool) -> bool:
    """`line_direction`, with `default` (the page's direction) where the line reads both ways."""
    found = line_direction(line)
    return default if found is None else found


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
