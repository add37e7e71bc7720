"""The replayable edit map: `raw_text` + an ordered, non-overlapping list of edits.

Seed 001 ("Raw text and the edit list"): every change normalization makes is an `Edit` that
replaces the raw range ``[start, end)`` by ``replacement``, which occupies ``[out_start, out_end)``
in the display text. Offsets are Python string indices (code points), both ranges half-open.

    raw      aaaa[start..end)bbbb[start..end)cc
               │       │          │
    display  aaaa[replacement]bbbb[replacement]cc
                 out_start..out_end

A list is valid when ``edits[i].end <= edits[i+1].start`` (ordered, non-overlapping; two
insertions at the same raw offset replay in list order), every range lies inside the raw text,
and every ``out_start``/``out_end`` agrees with the replay.

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

from collections.abc import Iterable, Mapping, Sequence
from bisect import bisect_right
from dataclasses import dataclass, fields
from itertools import accumulate
from typing import Any, NamedTuple

EDIT_KINDS: tuple[str, ...] = (
    "word_space_inserted",
    "split_word_rejoined",
    "space_under_glyph",
    "line_ending",
    "whitespace",
    "rtl_punctuation_repair",
    "bidi_control_removed",
    "visual_order_reversal",
    "nfkc",
    "tatweel",
    "kashida_unmapped",
    "lam_alef_order",
    "ligature_order",
    "symbol_glyph_mapped",
    "mirrored_bracket",
)


class EditMapError(ValueError):
    """An edit list that cannot be replayed. `index` is the offending edit, `at` the display
    offset at which replay stopped (None when unknown)."""

    def __init__(self, message: str, *, index: int | None = None, at: int | None = None) -> None:
        super().__init__(message)
        self.index = index
        self.at = at


@dataclass(frozen=True)
class Edit:
    """Raw ``[start, end)`` replaced by ``replacement``, found at ``[out_start, out_end)`` in the
    display text."""

    start: int
    end: int
    replacement: str
    kind: str
    out_start: int
    out_end: int

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (what `dataclasses.asdict` gives, without its recursive deep copy)."""
        return {"start": self.start, "end": self.end, "replacement": self.replacement, "kind": self.kind,
                "out_start": self.out_start, "out_end": self.out_end}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Edit:
        """Build an edit from its JSON form; keys exactly the field names, ints and strings."""
        names = _FIELD_NAMES
        if data.keys() != _FIELD_SET:
            missing = [n for n in names if n not in data]
            extra = [k for k in data if k not in names]
            raise EditMapError(f"edit keys: missing {missing}, unexpected {extra}")
        start, end, replacement, kind, out_start, out_end = [data[n] for n in names]
        if (type(start) is int and type(end) is int and type(out_start) is int and type(out_end) is int
                and type(replacement) is str and type(kind) is str):  # what JSON gives: no check below to make
            return cls(start, end, replacement, kind, out_start, out_end)
        for name in names:
            value = data[name]
            want_str = name in ("replacement", "kind")
            ok = isinstance(value, str) if want_str else (isinstance(value, int) and not isinstance(value, bool))
            if not ok:
                raise EditMapError(f"edit field {name!r} has type {type(value).__name__}")
        return cls(**{n: data[n] for n in names})


_FIELD_NAMES = tuple(f.name for f in fields(Edit))
_FIELD_SET = frozenset(_FIELD_NAMES)


@dataclass(frozen=True)
class EditCheck:
    """The verdict of `verify_edits`."""

    ok: bool
    first_mismatch_at: int | None
    reason: str


def _check_edit(raw_len: int, edit: Edit, index: int, prev: Edit | None, out_pos: int) -> None:
    if not (type(edit.start) is int and type(edit.end) is int and type(edit.out_start) is int
            and type(edit.out_end) is int):  # plain ints (every edit from JSON or a stage): nothing to name
        for name in ("start", "end", "out_start", "out_end"):
            value = getattr(edit, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise EditMapError(f"edit {index}: {name} is not an int", index=index, at=out_pos)
    if not isinstance(edit.replacement, str):
        raise EditMapError(f"edit {index}: replacement is not a string", index=index, at=out_pos)
    if edit.start < 0 or edit.end > raw_len or edit.start > edit.end:
        raise EditMapError(
            f"edit {index}: raw range [{edit.start},{edit.end}) out of bounds of {raw_len}", index=index, at=out_pos
        )
    if prev is not None and edit.start < prev.start:
        raise EditMapError(f"edit {index}: out of order (starts before edit {index - 1})", index=index, at=out_pos)
    if prev is not None and edit.start < prev.end:
        raise EditMapError(f"edit {index}: overlaps edit {index - 1}", index=index, at=out_pos)


def apply_edits(raw: str, edits: Sequence[Edit]) -> str:
    """Replay `edits` on `raw` and return the display text; `EditMapError` on an invalid list."""
    parts: list[str] = []
    pos = out_pos = 0
    prev: Edit | None = None
    for index, edit in enumerate(edits):
        if not isinstance(edit, Edit):
            raise EditMapError(f"edit {index} is a {type(edit).__name__}, not an Edit", index=index, at=out_pos)
        _check_edit(len(raw), edit, index, prev, out_pos)
        parts.append(raw[pos : edit.start])
        out_pos += edit.start - pos
        if edit.out_start != out_pos or edit.out_end != out_pos + len(edit.replacement):
            raise EditMapError(
                f"edit {index}: display range [{edit.out_start},{edit.out_end}) disagrees with the replay "
                f"[{out_pos},{out_pos + len(edit.replacement)})",
                index=index,
                at=out_pos,
            )
        parts.append(edit.replacement)
        out_pos += len(edit.replacement)
        pos = edit.end
        prev = edit
    parts.append(raw[pos:])
    return "".join(parts)


def verify_edits(raw: Any, edits: Any, display: Any) -> EditCheck:
    """Does replaying `edits` (a sequence of `Edit` or of their JSON form) on `raw` give exactly
    `display`? Never raises, whatever it is given: stored maps are untrusted data (typed `Any`,
    so the compiled build, which checks declared types on entry, takes them too)."""
    try:
        if not isinstance(raw, str) or not isinstance(display, str):
            return EditCheck(False, 0, "raw and display must be strings")
        parsed = [e if isinstance(e, Edit) else Edit.from_dict(e) for e in edits]
        replay = apply_edits(raw, parsed)
    except EditMapError as exc:
        return EditCheck(False, exc.at, str(exc))
    except Exception as err:  # noqa: BLE001 - a verdict, never an exception (its own name: compiled, a
        return EditCheck(False, None, f"{type(err).__name__}: {err}")  # name keeps its first except's type
    if replay == display:
        return EditCheck(True, None, "ok")
    at = next((i for i, (a, b) in enumerate(zip(replay, display)) if a != b), min(len(replay), len(display)))
    reason = f"replay differs from display at {at} (replay {len(replay)} chars, display {len(display)})"
    return EditCheck(False, at, reason)


def splice(text: str, replacements: Iterable[Sequence[Any]]) -> str:
    """`text` with each ``(start, end, new, ...)`` replacement spliced in (ordered, non-overlapping,
    offsets against `text`). The one splice loop of the routing package."""
    parts: list[str] = []
    pos = 0
    for start, end, new, *_ in replacements:
        parts += [text[pos:start], new]
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


class Replacement(NamedTuple):
    """A stage's local change: current text ``[start, end)`` becomes ``text``."""

    start: int
    end: int
    text: str
    kind: str


@dataclass
class _Seg:
    """A piece of the map: raw ``[rs, re)`` shown as ``out``; ``kind`` None means unchanged."""

    rs: int
    re: int
    out: str
    kind: str | None


def combine_kinds(kinds: Iterable[str]) -> str:
    """``["nfkc", "tatweel", "nfkc"]`` → ``"nfkc+tatweel"`` (first appearance order, each once)."""
    seen: list[str] = []
    for kind in kinds:
        for part in kind.split("+"):
            if part and part not in seen:
                seen.append(part)
    return "+".join(seen)


def _bounds(segs: list[_Seg]) -> tuple[list[int], list[int]]:
    """Display offsets where each segment starts and ends."""
    ends = list(accumulate(len(s.out) for s in segs))
    return ([0, *ends[:-1]] if ends else []), ends


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
        self._edits: list[Edit] | None = None  # edits() of the map as it is (a stage that changes nothing keeps it)

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
        segs = self._split([p for r in reps for p in (r.start, r.end)])
        starts, ends = _bounds(segs)
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
        self._text = "".join(s.out for s in new_segs)
        if self._text != expected:  # pragma: no cover - an internal invariant
            raise AssertionError("edit map composition diverged from the stage's output")
        return len(reps)

    def _group(self, reps: list[Replacement], starts: list[int], ends: list[int]) -> list[Replacement]:
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
                joined = Replacement(prev.start, rep.end, text, combine_kinds([prev.kind, rep.kind]))
                grouped[-1] = (joined, max(prev_hi, hi))
            else:
                grouped.append((rep, hi))
        return [rep for rep, _ in grouped]

    def _validate(self, reps: list[Replacement]) -> None:
        prev_end = 0
        for i, rep in enumerate(reps):
            if not (0 <= rep.start <= rep.end <= len(self._text)):
                raise EditMapError(f"replacement {i} [{rep.start},{rep.end}) out of bounds", index=i)
            if rep.start < prev_end:
                raise EditMapError(f"replacement {i} out of order or overlapping", index=i)
            if not isinstance(rep.text, str) or not rep.kind:
                raise EditMapError(f"replacement {i} needs a text and a kind", index=i)
            prev_end = rep.end

    def _split(self, points: list[int]) -> list[_Seg]:
        """Split unchanged segments at each current-text offset in `points` that falls inside one."""
        segs = self._segs
        starts, ends = _bounds(segs)
        cuts: dict[int, list[int]] = {}
        for point in sorted(set(points)):
            k = bisect_right(ends, point)
            if k < len(segs) and starts[k] < point and segs[k].kind is None:
                cuts.setdefault(k, []).append(point)
        out: list[_Seg] = []
        prev = 0
        for k in sorted(cuts):
            out.extend(segs[prev:k])
            seg, pos = segs[k], 0
            for point in cuts[k]:
                cut = point - starts[k]
                out.append(_Seg(seg.rs + pos, seg.rs + cut, seg.out[pos:cut], None))
                pos = cut
            out.append(_Seg(seg.rs + pos, seg.re, seg.out[pos:], None))
            prev = k + 1
        out.extend(segs[prev:])
        return out

    def _merge(self, rep: Replacement, covered: list[_Seg], first_out: int, last_out: int) -> list[_Seg]:
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
