"""Running headers, footers and page numbers, found by repetition across pages.

A line that starts in the top band or ends in the bottom band of a page (`band` × page height) is
furniture when the same text
— digits folded, so "Page 3" and "Page 4" are one text — stands in that band on at least
`min_share` of the document's pages (and on two pages at least), or when it is a bare page number
("7", "- 7 -", "עמוד 7", "صفحة ٧", "Page 7 of 9"). Furniture stays in document.json as `header`
/ `footer` blocks, and out of Markdown and chunks.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

_DIGITS = re.compile(r"[0-9\u0660-\u0669\u06F0-\u06F9]+")
_SPACE = re.compile(r"\s+")
_PAGE_NUMBER = re.compile(
    r"^[\s\-–—|.]*(?:(?:page|p\.|עמוד|עמ'|صفحة|الصفحة)\s*)?#(?:\s*(?:/|of|מתוך|من)\s*#)?[\s\-–—|.]*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class BandLine:
    key: int  # the caller's id for the line
    text: str
    y0: float
    y1: float


@dataclass(frozen=True)
class FurnitureRules:
    band: float = 0.09
    min_share: float = 0.5
    min_pages: int = 2


def fold(text: str) -> str:
    return _SPACE.sub(" ", _DIGITS.sub("#", text)).strip().casefold()


def is_page_number(text: str) -> bool:
    folded = fold(text)
    return bool(folded) and "#" in folded and bool(_PAGE_NUMBER.match(folded))


def _zone(line: BandLine, height: float, band: float) -> str | None:
    if height <= 0:
        return None
    if line.y0 <= height * band:  # starts in the band (a header set low still starts there)
        return "header"
    if line.y1 >= height * (1 - band):
        return "footer"
    return None


def running_furniture(
    pages: Sequence[tuple[float, Sequence[BandLine]]], rules: FurnitureRules = FurnitureRules()
) -> list[dict[int, str]]:
    """Per page (height, lines): {line key: "header" | "footer"} for the lines that are furniture."""
    seen: Counter[tuple[str, str]] = Counter()
    zoned: list[list[tuple[BandLine, str]]] = []
    for height, lines in pages:
        here = [(line, zone) for line in lines if (zone := _zone(line, height, rules.band))]
        zoned.append(here)
        for key in {(zone, fold(line.text)) for line, zone in here if fold(line.text)}:
            seen[key] += 1
    need = max(rules.min_pages, int(rules.min_share * len(pages) + 0.999))
    out: list[dict[int, str]] = []
    for here in zoned:
        marks = {}
        for line, zone in here:
            if is_page_number(line.text) or (
                len(pages) >= rules.min_pages and seen[(zone, fold(line.text))] >= need
            ):
                marks[line.key] = zone
        out.append(marks)
    return out
