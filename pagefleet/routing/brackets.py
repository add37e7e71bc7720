"""Mirrored brackets (stage 7 of `pagefleet.routing.normalize`): a line whose (), [] and {} do not nest, in
an RTL-dominant line, had its brackets drawn mirrored; swapping them all is kept only when the
swap balances the line. A balanced line is never touched.

Pure functions, no I/O.
"""

from __future__ import annotations

import re
from itertools import accumulate

from pagefleet.routing.charclass import F_ARABIC, F_BRACKET, F_HEBREW, LazyTable, features
from pagefleet.routing.edit_builder import Replacement
from pagefleet.routing.scripts import is_latin, is_rtl_letter

BRACKET_SWAP = str.maketrans("()[]{}", ")(][}{")
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_BRACKET = re.compile(r"[()\[\]{}]")
_BRACKETS_AND_BREAKS = LazyTable(lambda c: c if c in "()[]{}\n" else None)  # all else deleted


def brackets_balanced(line: str) -> bool:
    """Do (), [] and {} nest correctly in `line`? (<> are operators too often to count.)"""
    stack: list[str] = []
    for ch in _BRACKET.findall(line):  # the brackets alone, found in C
        if ch in _OPENERS:
            stack.append(_OPENERS[ch])
        elif ch in ")]}":
            if not stack or stack.pop() != ch:
                return False
    return not stack


def unbalanced_lines(text: str) -> list[int]:
    """The index of each line whose brackets do not nest (`brackets_balanced` false), read from
    the text's brackets and line breaks alone (one translation, not a pass over every line)."""
    found: list[int] = []
    stack: list[str] = []
    index, broken = 0, False
    for ch in _BRACKETS_AND_BREAKS.apply(text):
        if ch == "\n":
            if broken or stack:
                found.append(index)
            index, broken, stack = index + 1, False, []
        elif broken:
            continue
        elif ch in _OPENERS:
            stack.append(_OPENERS[ch])
        elif not stack or stack.pop() != ch:
            broken = True
    if broken or stack:
        found.append(index)
    return found


def mirror_brackets(text: str) -> tuple[list[Replacement], int]:
    """Swap every bracket of an RTL-dominant line whose brackets are unbalanced only when the swap
    balances it; a balanced line is never touched. Returns the replacements and the number of
    lines left unbalanced."""
    reps: list[Replacement] = []
    unbalanced = 0
    if not features(text) & F_BRACKET:  # most pages: no bracket, every line balanced
        return reps, unbalanced
    unbalanced_at = unbalanced_lines(text)
    if not features(text) & (F_HEBREW | F_ARABIC):  # no RTL letter on the page: no line is swapped
        return reps, len(unbalanced_at)
    lines = text.split("\n") if unbalanced_at else []
    offsets = [0, *accumulate(len(line) + 1 for line in lines)]
    for index in unbalanced_at:
        offset, line = offsets[index], lines[index]
        rtl = sum(1 for c in line if is_rtl_letter(c))
        latin = sum(1 for c in line if is_latin(c))
        swapped = line.translate(BRACKET_SWAP)
        if rtl > latin and brackets_balanced(swapped):
            changed = [i for i, c in enumerate(line) if c != swapped[i]]
            reps += [
                Replacement(offset + i, offset + i + 1, swapped[i], "mirrored_bracket")
                for i in changed
            ]
        else:
            unbalanced += 1
    return reps, unbalanced
