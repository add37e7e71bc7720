"""Evidence spans of the raw text carried onto the text an edit map has built so far.

The text layer's geometry (glyph clusters, run order) is measured on the raw text; repair stages
run on the current text of an `EditMapBuilder`. `current_spans` carries each raw span over the
edits made before it, or drops it where the map changed it in a way that is no longer that span:
no evidence is guessed.

    raw      ‏ال يجوز          an RLM, then a cluster at [1, 3)
    edits    [0, 1) → ""       bidi control removed
    current  ال يجوز           the cluster is at [0, 2)

Pure functions, no I/O.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence

from pagefleet.routing.edits import Edit


def _boundary(edits: Sequence[Edit], ends: Sequence[int], pos: int, *, closing: bool) -> int | None:
    """Where raw offset `pos` lands in the output; None when an edit spans across it. An
    insertion at `pos` lies before an opening boundary and after a closing one. `ends`: the
    edits' ends (ordered, non-overlapping edits: non-decreasing), so the edits ending before
    `pos` are skipped in one bisection."""
    k = bisect_left(ends, pos)  # edits[:k] end before pos: before it, and none spans across it
    delta = edits[k - 1].out_end - edits[k - 1].end if k else 0
    for i in range(k, len(edits)):  # (no slice: a copy of the rest of the map per call)
        edit = edits[i]
        if edit.start < pos < edit.end:
            return None
        before = edit.end < pos or (edit.end == pos and (not closing or edit.start < pos))
        if not before:
            break
        delta = edit.out_end - edit.end
    return pos + delta


def _mirrored(raw: str, edits: Sequence[Edit], start: int, end: int) -> tuple[int, int] | None:
    """A span inside an edit whose output is its raw range reversed (a visual-order run)."""
    for edit in edits:
        if (
            edit.start <= start
            and end <= edit.end
            and edit.replacement == raw[edit.start : edit.end][::-1]
        ):
            return edit.out_start + edit.end - end, edit.out_start + edit.end - start
    return None


def current_spans(
    raw: str, text: str, edits: Sequence[Edit], spans: Iterable[Sequence[int]]
) -> list[tuple[int, int]]:
    """Raw-text spans carried onto the current `text` of an edit map (`edits` against `raw`), in
    the order given. A span that holds whole edits or none moves with the edits before it; a span
    inside a same-length edit whose output is the raw range reversed is mirrored with it; a span
    that an edit crosses any other way is dropped."""
    return current_span_groups(raw, text, edits, [spans])[0]


def current_span_groups(
    raw: str, text: str, edits: Sequence[Edit], groups: Iterable[Iterable[Sequence[int]]]
) -> list[list[tuple[int, int]]]:
    """`current_spans` of each group of spans (a line's runs), the edit map read once."""
    ends = [edit.end for edit in edits]
    out: list[list[tuple[int, int]]] = []
    if not edits:  # nothing moved: every span is where the raw text had it
        for spans in groups:
            pairs = [(int(a), int(b)) for a, b in spans]
            out.append([(a, b) for a, b in pairs if 0 <= a < b <= len(text)])
        return out
    for spans in groups:
        found: list[tuple[int, int]] = []
        for a, b in spans:
            start, end = int(a), int(b)
            lo, hi = (
                _boundary(edits, ends, start, closing=False),
                _boundary(edits, ends, end, closing=True),
            )
            mapped = (
                (lo, hi) if lo is not None and hi is not None else _mirrored(raw, edits, start, end)
            )
            if mapped is not None and 0 <= mapped[0] < mapped[1] <= len(text):
                found.append(mapped)
        out.append(found)
    return out
