"""The mirrored page: the source page without its text, flipped left to right, plus words drawn anew.

source page ─► copy, rotation removed ─► redact all text (images and vector graphics kept)
            ─► `show_pdf_page` into a new page of the same size, its content wrapped in
               ``q -1 0 0 1 W 0 cm … Q`` (x' = W − x: images and graphics mirrored)
            ─► each word drawn at its mirrored position in base-14 Helvetica (Arial metrics),
               its size, weight, slant and colour kept, reading left to right along the
               mirrored line direction.
"""

from __future__ import annotations

import pymupdf

from pagefleet.routing.wse import style_key
from pagefleet.workers.wse.words import PageWord

_FONTS: dict[str, pymupdf.Font] = {}
SQUEEZE_SLACK = 0.05  # ems a drawn word may overrun its place before it is squeezed


def _font(key: str) -> pymupdf.Font:
    if key not in _FONTS:
        _FONTS[key] = pymupdf.Font(key)
    return _FONTS[key]


def strip_text(page: pymupdf.Page) -> None:
    """Remove every glyph of the page's content (text only: images and line art stay)."""
    page.add_redact_annot(page.rect)
    page.apply_redactions(
        images=pymupdf.PDF_REDACT_IMAGE_NONE,
        graphics=pymupdf.PDF_REDACT_LINE_ART_NONE,
        text=pymupdf.PDF_REDACT_TEXT_REMOVE,
    )


def mirrored_background(out: pymupdf.Document, src: pymupdf.Document, pno: int) -> pymupdf.Page:
    """A new last page of `out`: page `pno` of `src` (already stripped) flipped horizontally."""
    rect = src[pno].rect
    page = out.new_page(width=rect.width, height=rect.height)
    page.show_pdf_page(page.rect, src, pno)
    page.clean_contents()
    xrefs = page.get_contents()
    body = b"".join(out.xref_stream(x) or b"" for x in xrefs)
    out.update_stream(xrefs[0], b"q -1 0 0 1 %.4f 0 cm\n" % rect.width + body + b"\nQ\n")
    for x in xrefs[1:]:
        out.update_stream(x, b"")
    return page


def _mirror(point: tuple[float, float], width: float) -> tuple[float, float]:
    return width - point[0], point[1]


def _morph(w: PageWord, text: str, font: pymupdf.Font) -> pymupdf.Matrix | None:
    """Turn +x into the mirrored reading direction (cos, −sin), and squeeze drawn text that is
    wider than the word's place (a token is chosen per distinct word: the same word at another size
    or weight may not fit) so it cannot touch its neighbour; None: nothing to do. Narrower text is
    left alone: squeezing makes extractors report a smaller font size."""
    natural = font.text_length(text, fontsize=max(w.size, 1.0))
    sx = 1.0
    if natural > w.length + SQUEEZE_SLACK * w.size and w.length > 0:
        sx = max(w.length / natural, 0.5)
    cos, sin = w.direction
    if abs(sin) < 1e-3 and cos > 0 and abs(sx - 1.0) < 0.01:
        return None
    return pymupdf.Matrix(sx, 0, 0, 1, 0, 0) * pymupdf.Matrix(
        cos, sin, -sin, cos, 0, 0
    )  # morph (a, b) → (a, -b)


def _color(value: int) -> tuple[float, float, float]:
    return ((value >> 16) & 255) / 255, ((value >> 8) & 255) / 255, (value & 255) / 255


def draw_words(page: pymupdf.Page, words: list[PageWord], drawn: list[str]) -> None:
    """Draw `drawn[i]` where `words[i]` was, mirrored: it starts at the mirror of the word's end.
    Content-stream order is the mirrored page's reading order (line by line, left to right):
    extractors build lines from stream order, and words written out of order split a line. Runs
    of words that fit as they are share one writer."""
    width = page.rect.width
    ordered = sorted(zip(words, drawn), key=lambda item: (item[0].line, width - item[0].end[0]))
    run: pymupdf.TextWriter | None = None
    run_color = 0
    for w, text in ordered:
        point = pymupdf.Point(width - w.end[0], w.end[1])
        font = _font(style_key(w.bold, w.italic))
        matrix = _morph(w, text, font)
        if run is not None and (matrix is not None or w.color != run_color):
            run.write_text(page, color=_color(run_color))
            run = None
        if matrix is None:
            if run is None:
                run, run_color = pymupdf.TextWriter(page.rect), w.color
            run.append(point, text, font=font, fontsize=max(w.size, 1.0))
            continue
        single = pymupdf.TextWriter(page.rect)
        single.append(point, text, font=font, fontsize=max(w.size, 1.0))
        single.write_text(page, color=_color(w.color), morph=(point, matrix))
    if run is not None:
        run.write_text(page, color=_color(run_color))
