"""Heading levels from document-level font statistics (no model).

The body style is the font size that carries the most characters in the document. A style is a
heading style when it is clearly larger than the body (≥ `min_ratio` × body and ≥ body + 1pt), or
bold at body size when the body is not bold. Heading styles are ranked by size (bold first at equal
size): the largest is level 1. A line in a heading style is a heading only when it is short.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

Style = tuple[float, bool]  # (size rounded to 0.5pt, bold)


@dataclass(frozen=True)
class HeadingRules:
    min_ratio: float = 1.12
    min_points: float = 1.0
    max_chars: int = 160
    max_lines: int = 3
    max_levels: int = 6
    min_body_share: float = 0.0


def style_of(size: float, bold: bool) -> Style:
    return (round(size * 2) / 2, bool(bold))


@dataclass(frozen=True)
class FontStats:
    body: Style
    levels: dict[Style, int]

    def level(self, size: float, bold: bool) -> int | None:
        return self.levels.get(style_of(size, bold))

    def as_dict(self) -> dict[str, object]:
        return {
            "body": list(self.body),
            "levels": [[s, b, lvl] for (s, b), lvl in sorted(self.levels.items())],
        }


def font_stats(
    styles: Iterable[tuple[float, bool, int]], rules: HeadingRules = HeadingRules()
) -> FontStats:
    """`styles`: (size, bold, characters) per line of the whole document."""
    chars: Counter[Style] = Counter()
    for size, bold, n in styles:
        if size > 0 and n > 0:
            chars[style_of(size, bold)] += n
    if not chars:
        return FontStats((0.0, False), {})
    body = chars.most_common(1)[0][0]
    body_size, body_bold = body
    candidates = []
    for style in chars:
        size, bold = style
        bigger = size >= body_size * rules.min_ratio and size >= body_size + rules.min_points
        emphasised = bold and not body_bold and size >= body_size - 0.25
        if style != body and (bigger or emphasised):
            candidates.append(style)
    candidates.sort(key=lambda s: (-s[0], not s[1]))
    levels = {style: min(i + 1, rules.max_levels) for i, style in enumerate(candidates)}
    return FontStats(body, levels)


def is_heading_text(text: str, lines: int, rules: HeadingRules = HeadingRules()) -> bool:
    """Short, not a sentence that runs on, and holding at least one letter."""
    stripped = text.strip()
    if not stripped or len(stripped) > rules.max_chars or lines > rules.max_lines:
        return False
    if not any(c.isalpha() for c in stripped):
        return False
    return not stripped.endswith((",", ";"))


_SEMANTIC = re.compile(
    r"^\s*(?:chapter|section|part|appendix|annex|schedule|פרק|סעיף|חלק|נספח|ביאור|תוספת|الفصل|الباب|القسم|الجزء|الملحق|ملحق)"
    r"\s+\S{1,12}(?:\s*[:.\-–—]\s*.*)?$",
    re.IGNORECASE,
)


def semantic_heading(text: str) -> bool:
    """A standalone title by its words, whatever its font: "Chapter 3", "נספח ב': טבלאות", "ביאור 4",
    "الفصل الثاني" (one line, short)."""
    stripped = " ".join(text.split())
    return "\n" not in text.strip() and len(stripped) <= 80 and bool(_SEMANTIC.match(stripped))
