"""The shape index: English words rendered in an Arial-metric font at 10 pt, by box shape.

PyMuPDF's base-14 Helvetica has Arial's metrics. A word's width is its advance
(`pymupdf.get_text_length`); its height is its ink height, measured by rendering every letter once
on a scratch page and reading the glyph boxes back (`TEXT_ACCURATE_BBOXES`): ``day`` is taller
than ``eat``, so a Hebrew ``ולך`` (lamed ascender, final kaf descender) draws a word with an
ascender and a descender. Bold and bold-oblique have their own widths, so each style key
(`pagefleet.routing.wse.style_key`) gets its own index; oblique shares the upright metrics.

The word list is `english-words` (web2, letters only, lower case), sampled deterministically:
every length from 2 to 14 letters, evenly through the alphabet, `size` words in all.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import pymupdf
from scipy.spatial import cKDTree

SIZE = 10.0
HEIGHT_WEIGHT = 0.5  # a width error costs twice a height error: width decides the layout
DEFAULT_WORDS = 6000
_METRIC_FONT = {"helv": "helv", "heit": "helv", "hebo": "hebo", "hebi": "hebo"}


@dataclass(frozen=True)
class Shape:
    width: float
    height: float


@lru_cache(maxsize=1)
def word_list(size: int = DEFAULT_WORDS) -> tuple[str, ...]:
    """`size` English words, the same on every machine: an even sample of web2 per length (2–14
    letters) in proportion to how many words each length has. No single letters: a parser's
    stray letter must not decode to a word."""
    from english_words import get_english_words_set

    words = sorted(
        w for w in get_english_words_set(["web2"], alpha=True, lower=True) if 2 <= len(w) <= 14
    )
    by_length: dict[int, list[str]] = {}
    for w in words:
        by_length.setdefault(len(w), []).append(w)
    picked: list[str] = []
    for length in sorted(by_length):
        group = by_length[length]
        take = min(len(group), max(1, round(size * len(group) / len(words))))
        step = len(group) / take
        picked += [group[int(i * step)] for i in range(take)]
    return tuple(picked[:size])


@lru_cache(maxsize=4)
def letter_ink(fontname: str) -> dict[str, tuple[float, float]]:
    """Per letter at 10 pt: (ink above the baseline, ink below it), read back from a rendered page."""
    doc = pymupdf.open()
    try:
        page = doc.new_page(width=400, height=100)
        letters = "".join(chr(c) for c in range(ord("a"), ord("z") + 1))
        page.insert_text((10, 50), letters, fontsize=SIZE, fontname=fontname)
        raw = page.get_text("rawdict", flags=pymupdf.TEXT_ACCURATE_BBOXES)
        ink = {}
        for block in raw["blocks"]:
            for line in block.get("lines", []):
                for span in line["spans"]:
                    for c in span["chars"]:
                        baseline = c["origin"][1]
                        ink[c["c"]] = (baseline - c["bbox"][1], c["bbox"][3] - baseline)
        return ink
    finally:
        doc.close()


def measure(word: str, fontname: str = "helv") -> Shape:
    """Box of `word` drawn in `fontname` at 10 pt: advance width, ink height."""
    metric = _METRIC_FONT.get(fontname, "helv")
    ink = letter_ink(metric)
    above = max((ink.get(c, (7.0, 0.0))[0] for c in word), default=0.0)
    below = max((ink.get(c, (0.0, 0.0))[1] for c in word), default=0.0)
    return Shape(pymupdf.get_text_length(word, fontname=metric, fontsize=SIZE), above + below)


@dataclass
class ShapeIndex:
    """Nearest English words by (width, height) at 10 pt, for one style key."""

    fontname: str
    words: tuple[str, ...]
    shapes: np.ndarray = field(repr=False)
    tree: cKDTree = field(repr=False)

    @classmethod
    def build(cls, words: Iterable[str], fontname: str = "helv") -> ShapeIndex:
        words = tuple(dict.fromkeys(words))
        shapes = np.array(
            [[s.width, s.height] for s in (measure(w, fontname) for w in words)], dtype=float
        )
        return cls(fontname, words, shapes, cKDTree(shapes * [1.0, HEIGHT_WEIGHT]))

    def nearest(
        self,
        shape: Shape,
        taken: set[str] | frozenset[str] = frozenset(),
        slack: float | None = None,
    ) -> str:
        """The word whose box is closest to `shape` and not in `taken`; with `slack`, preferably
        one no wider than ``shape.width + slack`` (a wider token could touch its neighbour and be
        read as one word with it). The closest of all when every word is taken (the caller
        counts that as a collision)."""
        point = [shape.width, shape.height * HEIGHT_WEIGHT]
        k = 32
        while True:
            k = min(k, len(self.words))
            _, idx = self.tree.query(point, k=k)
            free = [int(i) for i in np.atleast_1d(idx) if self.words[int(i)] not in taken]
            narrow = [i for i in free if slack is None or self.shapes[i][0] <= shape.width + slack]
            if narrow or (free and k == len(self.words)):
                return self.words[(narrow or free)[0]]
            if k == len(self.words):
                return self.words[int(np.atleast_1d(idx)[0])]
            k *= 8


@lru_cache(maxsize=8)
def shape_index(fontname: str = "helv", size: int = DEFAULT_WORDS) -> ShapeIndex:
    """The index for a style key (built once per process, ~0.1 s)."""
    return ShapeIndex.build(word_list(size), _METRIC_FONT.get(fontname, "helv"))
