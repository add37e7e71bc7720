"""Benchmark inputs, generated at bench time from corpus pages into a temp dir (never committed).

    digital_pdf(corpus, n, out)   n born-digital pages, cycling through every labelled text page of
                                  the corpus (Hebrew, Arabic, English, mixed) with `insert_pdf`; the
                                  pages of one corpus file share its fonts (`fonts_per_page`: a copy
                                  a page, as pages merged from separate files)
    one_page_pdfs(corpus, n, dir) n one-page documents, each a different corpus page (the same cycle)
    scanned_pdf(corpus, n, out)   n image-only pages (he/ar/en text pages rendered at 200 DPI, gray)
    scanned_pngs(pdf, dpi, dir)   the limit's input: every page of a scan pre-rendered to PNG

Which pages are "born-digital text" comes from the corpus labels (LABELS.json: page kind "T", no
expected error, a text layer that is not labelled garbage).
"""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf

TEXT_LAYERS = ("good", "needs_normalization", "reversed", "partly_reversed", "bidi_scrambled")
SCAN_SCRIPTS = ("he", "ar", "en")


def text_pages(corpus: Path, scripts: tuple[str, ...] | None = None) -> list[tuple[Path, int]]:
    """(file, 0-based page) of every labelled born-digital text page, interleaved across files."""
    labels = json.loads((corpus / "LABELS.json").read_text(encoding="utf-8"))
    per_file: list[list[tuple[Path, int]]] = []
    for name, label in sorted(labels.items()):
        if label.get("expect_error") or label.get("text_layer") not in TEXT_LAYERS:
            continue
        if scripts and label.get("script") not in scripts:
            continue
        kinds = label.get("pages") or ""
        per_file.append([(corpus / name, i) for i, k in enumerate(kinds) if k == "T"])
    mixed: list[tuple[Path, int]] = []
    for i in range(max((len(f) for f in per_file), default=0)):  # round robin: scripts mixed
        mixed += [f[i] for f in per_file if i < len(f)]
    return mixed


def digital_pdf(corpus: Path, n: int, out: Path, fonts_per_page: bool = False) -> Path:
    """n pages cycling through the corpus's text pages. The pages taken from one corpus file share
    its font objects, as the pages of one long document do (MuPDF loads a font once per document
    and process); with `fonts_per_page` every page gets its own copy of its fonts, as pages merged
    from separate files can (every page then pays MuPDF's font loading, ~2.4 ms here)."""
    pages = text_pages(corpus)
    sources: dict[Path, pymupdf.Document] = {}
    doc = pymupdf.open()
    try:
        for i in range(n):
            path, number = pages[i % len(pages)]
            src = sources.get(path)
            if src is None:
                src = sources[path] = pymupdf.open(path)
            # final=0 keeps the source's graft map for its next page: objects already copied are
            # shared; PyMuPDF's default (final=1) drops it, and every page then copies its fonts
            doc.insert_pdf(src, from_page=number, to_page=number, final=int(fonts_per_page))
        doc.save(out, garbage=1, deflate=True)
    finally:
        doc.close()
        for src in sources.values():
            src.close()
    return out


def one_page_pdfs(corpus: Path, n: int, folder: Path) -> list[Path]:
    """n distinct one-page files (a serial number in the metadata keeps every job id distinct)."""
    folder.mkdir(parents=True, exist_ok=True)
    pages = text_pages(corpus)
    files = []
    for i in range(n):
        path, number = pages[i % len(pages)]
        with pymupdf.open(path) as src, pymupdf.open() as doc:
            doc.insert_pdf(src, from_page=number, to_page=number)
            doc.set_metadata({"title": f"bench page {i}"})
            target = folder / f"doc{i:04d}.pdf"
            doc.save(target, garbage=1, deflate=True)
        files.append(target)
    return files


def _fullest(pages: list[tuple[Path, int]], keep: int = 6) -> list[tuple[Path, int]]:
    """The pages holding the most text (a scan of a one-line page measures nothing)."""

    def size(item: tuple[Path, int]) -> int:
        with pymupdf.open(item[0]) as doc:
            return len(doc[item[1]].get_text().split())

    return sorted(pages, key=size, reverse=True)[:keep]


def scanned_pdf(corpus: Path, n: int, out: Path, dpi: int = 200) -> Path:
    """Image-only pages: the fullest corpus text pages of each script (he, ar, en, in turn)
    rendered to gray images, no text layer."""
    by_script = [_fullest(text_pages(corpus, (s,))) for s in SCAN_SCRIPTS]
    doc = pymupdf.open()
    try:
        for i in range(n):
            choices = by_script[i % len(by_script)]
            path, number = choices[(i // len(by_script)) % len(choices)]
            with pymupdf.open(path) as src:
                page = src[number]
                pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False)
                target = doc.new_page(width=page.rect.width, height=page.rect.height)
                target.insert_image(target.rect, stream=pix.tobytes("png"))
        doc.save(out, garbage=1, deflate=True)
    finally:
        doc.close()
    return out


def scanned_pngs(pdf: Path, dpi: int, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    with pymupdf.open(pdf) as doc:
        for i, page in enumerate(doc):
            target = folder / f"p{i:04d}.png"
            page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False).save(target)
            files.append(target)
    return files
