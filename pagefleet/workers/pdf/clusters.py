"""Code points that come from one glyph: a ligature's extra code points, drawn with no width of
their own or sharing one box. A line's units keep them together, and the repairs put a swapped
lam ligature back in order from them (`pagefleet.routing.lam`). Plain data in and out, in the sandbox child.
"""

from __future__ import annotations

from typing import Any

_ZERO = 0.01  # a box narrower than this (points) has no width


def _zero_width_partner(chars: list[dict[str, Any]], kinds: str, i: int) -> int | None:
    """The neighbour a zero-width base character came from: the one whose box's right edge it
    sits on (a ligature glyph's extra code point; MuPDF puts it before or after the glyph's box
    depending on the drawing order)."""
    x = chars[i]["bbox"][0]
    best: tuple[float, int] | None = None
    for j in (i + 1, i - 1):  # the next one first: ties go to it
        if (
            0 <= j < len(chars)
            and kinds[j] in "Ro"
            and chars[j]["bbox"][2] - chars[j]["bbox"][0] > _ZERO
        ):
            distance = abs(chars[j]["bbox"][2] - x)
            if distance < 1.0 and (best is None or distance < best[0]):
                best = (distance, j)
    return best[1] if best else None


def glyph_clusters(chars: list[dict[str, Any]], kinds: str) -> list[tuple[int, int]]:
    """``(start, end)`` char offsets of code points that come from one glyph and hold an RTL
    letter: a zero-width base character with the neighbour whose box it sits on, or neighbours
    sharing one box. Combining marks (zero-width by nature) never start a cluster."""
    boxes = [c["bbox"] for c in chars]
    # candidates, in one C-level pass each (most lines have none): zero-width boxes, and boxes
    # starting where the next one starts
    zero = {i for i, box in enumerate(boxes) if box[2] - box[0] <= _ZERO}
    starts = [box[0] for box in boxes]
    alike = [
        i
        for i, (a, b) in enumerate(zip(starts, starts[1:]))
        if abs(a - b) <= _ZERO and i not in zero
    ]
    if not zero and not alike:
        return []
    joined: set[int] = set()  # k: chars[k] and chars[k + 1] are one glyph
    for i in zero:
        if kinds[i] in "Ro":  # base characters only
            partner = _zero_width_partner(chars, kinds, i)
            if partner is not None:
                joined.add(min(i, partner))
    for i in alike:
        if (
            kinds[i] in "Ro"
            and kinds[i + 1] in "Ro"
            and all(abs(a - b) <= _ZERO for a, b in zip(boxes[i], boxes[i + 1]))
        ):
            joined.add(i)
    found: list[tuple[int, int]] = []
    for i in sorted(joined):
        if i - 1 in joined:
            continue  # inside a run already found
        j = i
        while j in joined:
            j += 1
        if "R" in kinds[i : j + 1]:
            found.append((i, j + 1))
    return found
