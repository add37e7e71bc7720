"""Tables over plain data: cells in logical order, GFM Markdown, and unruled-table evidence.

Logical order: a table whose letters are mostly Hebrew/Arabic is read right to left, so its
visual columns are reversed; the text inside each cell is left exactly as it is (numbers, Latin).

Unruled tables (`aligned_columns`): consecutive visual rows, each split into segments at wide
gaps, that share the same empty vertical gutters. Columns of prose share gutters too, so a region
is a table only when its cells are short (few words, narrow) and it has a number column or, with
three columns or more, a column of short cells (labels) — see `TableRules`.

`layout_rows` reads `pdftotext -layout` text: runs of lines whose wide gaps line up, the
independent corroboration of a suspected table (seed 001).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from pagefleet.routing.scripts import is_latin, is_rtl_letter

Segment = tuple[float, float, int]  # x0, x1, words


@dataclass(frozen=True)
class TableRules:
    min_rows: int = 3
    min_gutter: float = 7.0
    max_cell_words: float = 4.0  # median words per non-empty cell
    max_cell_share: float = 0.45  # widest segment / region width
    min_columns_without_numbers: int = 3
    min_fill: float = 0.6  # every column holds text in this share of the rows
    max_short_words: float = (
        2.0  # without numbers, one column's median cell has at most this many words
    )
    layout_min_rows: int = 3
    layout_max_chunk: int = 30


def is_rtl_table(cells: Sequence[str]) -> bool:
    rtl = latin = 0
    for cell in cells:
        for ch in cell:
            rtl += is_rtl_letter(ch)
            latin += is_latin(ch)
    return rtl > latin


def logical_rows(visual_rows: Sequence[Sequence[str]], rtl: bool) -> list[list[str]]:
    """Rows of cells given left to right as drawn → logical order (RTL: rightmost column first)."""
    return [list(reversed(row)) if rtl else list(row) for row in visual_rows]


def spread_spans(
    rows: Sequence[Sequence[str]], boxes: Sequence[Sequence[Sequence[float] | None]], rtl: bool
) -> tuple[list[list[str]], list[list[Sequence[float] | None]]]:
    """Rows (cells drawn left to right, with their boxes) as wide as the table's widest row: a cell
    that spans columns stands at the first column of its span in reading order (the leftmost for
    an LTR table, the rightmost for an RTL one) and the rest of its span is empty. A row without
    boxes for every cell is left as it is."""
    widest = max(range(len(rows)), key=lambda i: len(rows[i]), default=None)
    if widest is None or any(b is None for b in boxes[widest]):
        return [list(r) for r in rows], [list(b) for b in boxes]
    centres = [(b[0] + b[2]) / 2 for b in boxes[widest]]  # type: ignore[index]
    out_rows, out_boxes = [], []
    for row, row_boxes in zip(rows, boxes):
        if (
            len(row) == len(centres)
            or len(row) != len(row_boxes)
            or any(b is None for b in row_boxes)
        ):
            out_rows.append(list(row))
            out_boxes.append(list(row_boxes))
            continue
        cells: list[str] = [""] * len(centres)
        cell_boxes: list[Sequence[float] | None] = [None] * len(centres)
        for text, box in zip(row, row_boxes):
            covered = [k for k, x in enumerate(centres) if box[0] <= x <= box[2]]  # type: ignore[index]
            if not covered:
                return [list(r) for r in rows], [list(b) for b in boxes]
            at = covered[-1] if rtl else covered[0]
            cells[at], cell_boxes[at] = text, box
        out_rows.append(cells)
        out_boxes.append(cell_boxes)
    return out_rows, out_boxes


def _cell_md(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def gfm(rows: Sequence[Sequence[str]]) -> str:
    """A GFM table; the first row is the header row (GFM has no headerless tables)."""
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    padded = [list(r) + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(_cell_md(c) for c in padded[0]) + " |", "|" + "---|" * width]
    lines += ["| " + " | ".join(_cell_md(c) for c in row) + " |" for row in padded[1:]]
    return "\n".join(lines)


_D = r"\d\u0660-\u0669\u06F0-\u06F9"
_NUMBER = re.compile(rf"^[\s(]*[-+−]?[{_D}](?:[{_D}.,\s\u202f\u2009٫٬]*[{_D}])?\s*%?[)]?\s*$")


def is_numeric(cell: str) -> bool:
    return bool(_NUMBER.match(cell)) if cell.strip() else False


def numeric_columns(rows: Sequence[Sequence[str]], header_rows: int = 1) -> list[int]:
    """Columns whose body cells are all numbers (rendered LTR inside an RTL table)."""
    body = [r for r in rows[header_rows:] if r]
    if not body:
        return []
    width = max(len(r) for r in body)
    out = []
    for col in range(width):
        cells = [r[col] for r in body if col < len(r) and r[col].strip()]
        if cells and all(is_numeric(c) for c in cells):
            out.append(col)
    return out


def _gutters(rows: Sequence[Sequence[Segment]], min_gutter: float) -> list[tuple[float, float]]:
    """Vertical strips inside the rows' extent that no segment of any row touches."""
    spans = sorted((s[0], s[1]) for row in rows for s in row)
    if not spans:
        return []
    gaps, reach = [], spans[0][1]
    for x0, x1 in spans[1:]:
        if x0 - reach >= min_gutter:
            gaps.append((reach, x0))
        reach = max(reach, x1)
    return gaps


def _is_table(
    rows: Sequence[Sequence[Segment]],
    gutters: list[tuple[float, float]],
    rules: TableRules,
    numeric: bool,
) -> bool:
    if len(rows) < rules.min_rows or not gutters:
        return False
    segs = [s for row in rows for s in row]
    x0, x1 = min(s[0] for s in segs), max(s[1] for s in segs)
    words = sorted(s[2] for s in segs)
    if words[len(words) // 2] > rules.max_cell_words:
        return False
    if max(s[1] - s[0] for s in segs) > rules.max_cell_share * max(x1 - x0, 1.0):
        return False
    if not _filled(rows, gutters, rules.min_fill):
        return False
    if numeric:
        return True
    return len(gutters) + 1 >= rules.min_columns_without_numbers and _short_column(
        rows, gutters, rules.max_short_words
    )


def _short_column(
    rows: Sequence[Sequence[Segment]], gutters: list[tuple[float, float]], max_words: float
) -> bool:
    """Some column of short cells (labels, codes): columns of wrapped prose have none."""
    edges = [float("-inf"), *[(a + b) / 2 for a, b in gutters], float("inf")]
    for lo, hi in zip(edges, edges[1:]):
        words = sorted(s[2] for row in rows for s in row if lo <= (s[0] + s[1]) / 2 < hi)
        if words and words[len(words) // 2] <= max_words:
            return True
    return False


def _filled(
    rows: Sequence[Sequence[Segment]], gutters: list[tuple[float, float]], min_fill: float
) -> bool:
    edges = [float("-inf"), *[(a + b) / 2 for a, b in gutters], float("inf")]
    for lo, hi in zip(edges, edges[1:]):
        filled = sum(1 for row in rows if any(lo <= (s[0] + s[1]) / 2 < hi for s in row))
        if filled < min_fill * len(rows):
            return False
    return True


def _subtract(
    free: list[tuple[float, float]], spans: Sequence[Segment]
) -> list[tuple[float, float]]:
    """The parts of the free intervals no span touches."""
    for x0, x1, _ in spans:
        out = []
        for a, b in free:
            if x1 <= a or x0 >= b:
                out.append((a, b))
                continue
            if x0 > a:
                out.append((a, x0))
            if x1 < b:
                out.append((x1, b))
        free = out
    return free


def _stretches(
    rows: Sequence[Sequence[Segment]], i: int, min_gutter: float
) -> list[tuple[int, list[tuple[float, float]]]]:
    """From row i down, while the rows share gutters: (last row, gutters) where each stretch with
    the same number of gutters ends. A one-segment row inside a run (a section label) is kept when it
    stays inside one column; a run neither starts nor ends with one. Gutters are kept incrementally
    (each row taken out of the strips still free): rows × segments, not rows²."""
    ends: list[tuple[int, list[tuple[float, float]]]] = []
    last: list[tuple[float, float]] = []
    free: list[tuple[float, float]] = [(float("-inf"), float("inf"))]
    j = i
    while j < len(rows) and rows[j] and (len(rows[j]) >= 2 or j > i):
        free = _subtract(free, rows[j])
        gutters = [
            (a, b)
            for a, b in free
            if a != float("-inf") and b != float("inf") and b - a >= min_gutter
        ]
        if not gutters or (len(rows[j]) < 2 and len(gutters) < len(last)):
            break
        if last and len(gutters) != len(last):
            ends.append((_last_full(rows, i, j - 1), last))
        last = gutters
        j += 1
    if last:
        ends.append((_last_full(rows, i, j - 1), last))
    return ends


def _last_full(rows: Sequence[Sequence[Segment]], i: int, j: int) -> int:
    """The last row at or above j that has two segments or more."""
    while j > i and len(rows[j]) < 2:
        j -= 1
    return j


def aligned_columns(
    rows: Sequence[Sequence[Segment]],
    numeric: Sequence[bool] | None = None,
    rules: TableRules = TableRules(),
) -> list[tuple[int, int, list[tuple[float, float]]]]:
    """Unruled tables among visual rows (top to bottom): [(first row, last row, gutters)].

    The whole run of rows sharing gutters is judged (the longest stretch first), never a lucky
    prefix of it: three columns of prose would otherwise give a "table" of their first rows.
    `numeric[i]`: row i holds a number-only segment (a two-column table needs one)."""
    found = []
    i = 0
    while i < len(rows):
        hit = None
        for last, gutters in reversed(_stretches(rows, i, rules.min_gutter)):
            has_number = (
                numeric is not None
                and len(numeric) > 0
                and 2 * sum(numeric[i : last + 1]) >= last + 1 - i
            )
            if _is_table(rows[i : last + 1], gutters, rules, has_number):
                hit = (i, last, gutters)
                break
        if hit:
            found.append(hit)
            i = hit[1] + 1
        else:
            i += 1
    return found


_WIDE_GAP = re.compile(r"\S(\s{2,})(?=\S)")


def layout_rows(layout_text: str, rules: TableRules = TableRules()) -> int:
    """The longest run of consecutive `pdftotext -layout` lines of short chunks whose wide gaps
    line up (≥ 1 gap column shared by every line of the run); 0 below `layout_min_rows`."""
    best = run = 0
    prev: set[int] = set()
    for line in layout_text.splitlines():
        gaps = {p for m in _WIDE_GAP.finditer(line) for p in range(m.start(1), m.end(1))}
        short = all(
            len(chunk) <= rules.layout_max_chunk for chunk in re.split(r"\s{2,}", line.strip())
        )
        if not gaps or not short:
            run, prev = 0, set()
        elif run and gaps & prev:
            run, prev = run + 1, gaps & prev
        else:
            run, prev = 1, gaps
        best = max(best, run)
    return best if best >= rules.layout_min_rows else 0


_BIDI = re.compile("[\u200e\u200f\u202a-\u202e\u2066-\u2069]")


_SIGNED = re.compile(r"^[-+−%٪]*[\d.,٫٬]+[-+−%٪]*$")


def _glued(chunk: str) -> str:
    """Spaces and bidi controls out, NFKC, case folded; a number's sign first and its percent sign
    last, wherever the extractor put them ("4.5%-", "٪٤٥" → "-4.5%", "45%")."""
    glued = unicodedata.normalize("NFKC", "".join(_BIDI.sub("", chunk).split())).casefold()
    if _SIGNED.match(glued):
        sign = "-" if any(c in "-−" for c in glued) else ""
        percent = "%" if any(c in "%٪" for c in glued) else ""
        glued = sign + "".join(c for c in glued if c not in "-+−%٪") + percent
    return glued


def cell_agreement(cells: Sequence[str], layout_text: str) -> tuple[float, float]:
    """Precision and recall of the table's cells against `pdftotext -layout` chunks (runs split at
    two or more spaces), spaces inside a cell or chunk ignored: Poppler splits shaped Arabic and
    some Hebrew words at single spaces, which a word count would take for disagreement."""
    mine = Counter(g for c in cells if (g := _glued(c)))
    theirs = Counter(
        g
        for line in layout_text.splitlines()
        for chunk in re.split(r"\s{2,}", _BIDI.sub("", line))
        if (g := _glued(chunk))
    )
    common = sum((mine & theirs).values())
    precision = common / sum(mine.values()) if mine else 0.0
    recall = common / sum(theirs.values()) if theirs else 0.0
    return round(precision, 4), round(recall, 4)


def signature(text: str) -> str:
    """A cell's characters, order-free: NFKC, no spaces, bidi controls or tatweel, sorted. Poppler
    splits shaped Arabic into glyphs and orders RTL runs its own way; the characters stay."""
    folded = unicodedata.normalize("NFKC", _BIDI.sub("", text)).casefold().replace("\u0640", "")
    return "".join(sorted("".join(folded.split())))


PopplerWord = tuple[float, float, float, float, str]


def cell_box_agreement(
    cells: Sequence[tuple[str, Sequence[float] | None]], words: Sequence[PopplerWord]
) -> tuple[float, float]:
    """Per cell, our text against the Poppler words whose centres fall in the cell's box (order-free
    signatures): (share of our non-empty cells matched, share of Poppler's non-empty cells matched)."""
    theirs = [[] for _ in cells]  # type: list[list[str]]
    boxes = [box for _, box in cells if box]
    left, top = min((b[0] for b in boxes), default=0.0), min((b[1] for b in boxes), default=0.0)
    right, bottom = (
        max((b[2] for b in boxes), default=-1.0),
        max((b[3] for b in boxes), default=-1.0),
    )
    for x0, y0, x1, y1, text in words:
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        if not (left <= cx <= right and top <= cy <= bottom):  # outside every cell: no cell loop
            continue
        for i, (_, box) in enumerate(cells):
            if box and box[0] <= cx <= box[2] and box[1] <= cy <= box[3]:
                theirs[i].append(text)
                break
    ours = [signature(text) for text, _ in cells]
    ref = [signature(" ".join(t)) for t in theirs]
    matched = sum(1 for a, b in zip(ours, ref) if a and a == b)
    mine, other = sum(1 for a in ours if a), sum(1 for b in ref if b)
    return (round(matched / mine, 4) if mine else 0.0), (
        round(matched / other, 4) if other else 0.0
    )


def poppler_tsv_words(tsv: str) -> dict[int, list[PopplerWord]]:
    """`pdftotext -tsv` → per page its words (level 5) as (x0, y0, x1, y1, text)."""
    pages: dict[int, list[PopplerWord]] = {}
    for line in tsv.splitlines()[1:]:
        parts = line.split("\t")
        if len(parts) < 12 or parts[0] != "5":
            continue
        try:
            left, top, width, height = (float(v) for v in parts[6:10])
            page = int(parts[1])
        except ValueError:
            continue
        pages.setdefault(page, []).append(
            (left, top, left + width, top + height, "\t".join(parts[11:]))
        )
    return pages
