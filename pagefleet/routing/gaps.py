"""Word boundaries the glyph gaps prove, as replacements against a text layer's raw text.

`pagefleet.workers.pdf.glyphlines` reads a row's glyphs and finds where the producer positioned a space it
never drew (`word_space_inserted`) and where a space stands between two glyphs that touch
(`split_word_rejoined`). Those findings cross the sandbox's process boundary as plain lists; this
module checks each one before it becomes a repair. Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from pagefleet.routing.edit_builder import Replacement

_GAP_KINDS = frozenset(
    {"word_space_inserted", "split_word_rejoined", "space_under_glyph", "ligature_order"}
)


def gap_replacements(raw: str, repairs: Sequence[Sequence[object]]) -> list[Replacement]:
    """The glyph gaps' word boundaries (a space inserted, a space between touching glyphs or under
    another glyph taken out) and two-letter ligatures put in their glyph's order. Evidence crosses
    a process boundary: a malformed or misplaced edit is skipped."""
    reps: list[Replacement] = []
    last = 0
    for item in repairs:
        if len(item) != 4:
            continue
        start, end, new, kind = item
        if not (
            isinstance(start, int)
            and isinstance(end, int)
            and isinstance(new, str)
            and kind in _GAP_KINDS
        ):
            continue
        if not last <= start <= end <= len(raw):
            continue
        if kind == "ligature_order":
            if end - start != 2 or new != raw[start:end][::-1]:
                continue
        elif (start != end and not raw[start:end].isspace()) or new.strip():
            continue
        elif kind == "word_space_inserted" and (start != end or new != " "):
            continue
        reps.append(Replacement(start, end, new, str(kind)))
        last = end
    return reps
