"""Coverage check: ink that no recognised word covers. Tesseract silently drops whole lines (a
paragraph's second line, a page's first line); its text and confidence then look fine.

    binarised page ─► ink mask (Otsu) ─► minus every recognised word box (grown a little)
    ─► leftover ink, row by row ─► runs shaped like one or two text lines (half a line to 2.5
       lines high, wide) holding at least a word's worth of ink ─► `Gap`s: regions to re-read, or
       evidence that text is missing. Illustrations, big initials, logos and rules are left alone.

Pure functions over arrays and Tesseract's TSV; the re-reading is the engine's (tesseract.py).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

import numpy as np

from pagefleet.workers.engines.scan_prep import block_reduce, ink_mask

CELL = 4  # the coverage grid: 4×4 pixel cells


@dataclass(frozen=True)
class Word:
    block: int
    par: int
    line: int
    left: int
    top: int
    width: int
    height: int
    conf: float
    text: str


@dataclass(frozen=True)
class Gap:
    """Leftover ink: a box in the image's pixels, top-left inclusive, bottom-right exclusive."""

    top: int
    bottom: int
    left: int
    right: int


def parse_tsv(tsv: str) -> list[Word]:
    """Recognised words (level 5 rows with text) in Tesseract's reading order."""
    words = []
    for row in csv.DictReader(tsv.splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE):
        text = (row.get("text") or "").strip()
        if row.get("level") != "5" or not text:
            continue
        try:
            box = [
                int(row[k])
                for k in ("block_num", "par_num", "line_num", "left", "top", "width", "height")
            ]
            conf = float(row["conf"])
        except (KeyError, TypeError, ValueError):
            continue
        words.append(Word(*box, conf=conf, text=text))
    return words


def line_height(words: list[Word]) -> int:
    """The median height of the recognised words (0 when none)."""
    return int(np.median([w.height for w in words])) if words else 0


def _covered(shape: tuple[int, int], words: list[Word], grow: int) -> np.ndarray:
    mask = np.zeros(shape, dtype=bool)
    for w in words:
        pad = max(grow, w.height // 3)
        top, bottom = max(0, (w.top - pad) // CELL), (w.top + w.height + pad) // CELL + 1
        left, right = max(0, (w.left - pad) // CELL), (w.left + w.width + pad) // CELL + 1
        mask[top:bottom, left:right] = True
    return mask


def _cells(ink: np.ndarray) -> np.ndarray:
    """Ink pixels per CELL×CELL cell (uint8 holds CELL² = 16 at most)."""
    return block_reduce(ink.view(np.uint8), CELL, np.add).astype(np.int64)


def _runs(flags: np.ndarray, max_gap: int) -> list[tuple[int, int]]:
    """[start, end) runs of True, bridging gaps of up to `max_gap` False entries."""
    runs: list[tuple[int, int]] = []
    for i in np.flatnonzero(flags):
        if runs and i - runs[-1][1] <= max_gap:
            runs[-1] = (runs[-1][0], int(i) + 1)
        else:
            runs.append((int(i), int(i) + 1))
    return runs


def gaps(img: np.ndarray, words: list[Word], *, dpi: int) -> list[Gap]:
    """Regions holding ink that no recognised word covers, at least half a line high and a word's
    worth of ink. With no recognised words, any text-sized ink is one gap per band."""
    height = line_height(words) or max(8, dpi // 8)
    cells = _cells(ink_mask(img))
    cells[_covered(cells.shape, words, grow=max(2, height // 4))] = 0
    inked = cells >= 2  # a cell with a couple of ink pixels: specks of noise stay out
    rows = inked.sum(axis=1)
    row_runs = _runs(rows >= 2, max_gap=max(1, height // (3 * CELL)))
    found = []
    for top, bottom in row_runs:
        band = inked[top:bottom]
        cols = np.flatnonzero(band.any(axis=0))
        gap = Gap(top * CELL, bottom * CELL, int(cols[0]) * CELL, (int(cols[-1]) + 1) * CELL)
        if (
            _line_like(gap, height) and band.sum() * CELL * CELL >= 0.6 * height * height
        ):  # a word's ink
            found.append(gap)
    return found


def _line_like(gap: Gap, height: int) -> bool:
    """One or two text lines: half a line to 2.5 lines high, at least 2.5 times as wide as high.
    Taller ink (an illustration, a decorated initial, a logo) and rules are no missing text."""
    tall, wide = gap.bottom - gap.top, gap.right - gap.left
    return height // 2 <= tall <= 2.5 * height and wide >= 2.5 * tall


def crop(img: np.ndarray, gap: Gap, pad: int) -> tuple[np.ndarray, tuple[int, int]]:
    """The gap with a margin of paper around it (clipped to the image), and the crop's top-left
    corner in the image (where a reading of the crop goes back to)."""
    top, left = max(0, gap.top - pad), max(0, gap.left - pad)
    return img[top : gap.bottom + pad, left : gap.right + pad], (top, left)


def _lines(words: list[Word]) -> list[list]:
    """[(block, par), centre y, text] per recognised line, in Tesseract's order."""
    merged: list[list] = []
    last = None
    for w in words:
        ident = (w.block, w.par, w.line)
        if ident == last:
            merged[-1][2] += " " + w.text
        else:
            merged.append([(w.block, w.par), w.top + w.height // 2, w.text])
        last = ident
    return merged


def text_with_lines(words: list[Word], extra: list[tuple[Gap, str]]) -> str:
    """The page's text rebuilt from the TSV (lines in Tesseract's order, a blank line between
    paragraphs), each re-read line inserted before the first recognised line below it."""
    merged = _lines(words)
    for gap, text in sorted(extra, key=lambda item: item[0].top):
        centre = (gap.top + gap.bottom) // 2
        at = next((i for i, line in enumerate(merged) if line[1] > centre), len(merged))
        key = merged[at - 1][0] if at else (merged[0][0] if merged else (0, 0))
        merged.insert(at, [key, centre, text])
    out: list[str] = []
    for i, (key, _, text) in enumerate(merged):
        if i and merged[i - 1][0] != key:
            out.append("")
        out.append(text)
    return "\n".join(out) + ("\n" if out else "")
