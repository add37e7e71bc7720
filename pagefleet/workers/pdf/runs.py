"""Reading order of the runs of one Arabic line, proven by glyph geometry (issue 12, part 1).

Some producers draw an RTL line in pieces and MuPDF strings the pieces together in an order that
is neither visual nor logical: words come out in logical order but numbers and brackets land on
the wrong side of them (`2022  لسنة8  قانون رقم` for `قانون رقم 8 لسنة 2022`, `تملكها1(`). The
boxes say where every character is drawn, so for a right-to-left line the reading order is the
order of the boxes from right to left — at the level of runs:

    units   an Arabic word (letters, marks, kashida; already logical inside: x falls along it), an LTR
            run (digits, Latin; x rises along it), or one neutral character (space, bracket, mark)
    groups  LTR units with only neutrals between them (in x order) form one LTR group, read left
            to right (`1,000.5`, `12:30`, `Tel Aviv`)
    order   groups and the other units from right to left

`run_order` returns the line's unit spans in that order, only when the geometry proves it: one
baseline, Arabic letters outnumber Latin ones, no Hebrew (Hebrew lines are decided elsewhere),
every word's and LTR run's inside agrees with its direction, and no two inked units overlap.
Otherwise (and when the order is already right) None.

Runs inside the sandbox child with the rest of the MuPDF reading; plain data in and out.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from pagefleet.routing.charclass import (
    ARABIC_ANY,
    F_HEBREW,
    HEBREW_RANGES,
    LazyTable,
    classes,
    features,
    ranges_pattern,
)
from pagefleet.routing.scripts import is_arabic

_TOLERANCE = 0.5  # points
_BASELINE = 2.0
_ELONGATION = "\u0640\ufffd"  # tatweel, and kashida glyphs with no mapping: inside a word
_HEBREW_ANY = ranges_pattern(HEBREW_RANGES)


@dataclass
class _Unit:
    kind: str  # R, L, N or S
    start: int
    end: int
    x0: float
    x1: float

    @property
    def centre(self) -> float:
        return (self.x0 + self.x1) / 2


def _kind(ch: str) -> str:
    cat = unicodedata.category(ch)
    if cat.startswith("M"):
        return "M"
    if ch.isspace():
        return "S"
    if (is_arabic(ch) and cat.startswith("L")) or ch in _ELONGATION:
        return "R"
    if cat.startswith("L") or cat == "Nd":
        return "L"
    return "N"


_KINDS = LazyTable(_kind)


_UNIT = re.compile("R[RM]*|L[LM]*|[NS]M*|M+")  # a mark belongs to the unit before it


def _units(x0s: list[float], x1s: list[float], kinds: str) -> list[_Unit]:
    """Arabic words and LTR runs (with their marks), and each other character with its marks (a
    line's leading marks are one neutral unit); x extent from the boxes, in one C-level slice each."""
    return [
        _Unit("N" if kinds[a] == "M" else kinds[a], a, b, min(x0s[a:b]), max(x1s[a:b]))
        for a, b in (m.span() for m in _UNIT.finditer(kinds))
    ]


def _inside_agrees(x0s: list[float], x1s: list[float], kinds: str, unit: _Unit) -> bool:
    """x falls along an Arabic word and rises along an LTR run (zero-width code points skipped)."""
    centres = [
        (a + b) / 2
        for a, b, kind in zip(
            x0s[unit.start : unit.end], x1s[unit.start : unit.end], kinds[unit.start :]
        )
        if b - a > 0.01 and kind != "M"
    ]
    sign = -1 if unit.kind == "R" else 1
    return all(sign * (b - a) >= -_TOLERANCE for a, b in zip(centres, centres[1:]))


def _arabic_line(text: str) -> bool:
    """Arabic letters outnumber Latin ones and nothing is Hebrew (class codes: one C-level pass)."""
    if (
        ARABIC_ANY.search(text) is None or _HEBREW_ANY.search(text) is not None
    ):  # most lines stop here
        return False
    return _arabic_majority(classes(text))


def _arabic_majority(codes: str) -> bool:
    """Class codes (`charclass.classes`) holding an Arabic letter, and more of them than Latin ones."""
    arabic = codes.count("r")
    return bool(arabic) and arabic > codes.count("a")


def _proven(
    x0s: list[float], x1s: list[float], ys: list[float], kinds: str, units: list[_Unit]
) -> bool:
    if max(ys) - min(ys) > _BASELINE:
        return False
    if not all(_inside_agrees(x0s, x1s, kinds, u) for u in units if u.kind in "RL"):
        return False
    inked = sorted((u for u in units if u.kind != "S"), key=lambda u: u.x0)
    return all(b.x0 >= a.x1 - _TOLERANCE for a, b in zip(inked, inked[1:]))


def _groups(units: list[_Unit]) -> list[list[_Unit]]:
    """Units in x order, LTR units joined with the neutrals between them into one group."""
    visual = sorted(units, key=lambda u: u.centre)
    groups: list[list[_Unit]] = []
    i = 0
    while i < len(visual):
        if visual[i].kind != "L":
            groups.append([visual[i]])
            i += 1
            continue
        group, j = [visual[i]], i + 1
        while j < len(visual):
            k = j
            while k < len(visual) and visual[k].kind in "NS":
                k += 1
            if k < len(visual) and visual[k].kind == "L":
                group += visual[j : k + 1]
                j = k + 1
            else:
                break
        groups.append(group)
        i = j
    return groups


def run_order(chars: list[dict[str, Any]], text: str | None = None) -> list[list[int]] | None:
    """The line's ``[start, end)`` char spans in reading order, if the geometry proves an order
    other than the extracted one (see the module docstring); else None. `chars`: the line's
    characters as PyMuPDF's rawdict gives them; `text`: those characters joined, where the caller has them."""
    if len(chars) < 3:
        return None
    text = "".join([c["c"] for c in chars]) if text is None else text
    if not may_reorder(text):  # the text's own test first: most lines stop here
        return None
    return _order(
        text,
        [c["bbox"][0] for c in chars],
        [c["bbox"][2] for c in chars],
        [c["origin"][1] for c in chars],
    )


def run_order_of(
    text: str, x0s: list[float], x1s: list[float], ys: list[float]
) -> list[list[int]] | None:
    """`run_order` from the line's text and, per character, its box's left and right x and its
    baseline y (the C text walk's arrays instead of rawdict's dicts)."""
    return _order(text, x0s, x1s, ys) if may_reorder(text) else None


def may_reorder(text: str) -> bool:
    """The text's own test `run_order` starts with (an Arabic line of three characters or more)."""
    return len(text) >= 3 and _arabic_line(text)


def may_reorder_lines(lines: list[str], text: str) -> list[int]:
    """The index of each line `may_reorder` lets through, from one class translation of the page
    (`text`: the lines joined by line breaks) instead of a few scans a line; the Hebrew test only
    where the page holds a Hebrew-block character."""
    codes = classes(text)
    hebrew = bool(features(text) & F_HEBREW)
    found: list[int] = []
    at = 0
    for i, line in enumerate(lines):
        part = codes[at : at + len(line)]
        at += len(line) + 1
        if len(line) < 3 or (hebrew and _HEBREW_ANY.search(line) is not None):
            continue
        if _arabic_majority(part):  # an Arabic letter: what ARABIC_ANY's test asks, and more
            found.append(i)
    return found


def unit_kinds(text: str) -> str:
    """One code per character (R Arabic letter, L other letter or digit, N neutral, S space, M mark):
    the classes units are made of, for a whole page in one pass."""
    return _KINDS.apply(text)


def _order(
    text: str, x0s: list[float], x1s: list[float], ys: list[float]
) -> list[list[int]] | None:
    kinds = text.translate(_KINDS)
    units = _units(x0s, x1s, kinds)
    if len(units) < 2:
        return None
    ordered = [u for group in reversed(_groups(units)) for u in group]
    if [u.start for u in ordered if u.kind != "S"] == [u.start for u in units if u.kind != "S"]:
        return None  # only spaces would move: nothing to prove (most lines: the proof is skipped)
    return [[u.start, u.end] for u in ordered] if _proven(x0s, x1s, ys, kinds, units) else None
