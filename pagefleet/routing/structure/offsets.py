"""Offsets between the raw text and the display text through the edit map (pagefleet.routing.edits).

A block or a citation is a half-open display range ``[start, end)`` into a page's `text`. It
replays when the raw range it projects to, with the edits inside it, gives back exactly the
display text of that range: `citation_replays`. Boundaries that fall inside an edit's output are
widened to the whole edit. Pure functions over the JSON form of edits (dicts).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import Any

EditDict = Mapping[str, Any]


class OffsetMap:
    """Raw ↔ display positions for one page's edit list (ordered, non-overlapping)."""

    def __init__(self, edits: Sequence[EditDict]) -> None:
        self.edits = list(edits)
        self._raw_ends = [e["end"] for e in self.edits]
        self._out_ends = [e["out_end"] for e in self.edits]

    def to_display(self, pos: int, side: str = "start") -> int:
        """Display position of raw `pos`; inside an edit: its output start (side="start") or end."""
        k = bisect_right(self._raw_ends, pos)  # edits ending at or before pos
        if k < len(self.edits) and self.edits[k]["start"] < pos:
            edit = self.edits[k]
            return edit["out_start"] if side == "start" else edit["out_end"]
        if k == 0:
            return pos
        last = self.edits[k - 1]
        return last["out_end"] + (pos - last["end"])

    def to_raw(self, pos: int, side: str = "start") -> int:
        """Raw position of display `pos`; inside an edit's output: its raw start or end."""
        k = bisect_right(self._out_ends, pos)
        if k < len(self.edits) and self.edits[k]["out_start"] < pos:
            edit = self.edits[k]
            return edit["start"] if side == "start" else edit["end"]
        if k == 0:
            return pos
        last = self.edits[k - 1]
        return last["end"] + (pos - last["out_end"])

    def line_ranges(self, raw: str) -> list[tuple[int, int]]:
        """Display range of every ``raw.split("\\n")`` line."""
        out, pos = [], 0
        for line in raw.split("\n"):
            out.append((self.to_display(pos, "start"), self.to_display(pos + len(line), "end")))
            pos += len(line) + 1
        return out


def _replay(raw: str, edits: Sequence[EditDict], start: int, end: int) -> str:
    parts, pos = [], start
    for e in edits:
        if e["end"] > start and e["start"] >= start and e["end"] <= end:
            parts.append(raw[pos : e["start"]])
            parts.append(e["replacement"])
            pos = e["end"]
    parts.append(raw[pos:end])
    return "".join(parts)


def citation_replays(raw: str, edits: Sequence[EditDict], text: str, start: int, end: int) -> bool:
    """Does display ``text[start:end]`` come back from raw_text through the edit map?"""
    if not 0 <= start <= end <= len(text):
        return False
    omap = OffsetMap(edits)
    rs, re_ = omap.to_raw(start, "start"), omap.to_raw(end, "end")
    ds, de = omap.to_display(rs, "start"), omap.to_display(re_, "end")
    if ds > start or de < end:
        return False
    return _replay(raw, edits, rs, re_) == text[ds:de]
