"""`mupdf.glyph_evidence`'s evidence for a page with Hebrew or Arabic letters, its rows read by the
C walk (`stextrows.c`, `stextorder.c`) instead of from `extractRAWDICT`'s dicts.

`glyphlines.read_rows` over a page's rawdict costs several times MuPDF's own text extraction: a
dict for every character, then rows, units, the visual sort, the word gaps and two bidi readings
of every row in Python. Here the C walk does each step on flat arrays, as glyphlines does it:

    pf_glyphs    the characters, in one pass over MuPDF's text page
    pf_rows      rows, units, the visual order, placeholders and word gaps: per row its records
    pf_orders    the order each row is read in (`glyphunits.letters_order_of`), its levels from GNU
                 FriBidi where both it and python-bidi can be trusted to agree; a row it leaves
                 (a ZWNJ, a bidi control, no FriBidi) is read here by `letters_order_of` itself
    pf_kept      every row's characters in that order, and the gap edits against them

and the evidence of the rows is `fastwalk.walk_evidence` of the characters in the rows' order.

    evidence(textpage)   `glyph_evidence(textpage)[0]`, or None where the library is not there or
                         declines the page (vertical text, a font whose glyph boxes PyMuPDF
                         corrects, a coordinate that is not a number): the caller reads the rawdict

Runs in the sandbox child, with `pagefleet.workers.pdf.mupdf`; plain data in and out.
"""

from __future__ import annotations

import ctypes
import unicodedata
from itertools import accumulate
from typing import Any

import numpy as np
import pymupdf

from pagefleet.routing.bidi_order import logical_order
from pagefleet.routing.charclass import LazyTable
from pagefleet.routing.scripts import is_latin, is_rtl_letter
from pagefleet.workers.pdf import fastwalk
from pagefleet.workers.pdf.glyphlines import UNRESOLVED, squeeze_edits
from pagefleet.workers.pdf.glyphunits import letters_order_of, mirrored_keys

# stextrows.c's flags: of a character (C_*), of a record (U_*), of a row (R_*)
C_SPACE, C_MARK, C_RTL, C_LATIN, C_ALPHA, C_ALNUM, C_DEC = 1, 2, 4, 8, 16, 32, 64
U_SYNTHETIC, U_DROPPED, U_SPACE, U_AFTER, U_BREAK = 1, 2, 4, 8, 16
R_LETTERS, R_HAS_LETTERS, R_TAIL, R_ALIGNED, R_RIGHT, R_SIMPLE = 1, 2, 4, 8, 16, 32
E_SPACE, E_LIGATURE = 1, 4
_EDIT_KINDS = {1: "word_space_inserted", 2: "split_word_rejoined", 3: "space_under_glyph"}
_EDIT_KINDS[E_LIGATURE] = "ligature_order"
ROW_INTS = 8
_I = ctypes.c_int


def _char_bits(ch: str) -> str:
    """What the C rows need to know of a character from the Unicode database, as one byte."""
    bits = C_SPACE if ch.isspace() else C_MARK if unicodedata.category(ch).startswith("M") else 0
    bits |= C_RTL if is_rtl_letter(ch) else 0
    bits |= C_LATIN if is_latin(ch) else 0
    bits |= (C_ALPHA if ch.isalpha() else 0) | (C_ALNUM if ch.isalnum() else 0)
    return chr(0x80 | bits | (C_DEC if ch.isdecimal() else 0))


CHAR_BITS = LazyTable(_char_bits)
# stextrows.c's B_* codes: the bidi classes pf_bidi_order takes FriBidi's levels for
_BIDI_CODES = {"L": 1, "R": 2, "AL": 3, "EN": 4, "ES": 5, "ET": 6, "AN": 7, "CS": 8, "NSM": 9}
_BIDI_CODES |= {"ON": 10, "WS": 11}
BIDI_CLASSES = LazyTable(lambda ch: chr(0x80 | _BIDI_CODES.get(unicodedata.bidirectional(ch), 0)))
_ORDER = np.empty(1024, dtype=np.int32)


def reading_order(keys: list[str], rtl: bool) -> list[int]:
    """`logical_order(keys, rtl)[0]`, the levels from FriBidi where stextrows.c's pf_bidi_order
    takes them (the library there, and every key of a class both libraries agree on)."""
    global _ORDER
    lib = fastwalk.library()
    text = "".join(keys)
    if lib is not None and len(text) == len(keys):
        if len(_ORDER) < len(keys):
            _ORDER = np.empty(2 * len(keys), dtype=np.int32)
        found = lib.pf_bidi_order(
            text.encode("utf-32-le", "surrogatepass"),
            len(keys),
            int(rtl),
            BIDI_CLASSES.apply(text).encode("latin-1"),
            _ORDER.ctypes.data,
        )
        if found == 0:
            return _ORDER[: len(keys)].tolist()
    return logical_order(keys, rtl)[0]


class _Glyphs(fastwalk.Buffers):
    """fastwalk's arrays, with the font sizes and the lines' blocks, directions and boxes, and the
    rows' arrays pf_rows, pf_orders and pf_kept write (as many as a page of `chars` characters in
    `lines` lines can need)."""

    def enlarge(self, chars: int, lines: int) -> bool:
        grew_chars, grew_lines = chars > self.chars, lines > self.lines
        super().enlarge(chars, lines)
        if grew_chars:
            self.size = np.empty(self.chars, dtype=np.float32)
            self.recs = np.empty(4 * (2 * self.chars + 1), dtype=np.int32)
            self.keys = np.empty(2 * self.chars + 1, dtype=np.uint32)
            # per key: the order of its row's units, the other reading; pf_kept's edits
            self.orders = np.empty(2 * self.chars + 2, dtype=np.int32)
            self.others_at = np.empty(2 * self.chars + 2, dtype=np.int32)
            self.edits = np.empty(6 * (2 * self.chars + 2), dtype=np.int32)
            self.kept = np.empty(self.chars + 1, dtype=np.int32)
        if grew_lines:
            self.line_info = np.empty(2 * self.lines, dtype=np.int32)
            self.line_box = np.empty(4 * self.lines, dtype=np.float32)
            self.rows = np.empty(ROW_INTS * self.lines, dtype=np.int32)
            self.status = np.empty(self.lines, dtype=np.int32)
            self.lengths = np.empty(self.lines, dtype=np.int32)
        return grew_chars or grew_lines


_WALK: _Glyphs | None = None
_ROWS: fastwalk.Buffers | None = None  # the characters again, in the rows' order


def _glyphs(
    lib: ctypes.CDLL, textpage: pymupdf.TextPage
) -> tuple[fastwalk.Buffers, int, int] | None:
    global _WALK
    buf = _WALK = _WALK or _Glyphs()
    page = fastwalk.page_address(textpage)
    return fastwalk.fill(
        buf,
        lambda n_lines, need: lib.pf_glyphs(
            page,
            buf.at["cps"],
            buf.at["geo"],
            buf.at["size"],
            buf.at["line_len"],
            buf.at["line_info"],
            buf.at["line_box"],
            buf.chars,
            buf.lines,
            ctypes.byref(n_lines),
            need,
        ),
    )


def evidence(textpage: pymupdf.TextPage) -> dict[str, Any] | None:
    """`mupdf.glyph_evidence(textpage)[0]` from the C walk, or None (no library, or a page it
    leaves to the rawdict)."""
    lib = fastwalk.library()
    walked = _glyphs(lib, textpage) if lib is not None else None
    if walked is None:
        return None
    buf, n, n_lines = walked
    flat = buf.cps[:n].tobytes().decode("utf-32-le", "surrogatepass")
    bits = CHAR_BITS.apply(flat).encode("latin-1")
    page_rtl = _I()
    at = buf.at
    count = lib.pf_rows(
        n_lines,
        at["line_len"],
        at["line_info"],
        at["line_box"],
        at["geo"],
        at["size"],
        at["cps"],
        bits,
        at["rows"],
        at["recs"],
        at["keys"],
        ctypes.byref(page_rtl),
    )
    if count < 0:
        return None
    if count == 0:  # no line holds a Hebrew or Arabic letter: the page as MuPDF gives it
        return fastwalk.walk_evidence(lib, buf, n, n_lines)
    table = buf.rows[: ROW_INTS * count]
    last = table[-ROW_INTS:].tolist()
    every = buf.keys[: last[6] + last[7]].tobytes().decode("utf-32-le", "surrogatepass")
    page = _Page(flat, buf, bool(page_rtl.value))
    status = buf.status[:count]
    if lib.pf_orders(
        count,
        at["rows"],
        at["recs"],
        at["keys"],
        BIDI_CLASSES.apply(every).encode("latin-1"),
        at["cps"],
        bits,
        int(page_rtl.value),
        at["orders"],
        at["others_at"],
        at["status"],
    ):
        status[:] = 0  # out of memory in C: Python reads every row
    page.read(table.reshape(-1, ROW_INTS).tolist(), every, status.tolist())
    return page.evidence(lib, bits)


class _Page:
    """The rows of one page in reading order, as `glyphlines.read_rows` lays them out."""

    def __init__(self, flat: str, buf: _Glyphs, page_rtl: bool) -> None:
        self.flat, self.buf, self.page_rtl = flat, buf, page_rtl
        self.geo, self.recs = buf.geo.reshape(-1, 6), buf.recs
        # every read row's order of its visual units, at the row's first key (pf_orders)
        self.orders, self.others_at = buf.orders, buf.others_at  # and the other reading
        self.directions: list[int] = []  # per row: 1 RTL, 0 LTR, -1 MuPDF's line kept
        self.others: dict[int, str] = {}  # per row that reads both ways: the other reading

    def read(self, table: list[list[int]], every: str, status: list[int]) -> None:
        """Each read row's order by the bidi algorithm, from its keys (glyphlines._read_row):
        pf_orders's where it gave one, else Python's."""
        for row, (read, _, _, first, records, flags, at, count) in enumerate(table):
            if not read:
                self.directions.append(-1)
            elif status[row]:
                self.directions.append(1 if status[row] & 2 else 0)
                if status[row] & 4:
                    other = self.others_at[at : at + count].tolist()
                    self.others[row] = self._other(first, records, other)
            else:
                self._read_row(row, (first, records, flags), every[at : at + count], at)

    def _read_row(self, row: int, where: tuple[int, int, int], row_keys: str, at: int) -> None:
        """One row's order read in Python (pf_orders left it)."""
        first, records, flags = where
        alternative = None
        if flags & R_LETTERS:
            texts = row_keys if flags & R_SIMPLE else self._texts(first, records)
            aligned = bool(flags & R_RIGHT) if flags & R_ALIGNED else None
            order, alternative, rtl = letters_order_of(
                row_keys, texts, self.page_rtl, aligned, reading_order
            )
        else:
            rtl = self.page_rtl and (
                bool(flags & R_TAIL)
                if flags & R_HAS_LETTERS
                else mirrored_keys([k for k in row_keys if not k.isspace()])
            )
            order = reading_order(row_keys, rtl)
        if alternative is not None:  # the other reading goes to a referee
            self.others[row] = self._other(first, records, alternative)
        self.orders[at : at + len(order)] = order
        self.directions.append(int(rtl))

    def _records(self, first: int, records: int) -> list[list[int]]:
        flat = self.recs[4 * first : 4 * (first + records)].tolist()
        return [flat[i : i + 4] for i in range(0, len(flat), 4)]

    def _texts(self, first: int, records: int) -> list[str]:
        """The text of each of a row's visual units (its code points; a synthetic space's " ")."""
        return [
            " " if kind & U_SYNTHETIC else self.flat[a:b]
            for a, b, kind, _ in self._records(first, records)
            if not kind & (U_AFTER | U_BREAK)
        ]

    def _other(self, first: int, records: int, alternative: list[int]) -> str:
        """A row's text in its other reading: the units in `alternative`'s order, each with the
        placeholders under it, then the line ends."""
        units: list[list[str]] = []
        ends = []
        for a, b, kind, _ in self._records(first, records):
            text = "" if kind & U_SYNTHETIC else self.flat[a:b]
            if kind & U_BREAK:
                ends.append(text)
            elif kind & U_AFTER:
                units[-1].append(text)
            else:
                units.append([text])
        return "".join("".join(units[i]) for i in alternative) + "".join(ends)

    def _box(self, chars: np.ndarray) -> list[float]:
        """A rebuilt line's bbox (its characters' boxes' extremes), rounded as an unresolved
        row's."""
        if not len(chars):
            return [0.0, 0.0, 0.0, 0.0]
        boxes = self.geo[chars, :4].tolist()
        x0 = min(b[0] for b in boxes)
        y0 = min(b[1] for b in boxes)
        x1 = max(b[2] for b in boxes)
        y1 = max(b[3] for b in boxes)
        return [round(v, 2) for v in (x0, y0, x1, y1)]

    def _edits(self, found: list[list[int]], lengths: list[int], chars: np.ndarray) -> list[Any]:
        """pf_kept's edits, each row's squeezed, with the unresolved rows', at page offsets."""
        per_row: dict[int, list[list[Any]]] = {}
        for row, a, b, kind, c1, c2 in found:
            text = " " if kind == E_SPACE else chr(c1) + chr(c2) if kind == E_LIGATURE else ""
            per_row.setdefault(row, []).append([a, b, text, _EDIT_KINDS[kind]])
        starts = list(accumulate(lengths, initial=0))
        out: list[list[Any]] = []
        for row in sorted(per_row.keys() | self.others.keys()):
            edits = squeeze_edits(per_row.get(row, []))
            if row in self.others:
                kept = chars[starts[row] : starts[row + 1]]
                edits.append([0, len(kept), self.others[row], UNRESOLVED, self._box(kept)])
            offset = starts[row] + row  # one newline after each row before it
            out += [[offset + a, offset + b, *rest] for a, b, *rest in edits]
        return out

    def evidence(self, lib: ctypes.CDLL, bits: bytes) -> dict[str, Any]:
        """`mupdf._geometry_evidence` of the rows (pf_rows's table in the page's arrays), with
        what `glyph_evidence` adds where a row was read again."""
        global _ROWS
        buf, at = self.buf, self.buf.at
        n_rows = len(self.directions)
        found = lib.pf_kept(
            n_rows,
            at["rows"],
            at["recs"],
            at["orders"],
            at["geo"],
            at["cps"],
            bits,
            at["kept"],
            at["lengths"],
            at["edits"],
        )
        if found < 0:
            raise MemoryError("pf_kept")
        chars, lengths, edits = buf.kept, buf.lengths[:n_rows], buf.edits
        sizes = lengths.tolist()
        total = sum(sizes)
        rows = _ROWS = _ROWS or fastwalk.Buffers()
        rows.grow(total, n_rows)
        kept = chars[:total]
        # take into the arrays themselves: a fancy index builds a copy first
        np.take(buf.cps, kept, out=rows.cps[:total])
        np.take(buf.geo.reshape(-1, 6), kept, axis=0, out=rows.geo[: 6 * total].reshape(-1, 6))
        rows.line_len[:n_rows] = lengths
        rebuilt = any(d >= 0 for d in self.directions)
        result = fastwalk.walk_evidence(lib, rows, total, n_rows, reorders=not rebuilt)
        if not rebuilt:
            return result
        geometry = result["line_geometry"]
        for i, direction in enumerate(self.directions):
            if direction >= 0:
                geometry[i] = [0, 0]  # a row read again is in its reading order by construction
        page_edits = self._edits(edits[: 6 * found].reshape(-1, 6).tolist(), sizes, kept)
        result["glyph_rows"] = True
        result["row_directions"] = self.directions
        result["gap_repairs"] = [e for e in page_edits if e[3] != UNRESOLVED]
        unresolved = [[e[0], e[1], e[2], e[4]] for e in page_edits if e[3] == UNRESOLVED]
        if unresolved:
            result["unresolved_rows"] = unresolved
        return result
