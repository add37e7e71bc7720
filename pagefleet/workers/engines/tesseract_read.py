"""What the Tesseract engine does around its one recognition pass (the levers measured by
`make eval-ocr`, bench/eval_ocr.py):

    page image ─► deskew, upscale below min_dpi (scan_prep) ─► Tesseract (txt + tsv)
    ─► a Latin reading by a list with Hebrew/Arabic that holds a few RTL letters (specks): each
       such line re-read by the list's Latin languages, kept where it keeps the line's other words
    ─► coverage: ink no word box covers ─► re-read each gap (crop, scaled to a readable line
       height, psm 7 for a line / 6 for a block) ─► a confident reading goes in at its place,
       an unreadable gap counts as a missing line (the gate refuses the page: `text_missing`)
    ─► optionally: lines under `reread_below` confidence re-read at a larger scale, the more
       confident reading kept
    ─► a reading with Hebrew/Arabic in its languages that found only left-to-right text: its
       lines in left-to-right column order (Tesseract ordered the columns right to left)

`recognise` is passed in (tesseract.py owns Tesseract), so this module has no I/O of its own: the
page and its crops go to Tesseract as arrays (the CLI fallback writes them to the caller's
temporary folder).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

import numpy as np

from pagefleet.routing.charclass import has_rtl_letter
from pagefleet.routing.scripts import classify_text_layer
from pagefleet.routing.structure.reading_order import reading_order
from pagefleet.routing.structure.tsv import tsv_paragraphs
from pagefleet.workers.engines import coverage
from pagefleet.workers.engines.base import PageImage
from pagefleet.workers.engines.coverage import Gap, Word
from pagefleet.workers.engines.scan_prep import load_gray, prepare, upscale

Recognise = Callable[
    ..., tuple[str, str]
]  # tesseract.recognise(image, langs, psm, dpi, tmp, name, *, invert)
TARGET_LINE_PX = 48  # a re-read crop is scaled until its text line is about this tall
RTL_LANGUAGES = {
    "heb": "he",
    "ara": "ar",
}  # Tesseract's names of the RTL languages the fleet reads -> routed script
_RTL_LANGS = frozenset(RTL_LANGUAGES)
_MAX_STRAY_LINES = 8  # more lines with RTL letters on a Latin reading: a mixed page, not specks
_KEPT_SHARE = 0.75  # of a stray line's other words, found again in order by its Latin re-read


@dataclass(frozen=True)
class ReadPlan:
    """`Settings.tesseract_read` (where each field is described) with an engine's options on top."""

    deskew: bool
    min_dpi: int
    coverage: bool
    reread_min_conf: float
    reread_below: float
    detect_inverted: bool = False

    @property
    def active(self) -> bool:
        return self.deskew or bool(self.min_dpi) or self.coverage or bool(self.reread_below)

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> ReadPlan:
        from pagefleet.workers.settings import get_settings

        plan = get_settings().ocr.tesseract_read.model_dump()
        plan.update({k: options[k] for k in cls.__dataclass_fields__ if k in options})
        return cls(**plan)


def _readable(words: list[Word]) -> bool:
    """Two letters at least among the words read."""
    return sum(ch.isalpha() for w in words for ch in w.text) >= 2


def _mean_conf(words: list[Word]) -> float | None:
    confs = [w.conf for w in words if w.conf >= 0]
    return round(sum(confs) / len(confs), 2) if confs else None


def reread(
    img: np.ndarray,
    box: Gap,
    line_px: int,
    langs: str,
    dpi: int,
    tmp: Path,
    name: str,
    recognise: Recognise,
) -> tuple[str, list[Word]]:
    """Read one region alone, scaled so its text is about TARGET_LINE_PX tall; its words' boxes in
    the page's pixels."""
    part, (top, left) = coverage.crop(img, box, pad=max(4, line_px // 2))
    scale = min(3.0, max(1.0, TARGET_LINE_PX / max(line_px, 1)))
    if scale > 1.05:
        part = upscale(part, scale)
    else:
        scale = 1.0
    psm = 7 if (box.bottom - box.top) < 1.8 * max(line_px, 1) else 6
    _, tsv = recognise(part, langs, psm, round(dpi * scale), tmp, name)
    words = coverage.parse_tsv(tsv)
    if not words and psm == 7:  # Tesseract 5.5's line mode finds no line on some crops 5.3 read;
        _, tsv = recognise(part, langs, 13, round(dpi * scale), tmp, name)  # raw line mode does
        words = coverage.parse_tsv(tsv)
    words = [
        Word(
            w.block,
            w.par,
            w.line,
            left + round(w.left / scale),
            top + round(w.top / scale),
            round(w.width / scale),
            round(w.height / scale),
            w.conf,
            w.text,
        )
        for w in words
    ]
    return " ".join(w.text for w in words), words


def fill_gaps(
    img: np.ndarray,
    words: list[Word],
    langs: str,
    dpi: int,
    plan: ReadPlan,
    tmp: Path,
    recognise: Recognise,
) -> tuple[list[tuple[Gap, str]], list[Word], int]:
    """Re-read every gap: (gap, text) kept, the words read there, and how many gaps stayed unread."""
    found = coverage.gaps(img, words, dpi=dpi)
    line_px = coverage.line_height(words) or max(8, dpi // 8)
    kept: list[tuple[Gap, str]] = []
    extra_words: list[Word] = []
    missing = 0
    for i, gap in enumerate(found[:20]):
        text, got = reread(img, gap, line_px, langs, dpi, tmp, f"gap{i}", recognise)
        conf = _mean_conf(got)
        if _readable(got) and conf is not None and conf >= plan.reread_min_conf:
            kept.append((gap, text))
            extra_words += got
        else:
            missing += 1
    return kept, extra_words, missing + max(0, len(found) - 20)


def improve_lines(
    img: np.ndarray,
    words: list[Word],
    langs: str,
    dpi: int,
    plan: ReadPlan,
    tmp: Path,
    recognise: Recognise,
) -> tuple[list[Word], int]:
    """Lines under `plan.reread_below` read again alone at a larger scale; the more confident reading
    replaces the line's words. Returns the words and how many lines were replaced."""
    out: list[Word] = []
    replaced = 0
    for n, line in enumerate(_group_lines(words)):
        conf = _mean_conf(line) or 0.0
        if conf < plan.reread_below and n < 40:
            got, new = _reread_line(img, line, langs, dpi, tmp, f"line{n}", recognise)
            if new > conf + 5 and _readable(got):
                out += got
                replaced += 1
                continue
        out += line
    return out, replaced


def latin_lines(
    img: np.ndarray,
    words: list[Word],
    langs: str,
    dpi: int,
    plan: ReadPlan,
    tmp: Path,
    recognise: Recognise,
) -> tuple[list[Word], int] | None:
    """A reading with Hebrew or Arabic in its languages that is Latin as a whole (the page routes as
    Latin) yet holds a few RTL letters: specks, ornaments and italic letters the RTL models read as
    letters, often confidently (en_scan_huckfinn's `chapter ل`, `v1` read as `ון`). Each line
    holding one is read again alone by the list's Latin languages, and that reading replaces the
    line where it has two letters at `plan.reread_min_conf` and keeps the line's other words: what
    the ladder's second pass, the whole page again in `eng` (3 s of a 4 s English page), would
    have put there. Returns the words and how many lines were replaced; None when the reading is
    not such a reading, or holds more than `_MAX_STRAY_LINES` such lines (a mixed page: the
    ladder decides)."""
    latin = "+".join(lang for lang in langs.split("+") if lang not in _RTL_LANGS)
    if not latin or latin == langs:
        return None
    lines = _group_lines(words)
    stray = {n for n, line in enumerate(lines) if any(has_rtl_letter(w.text) for w in line)}
    if not stray or len(stray) > _MAX_STRAY_LINES:
        return None
    if classify_text_layer(" ".join(w.text for w in words)).script != "latin":
        return None
    out: list[Word] = []
    replaced = 0
    for n, line in enumerate(lines):
        if n in stray:
            got, conf = _reread_line(img, line, latin, dpi, tmp, f"stray{n}", recognise)
            if conf >= plan.reread_min_conf and _readable(got) and _keeps_latin_words(line, got):
                out += got
                replaced += 1
                continue
        out += line
    return out, replaced


def _keeps_latin_words(line: list[Word], got: list[Word]) -> bool:
    """The new reading holds most of the line's words without RTL letters, in order (at least
    `_KEPT_SHARE` of them: a neighbour of a speck may read differently, `.` as `o.x`); a decorated
    heading's crop read as `LE cnaples a = =` for `chapter ل` does not, and the whole page's
    reading decides."""
    kept = [w.text for w in line if not has_rtl_letter(w.text)]
    if not kept:
        return False
    same = SequenceMatcher(None, kept, [w.text for w in got], autojunk=False).get_matching_blocks()
    return sum(block.size for block in same) >= _KEPT_SHARE * len(kept)


def _reread_line(
    img: np.ndarray,
    line: list[Word],
    langs: str,
    dpi: int,
    tmp: Path,
    name: str,
    recognise: Recognise,
) -> tuple[list[Word], float]:
    """The line read again alone, in its place (the first word's block, paragraph and line), with
    that reading's mean confidence (0 when it found no word)."""
    box = Gap(
        min(w.top for w in line),
        max(w.top + w.height for w in line),
        min(w.left for w in line),
        max(w.left + w.width for w in line),
    )
    _, got = reread(img, box, coverage.line_height(line), langs, dpi, tmp, name, recognise)
    first = line[0]
    placed = [
        Word(first.block, first.par, first.line, w.left, w.top, w.width, w.height, w.conf, w.text)
        for w in got
    ]
    return placed, _mean_conf(got) or 0.0


def _group_lines(words: list[Word]) -> list[list[Word]]:
    lines: list[list[Word]] = []
    for w in words:
        if lines and (lines[-1][0].block, lines[-1][0].par, lines[-1][0].line) == (
            w.block,
            w.par,
            w.line,
        ):
            lines[-1].append(w)
        else:
            lines.append([w])
    return lines


def latin_order(words: list[Word], langs: str) -> list[Word] | None:
    """A reading with an RTL language in the list that found no RTL letter is a left-to-right
    page, but Tesseract laid its columns out right to left (a two-column English paper read with
    heb+ara+eng: every word right, CER 0.69): its lines in left-to-right XY-cut order (CER 0.008;
    with paragraphs as the units 0.33, blocks 0.07), or None when the order stands."""
    if not _RTL_LANGS & set(langs.split("+")) or any(has_rtl_letter(w.text) for w in words):
        return None
    lines: dict[tuple[int, int, int], list[Word]] = {}
    for w in words:
        lines.setdefault((w.block, w.par, w.line), []).append(w)
    groups = list(lines.values())
    boxes = []
    for g in groups:  # each line's middle half: ascenders and a little skew make neighbours overlap
        top, bottom = min(w.top for w in g), max(w.top + w.height for w in g)
        quarter = (bottom - top) / 4
        boxes.append(
            (
                min(w.left for w in g),
                top + quarter,
                max(w.left + w.width for w in g),
                bottom - quarter,
            )
        )
    order = reading_order(boxes, rtl=False)
    if order == sorted(order):
        return None
    return [w for i in order for w in groups[i]]


def read_prepared(
    image: PageImage, langs: str, psm: int, plan: ReadPlan, tmp: Path, recognise: Recognise
) -> tuple[str, float | None, dict[str, Any]]:
    """The page read with the plan's levers: text, mean word confidence, and what was done."""
    prep = prepare(load_gray(image.path), image.dpi, deskew=plan.deskew, min_dpi=plan.min_dpi)
    text, tsv = recognise(
        prep.image, langs, psm, prep.dpi, tmp, "page", invert=plan.detect_inverted
    )
    words = coverage.parse_tsv(tsv)
    details: dict[str, Any] = {"skew": prep.skew, "scale": round(prep.scale, 3)}
    cleaned = latin_lines(prep.image, words, langs, prep.dpi, plan, tmp, recognise)
    if cleaned is not None:
        words, details["stray_lines_reread"] = cleaned
    rebuilt = bool(cleaned and cleaned[1])
    reordered = latin_order(words, langs)  # after the specks went: their letters kept the RTL order
    if reordered is not None:
        words = reordered
        details["columns_reordered"] = True
    rebuilt = rebuilt or reordered is not None
    if plan.reread_below and words:
        words, replaced = improve_lines(prep.image, words, langs, prep.dpi, plan, tmp, recognise)
        details["lines_reread"] = replaced
        rebuilt = rebuilt or replaced > 0
    extra: list[tuple[Gap, str]] = []
    if plan.coverage:
        extra, extra_words, missing = fill_gaps(
            prep.image, words, langs, prep.dpi, plan, tmp, recognise
        )
        details.update(gaps_reread=len(extra), missing_lines=missing)
        words_all = words + extra_words
    else:
        words_all = words
    if rebuilt or extra:
        text = coverage.text_with_lines(words, extra)
    details["paragraphs"] = tsv_paragraphs(  # issue 13: paragraph blocks with boxes (PDF points)
        [(w.block, w.par, w.left, w.top, w.width, w.height, w.text) for w in words],
        72.0 / max(prep.dpi, 1),
    )
    return text, _mean_conf(words_all), details
