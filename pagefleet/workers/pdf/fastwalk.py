"""Rung 1's walk over MuPDF's text page in C (`stextwalk.c`), loaded with ctypes (issue 15).

`extractRAWDICT` builds a Python dict for every character of a page, and the RTL evidence then
walks those dicts in Python: on a Hebrew or Arabic page that costs more than MuPDF's own text
extraction. The C walk reads MuPDF's structs in place and returns the same evidence:

    blocks(textpage)     `stext.walk`'s answer: visible image boxes, text line count
    text(textpage)       `textpage.extractText()`, or None where the C walk leaves it to PyMuPDF
    text_unless_rtl(textpage)
                         (whether a character lies in a Hebrew or Arabic block, the text where
                         none does): one walk tells a Latin page and gives its text
    evidence(textpage)   `mupdf._geometry_evidence(textpage.extractRAWDICT())`'s answer, or None
                         where the C walk declines a page (vertical text, a font whose glyph boxes
                         PyMuPDF corrects, ...): the caller takes the Python path

Both return None where the library is not there, so nothing depends on it: it is built by
`make setup` (`python -m pagefleet.workers.pdf.fastwalk build`: the system C compiler, against the MuPDF
headers and library in the installed PyMuPDF wheel) and refused when the MuPDF it was built for is
not the one loaded. Settings `native_walk` (`PAGEFLEET_ADVANCED__NATIVE_WALK=0`) turns it off (benchmarks,
the equality tests).
Runs in the sandbox child, with `pagefleet.workers.pdf.mupdf`.
"""

from __future__ import annotations

import ctypes
import logging
import os
import subprocess
import sys
import tempfile
import unicodedata
from functools import cache, lru_cache
from itertools import accumulate
from pathlib import Path
from collections.abc import Callable
from typing import Any

import numpy as np
import pymupdf

from pagefleet.routing.charclass import LazyTable
from pagefleet.routing.scripts import is_rtl_letter
from pagefleet.workers.pdf.runs import may_reorder_lines, run_order_of, unit_kinds
from pagefleet.workers.pdf.stext import Box

log = logging.getLogger(__name__)

SOURCES = (
    Path(__file__).with_name("stextwalk.c"),
    Path(__file__).with_name("stextrows.c"),  # the rows `fastrows` reads
    Path(__file__).with_name("stextorder.c"),  # and the order it reads each in
)
LIBRARY = Path(__file__).with_name("_stextwalk.so")
_FALLBACK, _SMALL, _RTL = -1, -2, -3
ABI = 3  # stextwalk.c's pf_abi: the signatures below
_P = ctypes.c_void_p
_I = ctypes.c_int


def build(target: Path = LIBRARY) -> Path:
    """Compile `stextwalk.c`, `stextrows.c` and `stextorder.c` into `target` (atomically: a worker never loads half a file)."""
    wheel = Path(pymupdf.__file__).parent
    libs = sorted(p.name for p in wheel.glob("libmupdf.so.*"))
    if not libs:
        raise FileNotFoundError(f"no libmupdf.so.* in {wheel}")
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        out = Path(tmp) / target.name
        subprocess.run(
            [
                os.environ.get("CC", "cc"),
                "-O2",
                "-ffp-contract=off",
                "-fPIC",
                "-shared",
                "-Wall",
                f"-I{wheel / 'mupdf-devel' / 'include'}",
                *map(str, SOURCES),
                "-o",
                str(out),
                f"-L{wheel}",
                f"-l:{libs[0]}",
                f"-Wl,-rpath,{wheel.resolve()}",
            ],
            check=True,
        )
        os.replace(out, target)
    return target


@cache
def library() -> ctypes.CDLL | None:
    """The C walk, or None (not built, turned off, or built for another MuPDF)."""
    from pagefleet.workers.settings import get_settings

    if not get_settings().advanced.native_walk or not LIBRARY.exists():
        return None
    try:
        lib = ctypes.CDLL(str(LIBRARY))
    except OSError as exc:
        log.warning("native text walk not loaded (%s): the Python path is used", exc)
        return None
    lib.pf_version.restype = ctypes.c_char_p
    if (
        not hasattr(lib, "pf_abi") or lib.pf_abi() != ABI
    ):  # an older stextwalk.c: `make native` builds it again
        log.warning("native text walk out of date: the Python path is used")
        return None
    if lib.pf_version().decode() != pymupdf.mupdf_version:
        log.warning(
            "native text walk built for MuPDF %s, %s loaded: the Python path is used",
            lib.pf_version().decode(),
            pymupdf.mupdf_version,
        )
        return None
    lib.pf_blocks.argtypes = [_P, _P, _I, _P]
    lib.pf_chars.argtypes = [_P, _P, _P, _P, _I, _I, _P, _P]
    lib.pf_text.argtypes = [_P, _P, _I, _P, _I]
    lib.pf_evidence.argtypes = [_I, _P, _P, ctypes.c_char_p, _P, _P, _P, _P]
    lib.pf_reorders.argtypes = [_I, _P, _P, ctypes.c_char_p, _P, _P]
    lib.pf_glyphs.argtypes = [_P, _P, _P, _P, _P, _P, _P, _I, _I, _P, _P]
    lib.pf_rows.argtypes = [_I, _P, _P, _P, _P, _P, _P, ctypes.c_char_p, _P, _P, _P, _P]
    lib.pf_orders.argtypes = [_I, _P, _P, _P, ctypes.c_char_p, _P, ctypes.c_char_p, _I, _P, _P, _P]
    lib.pf_faults.argtypes = [ctypes.c_char_p, ctypes.c_char_p, _I]
    lib.pf_kept.argtypes = [_I, _P, _P, _P, _P, _P, ctypes.c_char_p, _P, _P, _P]
    lib.pf_bidi_order.argtypes = [ctypes.c_char_p, _I, _I, ctypes.c_char_p, _P]
    return lib


class Buffers:
    """Arrays the C walk writes into, grown as pages need: one set per process, shared by every
    call (the sandbox child reads one page at a time, in one thread)."""

    def __init__(self) -> None:
        self.chars = self.lines = 0
        self.grow(4096, 256)

    def grow(self, chars: int, lines: int) -> None:
        """Room for `chars` characters in `lines` lines (the arrays' addresses taken again only
        where one grew)."""
        if self.enlarge(chars, lines):
            self.addresses()

    def enlarge(self, chars: int, lines: int) -> bool:
        """New arrays where `chars` or `lines` exceed the room: whether any was made."""
        grew = chars > self.chars or lines > self.lines
        if chars > self.chars:
            self.chars = max(chars, 2 * self.chars)
            self.cps = np.empty(self.chars, dtype=np.uint32)
            self.geo = np.empty(6 * self.chars, dtype=np.float32)
            self.clusters = np.empty(2 * self.chars + 2, dtype=np.int32)
            self.spans = np.empty(2 * self.chars + 2, dtype=np.int32)
            self.scratch = np.empty(self.chars + 1, dtype=np.uint8)
        if lines > self.lines:
            self.lines = max(lines, 2 * self.lines)
            self.line_len = np.empty(self.lines, dtype=np.int32)
            self.geometry = np.empty(2 * self.lines, dtype=np.int32)
        return grew

    def addresses(self) -> None:
        """Each array's address, by name, for the C calls: `ndarray.ctypes.data` builds a ctypes
        helper on every read (~2.5 us; ~20 reads a page)."""
        self.at = {k: v.ctypes.data for k, v in vars(self).items() if isinstance(v, np.ndarray)}


_BUF: Buffers | None = None
_BOXES = np.empty(4 * 64, dtype=np.float32)


def page_address(textpage: pymupdf.TextPage) -> int:
    """The address of the fz_stext_page the C walk reads."""
    return textpage.this.m_internal_value()


def blocks(textpage: pymupdf.TextPage) -> tuple[list[Box], int | None] | None:
    """(visible boxes of the images drawn, text lines or None), as `stext.walk`; None without the library."""
    global _BOXES
    lib = library()
    if lib is None:
        return None
    lines = _I()
    n = lib.pf_blocks(
        page_address(textpage), _BOXES.ctypes.data, len(_BOXES) // 4, ctypes.byref(lines)
    )
    if n > len(_BOXES) // 4:
        _BOXES = np.empty(4 * n, dtype=np.float32)
        n = lib.pf_blocks(page_address(textpage), _BOXES.ctypes.data, n, ctypes.byref(lines))
    flat = _BOXES[: 4 * n].tolist()
    return [tuple(flat[i : i + 4]) for i in range(0, 4 * n, 4)], (
        None if lines.value < 0 else lines.value
    )


def text(textpage: pymupdf.TextPage) -> str | None:
    """`textpage.extractText()`'s string from the C walk (a Latin page of ~6 000 characters: ~0.25
    ms instead of ~0.6), or None: no library, or a page it leaves to extractText (`pf_text`)."""
    return _text(textpage, False)[1]


def text_unless_rtl(textpage: pymupdf.TextPage) -> tuple[bool | None, str | None]:
    """(whether a character of the page lies in a Hebrew or Arabic block, `text(textpage)` where
    none does, else None), from one walk: a Latin page is not walked twice. (None, None) without
    the library."""
    return _text(textpage, True)


def _text(textpage: pymupdf.TextPage, unless_rtl: bool) -> tuple[bool | None, str | None]:
    lib = library()
    if lib is None:
        return None, None
    buf = _buffers()
    need = (ctypes.c_int * 2)()
    for _ in range(2):
        n = lib.pf_text(page_address(textpage), buf.at["cps"], buf.chars, need, int(unless_rtl))
        if n == _RTL:
            return True, None
        if n != _SMALL:
            return False, (None if n == _FALLBACK else buf.cps[:n].tobytes().decode("utf-32-le"))
        buf.grow(need[0], 0)
    return False, None  # pragma: no cover - the second call has room for every character


def _buffers() -> Buffers:
    """This process's arrays for the C walk (made on first use)."""
    global _BUF
    _BUF = _BUF or Buffers()
    return _BUF


def fill(buf: Buffers, walk: Callable[[Any, Any], int]) -> tuple[Buffers, int, int] | None:
    """`walk(n_lines, need)`, a C walk into `buf`'s arrays: (buf, characters, lines), or None where
    it leaves the page to the Python path. A walk short of room says how much it needs (PF_SMALL)
    and runs once more after `buf` grows."""
    n_lines, need = _I(), (ctypes.c_int * 2)()
    for _ in range(2):
        n = walk(n_lines, need)
        if n != _SMALL:
            return None if n == _FALLBACK else (buf, n, n_lines.value)
        buf.grow(need[0], need[1])
    return None  # pragma: no cover - the second call has room for every character


def _chars(lib: ctypes.CDLL, textpage: pymupdf.TextPage) -> tuple[Buffers, int, int] | None:
    buf = _buffers()
    page = page_address(textpage)
    return fill(
        buf,
        lambda n_lines, need: lib.pf_chars(
            page,
            buf.at["cps"],
            buf.at["geo"],
            buf.at["line_len"],
            buf.chars,
            buf.lines,
            ctypes.byref(n_lines),
            need,
        ),
    )


def evidence(textpage: pymupdf.TextPage) -> dict[str, Any] | None:
    """The text layer and evidence `mupdf._geometry_evidence(textpage.extractRAWDICT())` gives,
    or None (no library, or a page the C walk leaves to the Python path)."""
    lib = library()
    walked = _chars(lib, textpage) if lib is not None else None
    return None if walked is None else walk_evidence(lib, *walked)


# the one character classification both paths (this C walk and `mupdf`'s Python one) use
def _glyph_kind(ch: str) -> str:
    if ch.isspace():
        return " "
    if unicodedata.category(ch).startswith("M"):
        return "M"
    return "R" if is_rtl_letter(ch) else "o"


GLYPH_KINDS = LazyTable(_glyph_kind)


@lru_cache(maxsize=4)
def glyph_kinds(text: str) -> str:
    """One code per character, in one C-level pass: " " whitespace, "M" combining mark, "R" Hebrew or
    Arabic letter, "o" anything else. Cached for the last few texts: the C walk's evidence and
    `_rtl_page` ask about the same page."""
    return GLYPH_KINDS.apply(text)


def walk_evidence(
    lib: ctypes.CDLL, buf: Buffers, n: int, n_lines: int, reorders: bool = True
) -> dict[str, Any]:
    """The evidence of the n characters in n_lines lines that `buf` holds (pf_chars's layout);
    without `reorders`, no run orders (a page whose rows are rebuilt has none)."""
    flat = buf.cps[:n].tobytes().decode("utf-32-le", "surrogatepass")
    starts = list(accumulate(buf.line_len[:n_lines].tolist(), initial=0))
    lines = [flat[a:b] for a, b in zip(starts, starts[1:])]
    text = "\n".join(lines)
    kinds = glyph_kinds(text)
    n_clusters = _I()
    at = buf.at
    shared = lib.pf_evidence(
        n_lines,
        at["line_len"],
        at["geo"],
        kinds.encode("ascii"),
        at["geometry"],
        at["clusters"],
        ctypes.byref(n_clusters),
        at["scratch"],
    )
    return {
        "text": text,
        "line_geometry": buf.geometry[: 2 * n_lines].reshape(-1, 2).tolist(),
        "glyph_clusters": buf.clusters[: 2 * n_clusters.value].reshape(-1, 2).tolist(),
        "run_orders": _run_orders(lib, buf, lines, starts, kinds, text) if reorders else [],
        "glyphs": len(kinds) - kinds.count(" "),
        "shared_position_runs": shared,
    }


def _run_orders(
    lib: ctypes.CDLL, buf: Buffers, lines: list[str], starts: list[int], kinds: str, text: str
) -> list[list[list[int]]]:
    """`runs.run_order` of every line holding an RTL letter: the C walk finds and proves the order
    from the boxes it wrote; Python's text test says which lines may be reordered at all."""
    offsets = [
        start + i for i, start in enumerate(starts)
    ]  # where line i begins in `text`: one newline a line
    candidates = [
        i
        for i in may_reorder_lines(lines, text)
        if "R" in kinds[offsets[i] : offsets[i] + len(lines[i])]
    ]
    if not candidates:
        return []
    counts = np.zeros(len(lines), dtype=np.int32)
    if (
        lib.pf_reorders(
            len(lines),
            buf.at["line_len"],
            buf.at["geo"],
            unit_kinds(text).encode("ascii"),
            counts.ctypes.data,
            buf.at["spans"],
        )
        < 0
    ):
        counts[:] = -1  # out of memory in C: Python decides every line
    pairs = np.maximum(counts, 0)
    # every pair moved to where its line begins in `text`, as [start, end] lists, in one numpy pass
    moved = (
        buf.spans[: 2 * int(pairs.sum())].reshape(-1, 2)
        + np.repeat(np.asarray(offsets[: len(lines)], dtype=np.int64), pairs)[:, None]
    ).tolist()
    at = np.cumsum([0] + pairs.tolist()).tolist()
    per_line = counts.tolist()
    found: list[list[list[int]]] = []
    for i in candidates:
        if per_line[i] > 0:
            found.append(moved[at[i] : at[i + 1]])
        elif per_line[i] < 0:  # a coordinate that is not a number: Python's own comparisons decide
            geo = buf.geo[6 * starts[i] : 6 * starts[i + 1]]
            order = run_order_of(
                lines[i], geo[0::6].tolist(), geo[2::6].tolist(), geo[5::6].tolist()
            )
            if order:
                found.append([[offsets[i] + a, offsets[i] + b] for a, b in order])
    return found


if __name__ == "__main__":  # python -m pagefleet.workers.pdf.fastwalk build
    if sys.argv[1:] != ["build"]:
        sys.exit("usage: python -m pagefleet.workers.pdf.fastwalk build")
    print(f"built {build()}")
