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
and every ``out_start``/``out_end`` agrees with the replay. `pagefleet.routing.edit_builder` composes
successive repair stages into one such list.

Pure Python, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

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

    def __init__(
        self, start: int, end: int, replacement: str, kind: str, out_start: int, out_end: int
    ) -> None:
        # what the dataclass would generate, written out: compiled, it stays a native call (the
        # generated one is a Python call per edit, a page's map holds dozens)
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "end", end)
        object.__setattr__(self, "replacement", replacement)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "out_start", out_start)
        object.__setattr__(self, "out_end", out_end)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (what `dataclasses.asdict` gives, without its recursive deep copy)."""
        return {
            "start": self.start,
            "end": self.end,
            "replacement": self.replacement,
            "kind": self.kind,
            "out_start": self.out_start,
            "out_end": self.out_end,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Edit:
        """Build an edit from its JSON form; keys exactly the field names, ints and strings."""
        names = _FIELD_NAMES
        if data.keys() != _FIELD_SET:
            missing = [n for n in names if n not in data]
            extra = [k for k in data if k not in names]
            raise EditMapError(f"edit keys: missing {missing}, unexpected {extra}")
        start, end, replacement, kind, out_start, out_end = [data[n] for n in names]
        if (
            type(start) is int
            and type(end) is int
            and type(out_start) is int
            and type(out_end) is int
            and type(replacement) is str
            and type(kind) is str
        ):  # what JSON gives: no check below to make
            return cls(start, end, replacement, kind, out_start, out_end)
        for name in names:
            value = data[name]
            want_str = name in ("replacement", "kind")
            ok = (
                isinstance(value, str)
                if want_str
                else (isinstance(value, int) and not isinstance(value, bool))
            )
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
    if not (
        type(edit.start) is int
        and type(edit.end) is int
        and type(edit.out_start) is int
        and type(edit.out_end) is int
    ):  # plain ints (every edit from JSON or a stage): nothing to name
        for name in ("start", "end", "out_start", "out_end"):
            value = getattr(edit, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise EditMapError(f"edit {index}: {name} is not an int", index=index, at=out_pos)
    if not isinstance(edit.replacement, str):
        raise EditMapError(f"edit {index}: replacement is not a string", index=index, at=out_pos)
    if edit.start < 0 or edit.end > raw_len or edit.start > edit.end:
        raise EditMapError(
            f"edit {index}: raw range [{edit.start},{edit.end}) out of bounds of {raw_len}",
            index=index,
            at=out_pos,
        )
    if prev is not None and edit.start < prev.start:
        raise EditMapError(
            f"edit {index}: out of order (starts before edit {index - 1})", index=index, at=out_pos
        )
    if prev is not None and edit.start < prev.end:
        raise EditMapError(f"edit {index}: overlaps edit {index - 1}", index=index, at=out_pos)


def apply_edits(raw: str, edits: Sequence[Edit]) -> str:
    """Replay `edits` on `raw` and return the display text; `EditMapError` on an invalid list."""
    parts: list[str] = []
    pos = out_pos = 0
    prev: Edit | None = None
    for index, edit in enumerate(edits):
        if not isinstance(edit, Edit):
            raise EditMapError(
                f"edit {index} is a {type(edit).__name__}, not an Edit", index=index, at=out_pos
            )
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
        return EditCheck(
            False, None, f"{type(err).__name__}: {err}"
        )  # name keeps its first except's type
    if replay == display:
        return EditCheck(True, None, "ok")
    at = next(
        (i for i, (a, b) in enumerate(zip(replay, display)) if a != b),
        min(len(replay), len(display)),
    )
    reason = (
        f"replay differs from display at {at} (replay {len(replay)} chars, display {len(display)})"
    )
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
