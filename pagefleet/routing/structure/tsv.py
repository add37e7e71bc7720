"""Tesseract's TSV words → paragraphs with boxes (its own layout analysis: block, paragraph).

`tsv_paragraphs` groups words by (block, paragraph) in Tesseract's reading order; each paragraph
keeps its box (image pixels × `scale`, e.g. 72 / DPI for PDF points) and its first and last words,
which `pagefleet.workers.ladder.ocr_structure` finds in the page text to give the block its range.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

TsvWord = tuple[int, int, int, int, int, int, str]  # block, par, left, top, width, height, text


def tsv_paragraphs(words: Iterable[TsvWord], scale: float = 1.0) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    key = None
    for block, par, left, top, width, height, text in words:
        box = [left * scale, top * scale, (left + width) * scale, (top + height) * scale]
        if out and key == (block, par):
            last = out[-1]
            last["bbox"] = [
                min(last["bbox"][0], box[0]),
                min(last["bbox"][1], box[1]),
                max(last["bbox"][2], box[2]),
                max(last["bbox"][3], box[3]),
            ]
            last["last"] = text
            last["words"] += 1
        else:
            out.append({"bbox": box, "first": text, "last": text, "words": 1})
            key = (block, par)
    for p in out:
        p["bbox"] = [round(v, 2) for v in p["bbox"]]
    return out
