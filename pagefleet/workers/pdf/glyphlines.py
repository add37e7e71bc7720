"""Lines read from the glyphs: one row per baseline, in logical order, whatever drew the pieces.

MuPDF groups characters into lines by the text objects that drew them. Producers of RTL text
draw one visual line in several objects — LibreOffice writes each bidi run as its own, Chromium
draws the runs in visual order, Word splits words — so a line that mixes directions comes out
torn (`:9 פתח תקווה` on a line of its own) or with its runs mirrored. Here the page's characters
are read again from where they are drawn:

    rows      lines whose baselines agree (within a third of the font size) and whose boxes
              follow each other with at most a word gap's room form one row, when it holds a
              Hebrew or Arabic letter (a Latin page keeps MuPDF's lines)
    units     per MuPDF line, in its stream order: a glyph with its combining marks, or the code
              points of one ligature glyph (`glyph_clusters`): they move together
    visual    the row's units sorted by their boxes' centres, left to right
    logical   the Unicode bidirectional algorithm's reading of that visual sequence for the row's
              direction (`pagefleet.routing.bidi_order`); the text layer maps a bracket drawn mirrored to
              the character the producer wrote, so nothing is mirrored here
    gaps      word boundaries from the gaps between glyphs against the font size: a space the
              producer positioned but never drew is inserted (`word_space_inserted`), a space
              between two glyphs that touch is taken out (`split_word_rejoined`) — as edits
              against the row's text, never in it

The answer is a `rawdict` of the same shape, so every later reader of the text layer (the gate's
evidence, the structure pass, table cells) sees the rows, and the list of gap edits as
`[start, end, replacement, kind]` against the text those rows give (lines joined by "\\n").
A row already in order comes back as it was: correct input round-trips unchanged.

Runs inside the sandbox child with the rest of the MuPDF reading; plain data in and out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pagefleet.routing.bidi_order import logical_order
from pagefleet.workers.pdf.clusters import glyph_clusters
from pagefleet.workers.pdf.fastwalk import GLYPH_KINDS
from pagefleet.workers.pdf.glyphrows import (
    PageLine,
    has_letters,
    join_rows,
    page_is_rtl,
    page_lines,
    tail_of_rtl,
)
from pagefleet.workers.pdf.glyphunits import (
    SPACE_GAP,
    TOUCH_GAP,
    ZERO,
    Unit,
    letters_order,
    mark_gaps,
    mirrored_number,
    placeholders,
    swapped_ligature,
)

_BREAKS = frozenset("\n\r\u2028\u2029\x00")
# what the bidi algorithm may move in an RTL line: digits, Latin letters, brackets and the like
_NOT_PLAIN = re.compile(
    r"[0-9A-Za-z\u00c0-\u024f\u0660-\u0669\u06f0-\u06f9()\[\]{}<>\"'/\\+\-%$#@&*=_|~^\u20aa\u20ac\u00a3\u00ab\u00bb\u2039\u203a\u200c\u200d\u200e\u200f\u202a-\u202e\u2066-\u2069\ufffd]"
)
UNRESOLVED = "line_order_alternative"


@dataclass
class GlyphReading:
    raw: dict[str, Any]
    gap_edits: list[list[Any]] = field(default_factory=list)
    rows_rebuilt: int = 0
    unresolved: list[list[Any]] = field(default_factory=list)  # [start, end, other reading, bbox]


def read_rows(raw: dict[str, Any]) -> GlyphReading:
    """`raw` (a page's rawdict) with its RTL rows rebuilt from the glyphs."""
    lines = page_lines(raw)
    if not any(line.rtl for line in lines):
        return GlyphReading(raw)
    page_rtl = page_is_rtl(lines)
    margins = (min(ln.bbox[0] for ln in lines), max(ln.bbox[2] for ln in lines))
    rows = join_rows(lines, page_rtl)
    blocks: dict[int, list[tuple[int, dict[str, Any]]]] = {}
    gap_rows: list[tuple[int, int, list[list[Any]]]] = []  # (block, order, edits within the row)
    rebuilt = 0
    for row in rows:
        first = min(row, key=lambda ln: ln.order)
        if len(row) == 1 and _in_order(row[0]):
            line, edits = _as_is(row), []
        elif any(ln.rtl for ln in row) or (
            page_rtl and (len(row) > 1 or tail_of_rtl(row) or not has_letters(row))
        ):
            line, edits = _read_row(row, page_rtl, _aligned(row, margins))
            rebuilt += 1
        else:
            line, edits = _as_is(row), []
        blocks.setdefault(first.block, []).append((first.order, line))
        gap_rows.append((first.block, first.order, edits))
    out_blocks = []
    for number, block in enumerate(raw.get("blocks", [])):
        if block.get("type", 0) != 0 or "lines" not in block:
            out_blocks.append(block)
        elif number in blocks:
            out_blocks.append(
                {**block, "lines": [ln for _, ln in sorted(blocks[number], key=lambda t: t[0])]}
            )
    edits = _page_edits(out_blocks, gap_rows)
    return GlyphReading(
        {**raw, "blocks": out_blocks},
        [e for e in edits if e[3] != UNRESOLVED],
        rebuilt,
        [[e[0], e[1], e[2], e[4]] for e in edits if e[3] == UNRESOLVED],
    )


def _in_order(line: PageLine) -> bool:
    """A line read right to left as MuPDF gives it: RTL letters, marks, spaces and sentence
    punctuation only (no digit, Latin letter or bracket: nothing the bidi algorithm could move),
    its glyphs' boxes falling from right to left in stream order, and no gap without a space that
    could be a word boundary. Such a row is its own reading."""
    if not line.rtl:
        return False
    text = "".join([c["c"] for c in line.chars])
    if _NOT_PLAIN.search(text):
        return False
    prev_x0, size = None, line.size
    for c in line.chars:
        x0, x1 = c["bbox"][0], c["bbox"][2]
        if x1 - x0 <= ZERO:
            return False  # a ligature's or a mark's own box: leave it to the units
        if prev_x0 is not None and (
            x1 > prev_x0 + TOUCH_GAP * size or prev_x0 - x1 > SPACE_GAP * size
        ):
            return False
        prev_x0 = x0
    return True


def _as_is(row: list[PageLine]) -> dict[str, Any]:
    """A row that is not rebuilt: its one MuPDF line (rows of several lines are RTL rows)."""
    return row[0].source


def _units(line: PageLine) -> list[Unit]:
    """A MuPDF line's units in stream order: ligature clusters, and glyphs with their marks."""
    chars, spans = line.chars, line.spans
    text = "".join([c["c"] for c in chars])
    kinds = (
        GLYPH_KINDS.apply(text)
        if len(text) == len(chars)
        else "".join(GLYPH_KINDS.apply(c["c"])[:1] or "o" for c in chars)
    )
    starts = dict(glyph_clusters(chars, kinds)) if "R" in kinds else {}
    units: list[Unit] = []
    n, i = len(chars), 0
    while i < n:
        end = starts.get(i, i + 1)
        while end < n and kinds[end] == "M":
            end += 1
        if end == i + 1:  # most units: one glyph
            c = chars[i]
            box = c["bbox"]
            units.append(Unit([(c, spans[i])], box[0], box[2], kinds[i] == " ", text[i]))
            i = end
            continue
        members = list(zip(chars[i:end], spans[i:end]))
        wide = [c for c, _ in members if c["bbox"][2] - c["bbox"][0] > ZERO] or [members[0][0]]
        base = next((text[k] for k in range(i, end) if kinds[k] != "M"), text[i])
        units.append(
            Unit(
                members,
                min(c["bbox"][0] for c in wide),
                max(c["bbox"][2] for c in wide),
                kinds[i] == " ",
                base,
            )
        )
        i = end
    return units


def _aligned(row: list[PageLine], margins: tuple[float, float]) -> bool | None:
    """True where the row stands flush with the page's right text edge and not its left one (an
    RTL paragraph's line), False for the other way round, None where it says nothing."""
    size = max(ln.size for ln in row)
    left = min(ln.bbox[0] for ln in row) - margins[0] < 0.5 * size
    right = margins[1] - max(ln.bbox[2] for ln in row) < 0.5 * size
    return None if left == right else right


def _read_row(
    row: list[PageLine], page_rtl: bool, aligned: bool | None = None
) -> tuple[dict[str, Any], list[list[Any]]]:
    """One row: units in visual order, placeholder spaces set aside, gap repairs marked, then the
    logical order for the row's direction."""
    units = [u for line in sorted(row, key=lambda ln: ln.order) for u in _units(line)]
    breaks = [u for u in units if u.key in _BREAKS]  # a line end MuPDF kept stays at the row's end
    units = sorted(
        (u for u in units if u.key not in _BREAKS), key=lambda u: u.centre
    )  # stable on ties
    size = sorted(ln.size for ln in row)[len(row) // 2]
    letters = any(ln.rtl for ln in row)
    set_aside = (
        placeholders(units) if len(row) > 1 else []
    )  # another text object's glyph: pieces only
    units = [u for u in units if u.under is None]
    visual = mark_gaps(units, size)
    alternative = None
    if letters:
        order, alternative, rtl = letters_order(visual, page_rtl, aligned)
    else:
        rtl = page_rtl and (tail_of_rtl(row) if has_letters(row) else mirrored_number(visual))
        order, _ = logical_order([u.key for u in visual], rtl)
    after: dict[int, list[Unit]] = {}
    for space in set_aside:
        after.setdefault(id(space.under), []).append(space)
    kept: list[tuple[dict[str, Any], dict[str, Any]]] = []
    edits: list[list[Any]] = []
    for unit in (u for index in order for u in [visual[index], *after.get(id(visual[index]), [])]):
        members = unit.chars
        if unit.synthetic:
            edits.append([len(kept), len(kept), " ", "word_space_inserted"])
            continue
        if unit.dropped:
            edits.append([len(kept), len(kept) + len(members), "", "split_word_rejoined"])
        elif unit.under is not None:
            edits.append([len(kept), len(kept) + len(members), "", "space_under_glyph"])
        elif len(members) == 2 and (
            swapped := swapped_ligature(members, kept[-1][0]["c"] if kept else "")
        ):
            edits.append([len(kept), len(kept) + 2, swapped, "ligature_order"])
        kept += members
    kept += [m for u in breaks for m in u.chars]
    line = {**_line_dict(kept), "rtl": rtl}  # the direction it was read in: a repair reads it again
    if alternative is not None:  # the row reads both ways: the other reading goes to a referee
        other = "".join(
            c["c"]
            for index in alternative
            for u in [visual[index], *after.get(id(visual[index]), [])]
            for c, _ in u.chars
        ) + "".join(c["c"] for u in breaks for c, _ in u.chars)
        return line, [
            *squeeze_edits(edits),
            [0, len(kept), other, UNRESOLVED, [round(v, 2) for v in line["bbox"]]],
        ]
    return line, squeeze_edits(edits)


def squeeze_edits(edits: list[list[Any]]) -> list[list[Any]]:
    """Edits in order, none overlapping: an insertion next to a removal is dropped with it."""
    out: list[list[Any]] = []
    for edit in sorted(edits, key=lambda e: (e[0], e[1])):
        if out and edit[0] < out[-1][1]:
            continue
        if (
            out
            and out[-1][3] != edit[3]
            and out[-1][1] == edit[0] == edit[1]
            and out[-1][0] != out[-1][1]
        ):
            out.pop()  # a space taken out and put back in the same place: nothing changes
            continue
        out.append(edit)
    return out


def _line_dict(members: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    """A rawdict line from (char, span) pairs: consecutive characters of one span share a span."""
    spans: list[dict[str, Any]] = []
    source: Any = None
    for c, span in members:
        if span is not source:
            spans.append({**{k: v for k, v in span.items() if k != "chars"}, "chars": []})
            source = span
        spans[-1]["chars"].append(c)
    for span in spans:
        boxes = [c["bbox"] for c in span["chars"]]
        span["bbox"] = (
            min(b[0] for b in boxes),
            min(b[1] for b in boxes),
            max(b[2] for b in boxes),
            max(b[3] for b in boxes),
        )
    boxes = [s["bbox"] for s in spans] or [(0.0, 0.0, 0.0, 0.0)]
    return {
        "spans": spans,
        "wmode": 0,
        "dir": (1.0, 0.0),
        "rebuilt": True,
        "bbox": (
            min(b[0] for b in boxes),
            min(b[1] for b in boxes),
            max(b[2] for b in boxes),
            max(b[3] for b in boxes),
        ),
    }


def _page_edits(
    blocks: list[dict[str, Any]], rows: list[tuple[int, int, list[list[Any]]]]
) -> list[list[Any]]:
    """The rows' edits moved to page offsets (the page text: every line's characters, lines
    joined by one newline, in block order)."""
    pending = {(b, o): e for b, o, e in rows if e}
    if not pending:
        return []
    # the rows in page order, as read_rows laid them out: (block, order) sorted within blocks
    layout = sorted(((b, o) for b, o, _ in rows), key=lambda t: (t[0], t[1]))
    lengths = []
    for block in blocks:
        for line in block.get("lines", []):
            lengths.append(sum(len(c["c"]) for s in line["spans"] for c in s["chars"]))
    out: list[list[Any]] = []
    offset = 0
    for key, length in zip(layout, lengths):
        for start, end, *rest in pending.get(key, []):
            out.append([offset + start, offset + end, *rest])
        offset += length + 1
    return out
