"""A reviewer's correction as an edit map on the page's `raw_text` (the pipeline's `edits` contract).

The reviewer edits the text shown (`decisions.base_text`); the correction is the difference between
it and the corrected text (difflib: lines first, then characters inside changed lines, so an edit
is as small as the change), applied as one stage of kind `review` onto the page's own edits with
`pagefleet.routing.edit_builder.EditMapBuilder`. The result replays `raw_text` to the corrected text: where a review
change overlaps a repair, the two merge into one edit of kind `<repair>+review`.

Table cells corrected in a grid become text changes first (`cells_to_text`): each changed cell's old
text is found, in row order, inside its table's range of the text and replaced.
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from pagefleet.routing.edit_builder import EditMapBuilder, Replacement
from pagefleet.routing.edits import Edit, verify_edits
from pagefleet.workers.review.decisions import ReviewError

KIND = "review"
GLUE = 3  # unchanged characters between two changes that still make them one edit
Opcode = tuple[str, int, int, int, int]


def _char_ops(a: str, b: str, a0: int, b0: int) -> list[Opcode]:
    """Character opcodes; changes closer than `GLUE` unchanged characters join into one."""
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    out: list[Opcode] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if (
            out
            and tag == "equal"
            and i2 - i1 <= GLUE
            and i2 < len(a)
            and j2 < len(b)
            and "\n" not in a[i1:i2]
        ):
            tag = "replace"
        if out and tag != "equal" and out[-1][0] != "equal":
            _, pi1, _, pj1, _ = out.pop()
            i1, j1, tag = pi1, pj1, "replace"
        out.append((tag, i1, i2, j1, j2))
    return [(tag, a0 + i1, a0 + i2, b0 + j1, b0 + j2) for tag, i1, i2, j1, j2 in out]


def opcodes(old: str, new: str) -> list[Opcode]:
    """difflib opcodes from `old` to `new` (character offsets), found line by line, then by
    character inside each changed run of lines."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    a_at = [0, *itertools.accumulate(len(x) for x in a)]
    b_at = [0, *itertools.accumulate(len(x) for x in b)]
    out: list[Opcode] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            out.append((tag, a_at[i1], a_at[i2], b_at[j1], b_at[j2]))
        elif (
            tag == "replace" and i2 - i1 == j2 - j1
        ):  # line for line: no change crosses a line break
            for i, j in zip(range(i1, i2), range(j1, j2)):
                out.extend(_char_ops(a[i], b[j], a_at[i], b_at[j]))
        else:
            out.extend(
                _char_ops(old[a_at[i1] : a_at[i2]], new[b_at[j1] : b_at[j2]], a_at[i1], b_at[j1])
            )
    return out


def replacements(old: str, new: str) -> list[Replacement]:
    """The correction as replacements of `old`; an insertion takes an unchanged character next to
    it along (the one after it, else the one before), so that a review edit covers raw text and a
    citation that starts or ends at it still replays."""
    changes: list[tuple[int, int, str]] = []
    for tag, i1, i2, j1, j2 in opcodes(old, new):
        if tag != "equal" and changes and changes[-1][1] == i1:  # touching changes are one
            changes[-1] = (changes[-1][0], i2, changes[-1][2] + new[j1:j2])
        elif tag != "equal":
            changes.append((i1, i2, new[j1:j2]))
    out: list[Replacement] = []
    for k, (i1, i2, text) in enumerate(changes):
        next_start = changes[k + 1][0] if k + 1 < len(changes) else len(old)
        prev_end = out[-1].end if out else 0
        if (
            i1 == i2 and out and prev_end == i1
        ):  # right after the previous one (which took its character)
            out[-1] = Replacement(out[-1].start, i1, out[-1].text + text, KIND)
        elif i1 == i2 and i1 < next_start:
            out.append(Replacement(i1, i1 + 1, text + old[i1], KIND))
        elif i1 == i2 and i1 > prev_end:
            out.append(Replacement(i1 - 1, i1, old[i1 - 1] + text, KIND))
        else:
            out.append(Replacement(i1, i2, text, KIND))
    return out


def corrected_edits(
    raw: str, edits: Sequence[Mapping[str, Any]], shown: str, corrected: str
) -> list[dict[str, Any]]:
    """The page's edit map with the correction `shown` → `corrected` composed onto it: replaying it
    on `raw` gives `corrected`. `edits` must replay `raw` to `shown`."""
    own = [Edit.from_dict(e) for e in edits]
    if not verify_edits(raw, own, shown).ok:
        raise ReviewError(
            "the page's edit map does not replay to the text shown; it cannot be corrected here"
        )
    builder = EditMapBuilder(raw)
    builder.apply([Replacement(e.start, e.end, e.replacement, e.kind) for e in own])
    if builder.text != shown:  # pragma: no cover - composition of a valid map is the map
        raise ReviewError("the page's edit map could not be rebuilt")
    builder.apply(replacements(shown, corrected))
    result = [e.to_dict() for e in builder.edits()]
    check = verify_edits(raw, result, corrected)
    if not check.ok:  # pragma: no cover - the builder's own invariant
        raise ReviewError(f"the corrected edit map does not replay: {check.reason}")
    return result


def map_offset(ops: Sequence[Opcode], pos: int, side: str = "start") -> int:
    """Where offset `pos` of the old text lands in the new one (a changed range maps to the start,
    or with side="end" to the end, of its replacement)."""
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal" and i1 <= pos <= i2:
            return j1 + (pos - i1)
        if tag != "equal" and i1 <= pos <= i2 and (pos < i2 or i1 == i2):
            return j1 if side == "start" and pos == i1 else j2
    return ops[-1][4] if ops else pos


def _free(text: str, cell: str, lo: int, end: int, taken: list[tuple[int, int]]) -> int:
    at = text.find(cell, lo, end)
    while at >= 0 and any(a < at + len(cell) and at < b for a, b in taken):
        at = text.find(cell, at + 1, end)
    return at


def cell_spans(
    text: str, start: int, end: int, rows: Sequence[Sequence[str]]
) -> list[list[tuple[int, int] | None]]:
    """Where each cell's text stands in `text[start:end]`: the first free occurrence after the
    previous cell's, else anywhere free in the range (a layer's order need not be the table's);
    None: not found."""
    spans: list[list[tuple[int, int] | None]] = []
    taken: list[tuple[int, int]] = []
    pos = start
    for row in rows:
        found: list[tuple[int, int] | None] = []
        for cell in map(str, row):
            at = _free(text, cell, pos, end, taken) if cell else -1
            if at < 0 and cell:
                at = _free(text, cell, start, end, taken)
            found.append((at, at + len(cell)) if at >= 0 else None)
            if at >= 0:
                taken.append((at, at + len(cell)))
                pos = at + len(cell)
        spans.append(found)
    return spans


def cells_to_text(text: str, block: Mapping[str, Any], new_rows: Sequence[Sequence[str]]) -> str:
    """`text` with a table block's changed cells replaced (the block's range: `start`, `end`)."""
    rows = (block.get("table") or {}).get("rows") or []
    spans = cell_spans(text, int(block.get("start", 0)), int(block.get("end", len(text))), rows)
    changes: list[tuple[int, int, str]] = []
    for r, row in enumerate(rows):
        for c, old in enumerate(row):
            new = str(new_rows[r][c]) if r < len(new_rows) and c < len(new_rows[r]) else str(old)
            if new == old:
                continue
            span = spans[r][c]
            if span is None:
                raise ReviewError(
                    f"cell {r + 1}:{c + 1} ({old!r}) is not in the page text: correct it in the text editor"
                )
            changes.append((span[0], span[1], " ".join(new.split())))
    for at, to, new in sorted(changes, reverse=True):
        text = text[:at] + new + text[to:]
    return text


def moved_blocks(
    blocks: Sequence[Mapping[str, Any]], old: str, new: str, *, drop_empty: bool = True
) -> list[dict[str, Any]]:
    """`blocks` of `old` carried onto `new`: offsets mapped through the correction, each block's
    text re-read from `new`, a table's cells re-read from where they stood (a block left empty is
    dropped unless `drop_empty` is False)."""
    ops = opcodes(old, new)
    out = []
    for block in blocks:
        start, end = int(block.get("start", 0)), int(block.get("end", 0))
        s, e = map_offset(ops, start, "start"), map_offset(ops, end, "end")
        moved = {**block, "start": s, "end": max(s, e), "text": new[s : max(s, e)]}
        table = block.get("table")
        if isinstance(table, Mapping) and table.get("rows"):
            moved["table"] = _moved_table(table, old, new, ops, start, end)
        if moved["text"].strip() or moved.get("type") == "table" or not drop_empty:
            out.append(moved)
    return out


def _moved_table(
    table: Mapping[str, Any], old: str, new: str, ops: Sequence[Opcode], start: int, end: int
) -> dict[str, Any]:
    from pagefleet.routing.structure.tables import gfm

    rows = [[str(c) for c in row] for row in table["rows"]]
    spans = cell_spans(old, start, end, rows)
    moved_rows = []
    for row, found in zip(rows, spans):
        cells = []
        for cell, span in zip(row, found):
            if span is None:
                cells.append(cell)
                continue
            s, e = map_offset(ops, span[0], "start"), map_offset(ops, span[1], "end")
            cells.append(" ".join(new[s : max(s, e)].split()))
        moved_rows.append(cells)
    return {**table, "rows": moved_rows, "markdown": gfm(moved_rows)}
