"""Repair after acceptance: every change is an edit in one replayable map (`pagefleet.routing.edits`).

    raw ─► 1 line endings \\r\\n, \\r → \\n (line_ending); Unicode spaces (Zs) → " " (whitespace)
        ─► 2 punctuation displaced across an RTL embedding edge (rtl_punctuation_repair),
             then bidi controls removed (bidi_control_removed)
        ─► 3 visual-order lines → logical order, per run (visual_order_reversal)   [never from OCR]
             then swapped lam ligature glyph clusters put back in order (lam_alef_order,
             ligature_order; only with the text layer's glyph clusters, `pagefleet.routing.lam`), then
             runs of a line put in the reading order its glyph boxes prove (visual_order_reversal)
        ─► 4 NFKC of presentation/shape variants only; NFC of clusters with Hebrew/Arabic marks (nfkc)
        ─► 5 Arabic: tatweel, U+FFFD kashida, lam-alef order, other lam ligatures (with evidence)
        ─► 6 Symbol/Wingdings Private Use glyphs → Unicode (symbol_glyph_mapped)
        ─► 7 mirrored brackets under the balance invariant (mirrored_bracket)
        ─► Normalized(text, edits against raw, counters)

Order note: the brief listed the visual-order reversal after NFKC and the Arabic repairs. It runs
before them here because those stages assume logical order: NFKC of ﻻ yields `لا` in logical
order (reversing it afterwards would give `ال`), and the lam-alef/ligature patterns are patterns
of logical text. Detection is unaffected (the evidence folds Hebrew presentation forms itself).

Guarantees (tests/unit/test_normalize.py): for any input, `apply_edits(raw, edits) == text`;
clean input (logical Hebrew, unshaped Arabic, Latin, digits, balanced brackets, `\\n`) comes back
byte-identical with no edits; a second pass (default arguments) over the output makes no edits.
In auto mode a line is reversed only when the reversal removes the evidence; a caller who flags a
logical line as visual gets it mirrored, and a later auto pass may turn it back.

Counters: one per applied replacement of each kind (one per character for whitespace, bidi
controls, symbol glyphs and brackets; one per run for NFKC, tatweel/kashida and each reversed
run; one per NFC-reordered cluster, counted as nfkc; one per swap for lam-alef/ligature), plus
`unbalanced_brackets`: lines left unbalanced.

Pure functions, no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pagefleet.routing.arabic import (
    elongation_repairs,
    lam_alef_positions,
    ligature_order_positions,
)
from pagefleet.routing.brackets import mirror_brackets
from pagefleet.routing.bidi_order import line_is_rtl, reread_line
from pagefleet.routing.gaps import gap_replacements
from pagefleet.routing.symbols import SYMBOL_PUA_MAP
from pagefleet.routing.charclass import (
    F_ARABIC,
    F_BIDI,
    F_CR,
    F_HEBREW,
    F_NFKC,
    F_PRIVATE_USE,
    F_SPACE,
    NFKC_RANGES,
    features,
    positions,
)
from pagefleet.routing.edit_builder import EditMapBuilder, Replacement
from pagefleet.routing.edits import EDIT_KINDS, Edit
from pagefleet.routing.lam import is_lam_alef, swapped_clusters
from pagefleet.routing.spans import current_span_groups, current_spans
from pagefleet.routing.mirrored_lines import (
    OrderEvidence,
    hebrew_order_evidence,
    looks_visual_order,
    nfc_rtl_clusters,
    visual_line_replacements,
    visual_to_logical,
)
from pagefleet.routing.scripts import is_latin, is_rtl_letter

__all__ = [
    "BIDI_CONTROLS",
    "NFKC_RANGES",
    "SYMBOL_PUA_MAP",
    "Normalized",
    "OrderEvidence",
    "hebrew_order_evidence",
    "looks_visual_order",
    "normalize",
]

BIDI_CONTROLS = frozenset(
    "\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
SENTENCE_PUNCTUATION = ".,:;!?\u060c\u061b\u061f"
_LINE_END = re.compile("\r\n?")
_UNICODE_SPACE = re.compile("[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")  # Zs other than " "
_BIDI_CONTROL = re.compile("[" + "".join(sorted(BIDI_CONTROLS)) + "]")
_SYMBOL_PUA = re.compile("[\uf020-\uf0ff]")
_DISPLACED = re.compile(
    "^[ \t]*(?P<p>["
    + re.escape(SENTENCE_PUNCTUATION)
    + "]{1,3})"  # the displaced mark, at the line start
    "[\u202b\u202e](?P<body>[^\u202a-\u202e\n]*)\u202c[ \t]*$"  # RLE/RLO … PDF to the line end
)


@dataclass
class Normalized:
    """The display text, the edits that turn the raw text into it, and per-kind counters."""

    text: str
    edits: list[Edit]
    counters: dict[str, int] = field(default_factory=dict)


def _expand_line_flags(raw: str, line_visual: Sequence[bool] | None) -> list[bool] | None:
    """Map flags indexed by ``raw.split("\\n")`` onto the lines after stage 1 (a lone \\r splits
    a raw line in two; both halves keep its flag)."""
    if line_visual is None:
        return None
    count = raw.count("\n") + 1
    if len(line_visual) != count:
        raise ValueError(f"line_visual has {len(line_visual)} flags for {count} lines")
    if not features(raw) & F_CR:  # no lone \r to split a line: one flag a line, as given
        return [bool(flag) for flag in line_visual]
    raw_lines = raw.split("\n")
    flags: list[bool] = []
    for i, line in enumerate(raw_lines):
        core = line[:-1] if i < len(raw_lines) - 1 and line.endswith("\r") else line
        flags += [bool(line_visual[i])] * (core.count("\r") + 1)
    return flags


def _lines(text: str) -> list[tuple[int, str]]:
    out, pos = [], 0
    for line in text.split("\n"):
        out.append((pos, line))
        pos += len(line) + 1
    return out


def _per_char(
    text: str, pattern: re.Pattern[str], kind: str, mapping: Callable[[str], str | None]
) -> list[Replacement]:
    """One replacement per character matched by `pattern` that `mapping` changes."""
    reps = []
    for match in pattern.finditer(text):
        ch = match.group()
        new = mapping(ch)
        if new is not None and new != ch:
            reps.append(Replacement(match.start(), match.end(), new, kind))
    return reps


def _stage_line_endings(text: str) -> list[Replacement]:
    if not features(text) & F_CR:
        return []
    return [Replacement(m.start(), m.end(), "\n", "line_ending") for m in _LINE_END.finditer(text)]


def _stage_whitespace(text: str) -> list[Replacement]:
    if not features(text) & F_SPACE:
        return []
    return _per_char(text, _UNICODE_SPACE, "whitespace", lambda c: " ")


def _stage_displaced_punctuation(text: str) -> list[Replacement]:
    """`.‫שלום‬` → `‫שלום.‬`: sentence punctuation left of an RTL embedding that fills the rest of
    the line is what a reader of the RTL text sees at its end. Only when the body holds an RTL
    letter, does not open with a digit or Latin letter (the mark could be written onto it) and
    does not already end with punctuation."""
    reps: list[Replacement] = []
    if not features(text) & F_BIDI:  # no embedding to be displaced across
        return reps
    for offset, line in _lines(text):
        match = _DISPLACED.match(line)
        if not match:
            continue
        body = match.group("body")
        visible = [c for c in body if c not in BIDI_CONTROLS and not c.isspace()]
        if not visible or not any(is_rtl_letter(c) for c in visible):
            continue
        if visible[0].isdigit() or is_latin(visible[0]) or visible[-1] in SENTENCE_PUNCTUATION:
            continue
        last = max(i for i, c in enumerate(body) if c not in BIDI_CONTROLS and not c.isspace())
        body_at = offset + match.start("body")
        punct = match.group("p")
        reps.append(
            Replacement(
                offset + match.start("p"), offset + match.end("p"), "", "rtl_punctuation_repair"
            )
        )
        reps.append(
            Replacement(body_at + last + 1, body_at + last + 1, punct, "rtl_punctuation_repair")
        )
    return reps


def _stage_bidi_controls(text: str) -> list[Replacement]:
    if not features(text) & F_BIDI:
        return []
    return _per_char(text, _BIDI_CONTROL, "bidi_control_removed", lambda c: "")


def _line_is_visual(line: str, flag: bool | None) -> bool:
    if flag is not None:
        return flag
    if not looks_visual_order(hebrew_order_evidence(line)):
        return False
    # Auto mode only: the repair must remove the evidence, or it is not a mirrored line.
    return not looks_visual_order(hebrew_order_evidence(visual_to_logical(line)))


def _stage_visual_order(
    text: str,
    flags: list[bool] | None,
    glyph_rows: bool = False,
    directions: Sequence[int] | None = None,
) -> list[Replacement]:
    """`glyph_rows`: the lines are rows read from the glyphs (`pagefleet.workers.pdf.glyphlines`), so a
    flagged line is a page that shows mirrored words, read again as its drawn sequence in the
    direction it was read in (`directions`, per line: 1 RTL, 0 LTR)."""
    reps: list[Replacement] = []
    # a line is reversed where its flag says so, or (no flags) where its Hebrew letters say so
    if not any(flags) if flags is not None else not features(text) & F_HEBREW:
        return reps
    for index, (offset, line) in enumerate(_lines(text)):
        if not _line_is_visual(line, flags[index] if flags is not None else None):
            continue
        if glyph_rows:
            known = directions[index] if directions is not None and index < len(directions) else -1
            default = sum(1 for c in line if is_rtl_letter(c)) >= sum(
                1 for c in line if is_latin(c)
            )
            new = reread_line(line, bool(known) if known in (0, 1) else line_is_rtl(line, default))
            if new != line:
                reps.append(Replacement(offset, offset + len(line), new, "visual_order_reversal"))
            continue
        for start, end, new in visual_line_replacements(line):
            reps.append(Replacement(offset + start, offset + end, new, "visual_order_reversal"))
    return reps


def _stage_nfkc(text: str) -> list[Replacement]:
    """One replacement per run of presentation/shape variants (a shaped Arabic page would
    otherwise carry an edit per character)."""
    reps: list[Replacement] = []
    if not features(text) & F_NFKC:
        return reps
    at = positions(text, F_NFKC)  # maximal runs of NFKC_RANGES characters, from one numpy pass
    starts = [i for k, i in enumerate(at) if k == 0 or at[k - 1] != i - 1]
    ends = [i + 1 for k, i in enumerate(at) if k == len(at) - 1 or at[k + 1] != i + 1]
    for start, end in zip(starts, ends):
        run = text[start:end]
        new = "".join(unicodedata.normalize("NFKC", c) for c in run)
        if new != run:
            reps.append(Replacement(start, end, new, "nfkc"))
    return reps


def _stage_nfc_clusters(text: str) -> list[Replacement]:
    if not features(text) & (F_HEBREW | F_ARABIC):  # Hebrew and Arabic marks only
        return []
    return [Replacement(s, e, new, "nfkc") for s, e, new in nfc_rtl_clusters(text)]


def _stage_elongation(text: str) -> list[Replacement]:
    return [Replacement(s, e, "", kind) for s, e, kind in elongation_repairs(text)]


def _swap_after(text: str, positions: list[int], kind: str) -> list[Replacement]:
    """`ا X ل` → `ا ل X` at each position of the ا."""
    return [Replacement(p + 1, p + 3, text[p + 2] + text[p + 1], kind) for p in positions]


def _stage_lam_clusters(
    raw: str, builder: EditMapBuilder, clusters: Sequence[Sequence[int]]
) -> list[Replacement]:
    """Swapped lam ligature clusters (raw spans of code points from one glyph) put back in order:
    `lam_alef_order` for a lam-alef, `ligature_order` for the other lam ligatures."""
    spans = current_spans(raw, builder.text, builder.edits(), clusters)
    reps = []
    for start, end, new in swapped_clusters(builder.text, spans):
        kind = "lam_alef_order" if is_lam_alef(new) else "ligature_order"
        reps.append(Replacement(start, end, new, kind))
    return reps


def _stage_run_order(
    raw: str, builder: EditMapBuilder, run_orders: Sequence[Sequence[Sequence[int]]]
) -> list[Replacement]:
    """Lines whose runs the glyph geometry puts in another reading order (numbers and brackets
    on the wrong side of Arabic words, `pagefleet.workers.pdf.runs`): the line's runs in that order, one
    `visual_order_reversal` edit per line. A line whose spans no longer tile it is left alone."""
    reps = []
    for order, spans in zip(
        run_orders, current_span_groups(raw, builder.text, builder.edits(), run_orders)
    ):
        tiles = sorted(spans)
        if len(spans) != len(order) or any(a[1] != b[0] for a, b in zip(tiles, tiles[1:])):
            continue
        new = "".join(builder.text[a:b] for a, b in spans)
        reps.append(Replacement(tiles[0][0], tiles[-1][1], new, "visual_order_reversal"))
    return sorted(reps)


def _stage_symbols(text: str) -> list[Replacement]:
    if not features(text) & F_PRIVATE_USE:
        return []
    return _per_char(text, _SYMBOL_PUA, "symbol_glyph_mapped", SYMBOL_PUA_MAP.get)


def normalize(
    raw: str,
    *,
    line_visual: Sequence[bool] | None = None,
    from_ocr: bool = False,
    ligature_evidence: bool | None = None,
    glyph_clusters: Sequence[Sequence[int]] | None = None,
    run_orders: Sequence[Sequence[Sequence[int]]] | None = None,
    gap_repairs: Sequence[Sequence[object]] | None = None,
    glyph_rows: bool = False,
    row_directions: Sequence[int] | None = None,
) -> Normalized:
    """Run the stages of the module docstring over `raw`.

    `line_visual`: one flag per ``raw.split("\\n")`` line, True for a line stored in visual order
    (ValueError on a length mismatch); None decides per line from Hebrew final-form evidence.
    `from_ocr`: OCR output is logical already, nothing is ever reversed. `ligature_evidence`: True
    when the page shows a lam-alef decomposition; None computes it from this text.
    `glyph_clusters`: ``(start, end)`` spans of `raw` whose code points come from one glyph (the
    text layer's geometry); a swapped lam ligature among them is put back in order.
    `run_orders`: per line, spans of `raw` in the reading order the geometry proves; the line's
    runs are put in that order.
    `gap_repairs`: ``[start, end, replacement, kind]`` word-gap edits against `raw` that the glyph
    gaps prove (`pagefleet.workers.pdf.glyphlines`): applied first, as they are. `glyph_rows`: the text's
    RTL lines are rows read from the glyphs; a flagged one is read again as drawn.
    """
    flags = _expand_line_flags(raw, line_visual)
    builder = EditMapBuilder(raw)
    if gap_repairs:
        builder.apply(gap_replacements(raw, gap_repairs))
    builder.apply(_stage_line_endings(builder.text))
    builder.apply(_stage_whitespace(builder.text))
    builder.apply(_stage_displaced_punctuation(builder.text))
    builder.apply(_stage_bidi_controls(builder.text))
    if not from_ocr:
        builder.apply(_stage_visual_order(builder.text, flags, glyph_rows, row_directions))
    if glyph_clusters:
        builder.apply(_stage_lam_clusters(raw, builder, glyph_clusters))
    if run_orders and not from_ocr:
        builder.apply(_stage_run_order(raw, builder, run_orders))
    builder.apply(_stage_nfkc(builder.text))
    builder.apply(_stage_nfc_clusters(builder.text))
    builder.apply(_stage_elongation(builder.text))
    lam_alef = lam_alef_positions(builder.text)
    if ligature_evidence is None:
        ligature_evidence = bool(lam_alef)
    builder.apply(_swap_after(builder.text, lam_alef, "lam_alef_order"))
    if ligature_evidence:
        builder.apply(
            _swap_after(builder.text, ligature_order_positions(builder.text), "ligature_order")
        )
    builder.apply(_stage_symbols(builder.text))
    bracket_reps, unbalanced = mirror_brackets(builder.text)
    builder.apply(bracket_reps)
    counters = (
        {kind: 0 for kind in EDIT_KINDS} | builder.counters | {"unbalanced_brackets": unbalanced}
    )
    return Normalized(builder.text, builder.edits(), counters)
