"""Composing repair stages into one edit map (`pagefleet.routing.edits`).

Composition (`EditMapBuilder`): each repair stage sees the *current* text and proposes local
`Replacement`s against it. The builder keeps the map as a list of segments covering the raw text
(unchanged runs and edits) and folds each stage into that list, so the result is always ONE map
against the ORIGINAL raw text:

* a replacement that overlaps an existing edit's output absorbs that edit: the merged edit spans
  both raw ranges, its replacement keeps the parts of the old output outside the new range;
* the merged edit's kind joins the kinds in order of first appearance with ``+``
  (``"nfkc+tatweel"``), each kind once;
* touching but not overlapping edits stay separate;
* a merge whose output equals its raw range again is dropped (the stages undid each other).

Pure Python, no I/O.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from typing import NamedTuple

from pagefleet.routing.edits import Edit, EditMapError, splice


class Replacement(NamedTuple):
    """A stage's local change: current text ``[start, end)`` becomes ``text``."""

    start: int
    end: int
    text: str
    kind: str


class _Seg:
    """A piece of the map: raw ``[rs, re)`` shown as ``out``; ``kind`` None means unchanged.
    A plain class, not a dataclass: compiled, its constructor stays native (a dataclass's
    generated ``__init__`` is a Python call per segment)."""

    def __init__(self, rs: int, re: int, out: str, kind: str | None) -> None:
        self.rs = rs
        self.re = re
        self.out = out
        self.kind = kind


def combine_kinds(kinds: Iterable[str]) -> str:
    """``["nfkc", "tatweel", "nfkc"]`` → ``"nfkc+tatweel"`` (first appearance order, each once)."""
    seen: list[str] = []
    for kind in kinds:
        if not seen and "+" not in kind:  # the first kind, a single one: the common case
            if kind:
                seen.append(kind)
            continue
        for part in kind.split("+"):
            if part and part not in seen:
                seen.append(part)
    return "+".join(seen)


def _bounds(segs: list[_Seg]) -> tuple[list[int], list[int]]:
    """Display offsets where each segment starts and ends."""
    starts: list[int] = []
    ends: list[int] = []
    cur = 0
    for seg in segs:
        starts.append(cur)
        cur += len(seg.out)
        ends.append(cur)
    return starts, ends


def _covered(os_: int, oe: int, x: int, y: int) -> bool:
    """Does replacement ``[x, y)`` overlap a segment shown at ``[os_, oe)``? Touching does not."""
    if max(os_, x) < min(oe, y):
        return True
    if os_ == oe and x < os_ < y:  # a deletion strictly inside the replaced range
        return True
    return x == y and os_ < x < oe  # an insertion strictly inside an edit's output


class EditMapBuilder:
    """Compose successive repair stages into one edit map against the original raw text."""

    def __init__(self, raw: str) -> None:
        self.raw = raw
        self._segs: list[_Seg] = [_Seg(0, len(raw), raw, None)] if raw else []
        self._text = raw
        self.counters: dict[str, int] = {}
        self._edits: list[Edit] | None = (
            None  # edits() of the map as it is (a stage that changes nothing keeps it)
        )

    @property
    def text(self) -> str:
        """The current text: the raw text with every stage so far applied."""
        return self._text

    def apply(self, replacements: Iterable[Replacement]) -> int:
        """Apply one stage's replacements (ordered, non-overlapping, against `text`).

        No-op replacements are skipped; returns how many changed something. Each applied
        replacement counts once under its kind in `counters`.
        """
        text = self._text
        reps = [r if type(r) is Replacement else Replacement(*r) for r in replacements]
        reps = [r for r in reps if r.start > r.end or text[r.start : r.end] != r.text]
        self._validate(reps)
        if not reps:
            return 0
        expected = splice(text, reps)
        segs, starts, ends = self._split([p for r in reps for p in (r.start, r.end)])
        new_segs: list[_Seg] = []
        idx = 0
        for rep in self._group(reps, starts, ends):
            k = bisect_right(ends, rep.start, lo=idx)  # segments ending at or before rep.start
            new_segs.extend(segs[idx:k])
            first = idx = k
            while idx < len(segs) and _covered(starts[idx], ends[idx], rep.start, rep.end):
                idx += 1
            if idx > first:
                new_segs.extend(self._merge(rep, segs[first:idx], starts[first], ends[idx - 1]))
            elif rep.text:  # an insertion at a segment boundary
                at = new_segs[-1].re if new_segs else 0
                new_segs.append(_Seg(at, at, rep.text, rep.kind))
        new_segs.extend(segs[idx:])
        for rep in reps:
            self.counters[rep.kind] = self.counters.get(rep.kind, 0) + 1
        self._segs = new_segs
        self._edits = None
        self._text = "".join([s.out for s in new_segs])
        if self._text != expected:  # pragma: no cover - an internal invariant
            raise AssertionError("edit map composition diverged from the stage's output")
        return len(reps)

    def _group(
        self, reps: list[Replacement], starts: list[int], ends: list[int]
    ) -> list[Replacement]:
        """Join replacements of one stage that overlap the same earlier edit into one."""
        grouped: list[tuple[Replacement, int]] = []  # (replacement, end of its extent)
        for rep in reps:
            lo, hi = rep.start, rep.end
            j = bisect_right(ends, rep.start)  # nothing ending at or before rep.start is covered
            while j < len(starts) and starts[j] <= rep.end:
                if _covered(starts[j], ends[j], rep.start, rep.end):
                    lo, hi = min(lo, starts[j]), max(hi, ends[j])
                j += 1
            if grouped and lo < grouped[-1][1]:
                prev, prev_hi = grouped[-1]
                text = prev.text + self._text[prev.end : rep.start] + rep.text
                joined = Replacement(
                    prev.start, rep.end, text, combine_kinds([prev.kind, rep.kind])
                )
                grouped[-1] = (joined, max(prev_hi, hi))
            else:
                grouped.append((rep, hi))
        return [rep for rep, _ in grouped]

    def _validate(self, reps: list[Replacement]) -> None:
        prev_end = 0
        for i, rep in enumerate(reps):
            if not (0 <= rep.start <= rep.end <= len(self._text)):
                raise EditMapError(
                    f"replacement {i} [{rep.start},{rep.end}) out of bounds", index=i
                )
            if rep.start < prev_end:
                raise EditMapError(f"replacement {i} out of order or overlapping", index=i)
            if not isinstance(rep.text, str) or not rep.kind:
                raise EditMapError(f"replacement {i} needs a text and a kind", index=i)
            prev_end = rep.end

    def _split(self, points: list[int]) -> tuple[list[_Seg], list[int], list[int]]:
        """Split unchanged segments at each current-text offset in `points` that falls inside one;
        the split segments with their display bounds."""
        segs = self._segs
        starts, ends = _bounds(segs)
        cuts: dict[int, list[int]] = {}
        for point in sorted(set(points)):
            k = bisect_right(ends, point)
            if k < len(segs) and starts[k] < point and segs[k].kind is None:
                cuts.setdefault(k, []).append(point)
        if not cuts:
            return segs, starts, ends
        out: list[_Seg] = []
        out_starts: list[int] = []
        out_ends: list[int] = []
        prev = 0
        for k in sorted(cuts):
            out.extend(segs[prev:k])
            out_starts.extend(starts[prev:k])
            out_ends.extend(ends[prev:k])
            seg, pos = segs[k], 0
            for point in cuts[k]:
                cut = point - starts[k]
                out.append(_Seg(seg.rs + pos, seg.rs + cut, seg.out[pos:cut], None))
                out_starts.append(starts[k] + pos)
                out_ends.append(point)
                pos = cut
            out.append(_Seg(seg.rs + pos, seg.re, seg.out[pos:], None))
            out_starts.append(starts[k] + pos)
            out_ends.append(ends[k])
            prev = k + 1
        out.extend(segs[prev:])
        out_starts.extend(starts[prev:])
        out_ends.extend(ends[prev:])
        return out, out_starts, out_ends

    def _merge(
        self, rep: Replacement, covered: list[_Seg], first_out: int, last_out: int
    ) -> list[_Seg]:
        """One segment for `rep` and the segments it covers (identity merges become unchanged)."""
        out = self._text[first_out : rep.start] + rep.text + self._text[rep.end : last_out]
        rs, re_ = covered[0].rs, covered[-1].re
        if out == self.raw[rs:re_]:
            return [_Seg(rs, re_, out, None)] if out else []
        kinds = [s.kind for s in covered if s.kind] + [rep.kind]
        return [_Seg(rs, re_, out, combine_kinds(kinds))]

    def edits(self) -> list[Edit]:
        """The composed map: ordered, non-overlapping, against the original raw text (built once
        for each state of the map: the stages that read it between two that change nothing share it)."""
        if self._edits is None:
            result: list[Edit] = []
            cur = 0
            for seg in self._segs:
                if seg.kind is not None:
                    result.append(Edit(seg.rs, seg.re, seg.out, seg.kind, cur, cur + len(seg.out)))
                cur += len(seg.out)
            self._edits = result
        return list(self._edits)
