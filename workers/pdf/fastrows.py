"""`mupdf.glyph_evidence`'s evidence for a page with Hebrew or Arabic letters, its rows read by the
C walk (`stextrows.c`) instead of from `extractRAWDICT`'s dicts.

`glyphlines.read_rows` over a page's rawdict costs several times MuPDF's own text extraction: a
dict for every character, then rows, units, the visual sort and the word gaps in Python. Here
`pf_glyphs` gathers the characters into flat arrays in one pass over MuPDF's text page, and
`pf_rows` groups them into rows, builds each row's units, sorts them and measures the gaps, as
glyphlines does. What stays in Python is per row: which reading the bidirectional algorithm gives
(`routing.bidi_order`, `glyphunits.letters_order_of`), the edits, and the evidence of the rows
(`fastwalk.walk_evidence` on the characters in the rows' order).

    evidence(textpage)   `glyph_evidence(textpage)[0]`, or None where the library is not there or
                         declines the page (vertical text, a font whose glyph boxes PyMuPDF
                         corrects, a coordinate that is not a number): the caller reads the rawdict

Runs in the sandbox child, with `workers.pdf.mupdf`; plain data in and out.
"""

from __future__ import annotations

import ctypes
import unicodedata
from typing import Any

import numpy as np
import pymupdf

from routing.arabic import ALEF, LAM
from routing.bidi_order import logical_order
from routing.charclass import LazyTable
from routing.scripts import is_latin, is_rtl_letter
from workers.pdf import fastwalk
from workers.pdf.glyphlines import UNRESOLVED, squeeze_edits
from workers.pdf.glyphunits import ZERO, letters_order_of, mirrored_keys

# stextrows.c's flags: of a character (C_*), of a record (U_*), of a row (R_*)
C_SPACE, C_MARK, C_RTL, C_LATIN, C_ALPHA, C_ALNUM, C_DEC = 1, 2, 4, 8, 16, 32, 64
U_SYNTHETIC, U_DROPPED, U_SPACE, U_AFTER, U_BREAK = 1, 2, 4, 8, 16
R_LETTERS, R_HAS_LETTERS, R_TAIL, R_ALIGNED, R_RIGHT = 1, 2, 4, 8, 16
_SMALL = -2
_I = ctypes.c_int


def _char_bits(ch: str) -> str:
    """What the C rows need to know of a character from the Unicode database, as one byte."""
    bits = C_SPACE if ch.isspace() else C_MARK if unicodedata.category(ch).startswith("M") else 0
    bits |= C_RTL if is_rtl_letter(ch) else 0
    bits |= C_LATIN if is_latin(ch) else 0
    bits |= (C_ALPHA if ch.isalpha() else 0) | (C_ALNUM if ch.isalnum() else 0)
    return chr(0x80 | bits | (C_DEC if ch.isdecimal() else 0))


CHAR_BITS = LazyTable(_char_bits)


class _Glyphs(fastwalk.Buffers):
    """fastwalk's arrays, with the font sizes and the lines' blocks, directions and boxes."""

    def grow(self, chars: int, lines: int) -> None:
        grew_chars, grew_lines = chars > self.chars, lines > self.lines
        super().grow(chars, lines)
        if grew_chars:
            self.size = np.empty(self.chars, dtype=np.float32)
        if grew_lines:
            self.line_info = np.empty(2 * self.lines, dtype=np.int32)
            self.line_box = np.empty(4 * self.lines, dtype=np.float32)


_WALK: _Glyphs | None = None
_ROWS: fastwalk.Buffers | None = None  # the characters again, in the rows' order


def _glyphs(lib: ctypes.CDLL, textpage: pymupdf.TextPage) -> tuple[_Glyphs, int, int] | None:
    global _WALK
    buf = _WALK = _WALK or _Glyphs()
    n_lines, need = _I(), (ctypes.c_int * 2)()
    for _ in range(2):
        n = lib.pf_glyphs(
            fastwalk.page_address(textpage),
            buf.cps.ctypes.data,
            buf.geo.ctypes.data,
            buf.size.ctypes.data,
            buf.line_len.ctypes.data,
            buf.line_info.ctypes.data,
            buf.line_box.ctypes.data,
            buf.chars,
            buf.lines,
            ctypes.byref(n_lines),
            need,
        )
        if n != _SMALL:
            return None if n < 0 else (buf, n, n_lines.value)
        buf.grow(need[0], need[1])
    return None  # pragma: no cover - the second call has room for every character


def evidence(textpage: pymupdf.TextPage) -> dict[str, Any] | None:
    """`mupdf.glyph_evidence(textpage)[0]` from the C walk, or None (no library, or a page it
    leaves to the rawdict)."""
    lib = fastwalk.library()
    walked = _glyphs(lib, textpage) if lib is not None else None
    if walked is None:
        return None
    buf, n, n_lines = walked
    flat = buf.cps[:n].tobytes().decode("utf-32-le", "surrogatepass")
    rows = np.empty(6 * max(n_lines, 1), dtype=np.int32)
    recs = np.empty(4 * (2 * n + 1), dtype=np.int32)
    page_rtl = _I()
    count = lib.pf_rows(
        n_lines,
        buf.line_len.ctypes.data,
        buf.line_info.ctypes.data,
        buf.line_box.ctypes.data,
        buf.geo.ctypes.data,
        buf.size.ctypes.data,
        buf.cps.ctypes.data,
        CHAR_BITS.apply(flat).encode("latin-1"),
        rows.ctypes.data,
        recs.ctypes.data,
        ctypes.byref(page_rtl),
    )
    if count < 0:
        return None
    if count == 0:  # no line holds a Hebrew or Arabic letter: the page as MuPDF gives it
        return fastwalk.walk_evidence(lib, buf, n, n_lines)
    page = _Page(flat, buf.geo[: 6 * n].reshape(-1, 6), recs.tolist(), bool(page_rtl.value))
    for read, start, length, first, records, flags in rows[: 6 * count].reshape(-1, 6).tolist():
        if read:
            page.read_row(first, records, flags)
        else:
            page.keep(start, length)
    return page.evidence(lib, buf)


class _Page:
    """The rows of one page in reading order, as `glyphlines.read_rows` lays them out: each row's
    characters (indices into the walk's arrays), direction and edits."""

    def __init__(self, flat: str, geo: np.ndarray, recs: list[int], page_rtl: bool) -> None:
        self.flat, self.geo, self.recs, self.page_rtl = flat, geo, recs, page_rtl
        self.order: list[int] = []  # the characters of every row, row after row
        self.lengths: list[int] = []
        self.directions: list[int] = []  # per row: 1 RTL, 0 LTR, -1 MuPDF's line kept
        self.edits: list[list[Any]] = []
        self.offset = 0  # where the next row starts in the page text

    def keep(self, start: int, length: int) -> None:
        self._add(range(start, start + length), -1, [])

    def _add(self, chars: Any, direction: int, edits: list[list[Any]]) -> None:
        self.order.extend(chars)
        self.edits += [[self.offset + a, self.offset + b, *rest] for a, b, *rest in edits]
        self.lengths.append(len(chars))
        self.directions.append(direction)
        self.offset += len(chars) + 1

    def read_row(self, first: int, records: int, flags: int) -> None:
        """glyphlines._read_row from the row's records (stextrows.c: the units in visual order,
        each followed by the placeholders under it, then the line ends)."""
        flat, recs = self.flat, self.recs
        visual: list[tuple[int, int, int]] = []
        after: list[list[tuple[int, int, int]]] = []
        breaks: list[int] = []
        keys: list[str] = []
        for at in range(4 * first, 4 * (first + records), 4):
            start, end, kind, key = recs[at : at + 4]
            if kind & U_BREAK:
                breaks.extend(range(start, end))
            elif kind & U_AFTER:
                after[-1].append((start, end, kind))
            else:
                visual.append((start, end, kind))
                after.append([])
                keys.append(flat[key] if key >= 0 else " ")
        alternative = None
        if flags & R_LETTERS:
            texts = [" " if k & U_SYNTHETIC else flat[a:b] for a, b, k in visual]
            aligned = bool(flags & R_RIGHT) if flags & R_ALIGNED else None
            order, alternative, rtl = letters_order_of(keys, texts, self.page_rtl, aligned)
        else:
            rtl = self.page_rtl and (
                bool(flags & R_TAIL)
                if flags & R_HAS_LETTERS
                else mirrored_keys([k for k, u in zip(keys, visual) if not u[2] & U_SPACE])
            )
            order, _ = logical_order(keys, rtl)
        kept, edits = self._kept(visual, after, order)
        kept += breaks
        if alternative is not None:  # the row reads both ways: the other reading goes to a referee
            other = "".join(
                flat[a:b]
                for index in alternative
                for a, b, k in [visual[index], *after[index]]
                if not k & U_SYNTHETIC
            ) + "".join(flat[i] for i in breaks)
            edits = [*squeeze_edits(edits), [0, len(kept), other, UNRESOLVED, self._box(kept)]]
        else:
            edits = squeeze_edits(edits)
        self._add(kept, int(rtl), edits)

    def _kept(
        self,
        visual: list[tuple[int, int, int]],
        after: list[list[tuple[int, int, int]]],
        order: list[int],
    ) -> tuple[list[int], list[list[Any]]]:
        """The row's characters in the reading's order, and the gap repairs against them."""
        kept: list[int] = []
        edits: list[list[Any]] = []
        for index in order:
            for start, end, kind in [visual[index], *after[index]]:
                at = len(kept)
                if kind & U_SYNTHETIC:
                    edits.append([at, at, " ", "word_space_inserted"])
                    continue
                if kind & U_DROPPED:
                    edits.append([at, at + end - start, "", "split_word_rejoined"])
                elif kind & U_AFTER:
                    edits.append([at, at + end - start, "", "space_under_glyph"])
                elif end - start == 2 and (swapped := self._swapped(start, kept)):
                    edits.append([at, at + 2, swapped, "ligature_order"])
                kept.extend(range(start, end))
        return kept, edits

    def _swapped(self, start: int, kept: list[int]) -> str | None:
        """glyphunits.swapped_ligature of the unit of two code points at `start`."""
        flat, geo = self.flat, self.geo
        if not kept or flat[kept[-1]] != ALEF or flat[start] != ALEF:
            return None
        first, second = geo[start].tolist(), geo[start + 1].tolist()
        if first[2] - first[0] > ZERO:
            return None
        c = flat[start + 1]
        if second[2] - second[0] <= ZERO or not is_rtl_letter(c) or c in (ALEF, LAM):
            return None
        return c + ALEF

    def _box(self, kept: list[int]) -> list[float]:
        """The rebuilt line's bbox (its characters' boxes' extremes), rounded as an unresolved
        row's."""
        if not kept:
            return [0.0, 0.0, 0.0, 0.0]
        boxes = self.geo[kept, :4].tolist()
        x0 = min(b[0] for b in boxes)
        y0 = min(b[1] for b in boxes)
        x1 = max(b[2] for b in boxes)
        y1 = max(b[3] for b in boxes)
        return [round(v, 2) for v in (x0, y0, x1, y1)]

    def evidence(self, lib: ctypes.CDLL, buf: fastwalk.Buffers) -> dict[str, Any]:
        """`mupdf._geometry_evidence` of the rows, with what `glyph_evidence` adds where a row
        was read again."""
        global _ROWS
        rows = _ROWS = _ROWS or fastwalk.Buffers()
        n, n_lines = len(self.order), len(self.lengths)
        rows.grow(n, n_lines)
        order = np.asarray(self.order, dtype=np.intp)
        rows.cps[:n] = buf.cps[order]
        rows.geo[: 6 * n] = buf.geo.reshape(-1, 6)[order].ravel()
        rows.line_len[:n_lines] = self.lengths
        rebuilt = any(d >= 0 for d in self.directions)
        found = fastwalk.walk_evidence(lib, rows, n, n_lines, reorders=not rebuilt)
        if not rebuilt:
            return found
        geometry = found["line_geometry"]
        for i, direction in enumerate(self.directions):
            if direction >= 0:
                geometry[i] = [0, 0]  # a row read again is in its reading order by construction
        found["glyph_rows"] = True
        found["row_directions"] = self.directions
        found["gap_repairs"] = [e for e in self.edits if e[3] != UNRESOLVED]
        unresolved = [[e[0], e[1], e[2], e[4]] for e in self.edits if e[3] == UNRESOLVED]
        if unresolved:
            found["unresolved_rows"] = unresolved
        return found
