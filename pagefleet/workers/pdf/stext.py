"""One walk over MuPDF's structured text page (runs in the sandbox child, with `pagefleet.workers.pdf.mupdf`).

Rung 1 makes one text page per page, with `TEXT_PRESERVE_IMAGES`: besides the text it then holds a
block for every image the page draws (image XObjects and inline images alike), whose box MuPDF
clips to the clip path (`TEXT_MEDIABOX_CLIP`): the part a reader sees. `walk` reads those boxes
and, for a page read from its plain text, proves that text exact, in one pass over the blocks.
`get_image_info()` would build a second text page for the boxes (of whole images, unclipped), and
finding inline images took another pass over the decompressed content stream.
"""

from __future__ import annotations

import pymupdf

Box = tuple[float, float, float, float]
_TEXT = pymupdf.mupdf.FZ_STEXT_BLOCK_TEXT
_IMAGE = pymupdf.mupdf.FZ_STEXT_BLOCK_IMAGE


def walk(textpage: pymupdf.TextPage, count_lines: bool) -> tuple[list[Box], int | None]:
    """(boxes of the images drawn, text lines). The line count, asked for with `count_lines`, is
    None where a line ends in a newline or NUL character: PyMuPDF's plain text writes no line end
    after those, so that text is not the page's lines joined by newlines."""
    boxes: list[Box] = []
    lines: int | None = 0 if count_lines else None
    block = (
        textpage.this.m_internal.first_block
    )  # MuPDF's structs, followed by their `next` pointers
    while block:
        if block.type == _IMAGE:
            r = block.bbox
            boxes.append((r.x0, r.y0, r.x1, r.y1))
        elif block.type == _TEXT and lines is not None:
            lines = _count_lines(pymupdf.mupdf.FzStextBlock(block), lines)
        block = block.next
    return boxes, lines


def _count_lines(block: pymupdf.mupdf.FzStextBlock, lines: int) -> int | None:
    """`lines` plus the block's lines, None if one ends in a newline or NUL character. Blocks and
    lines are MuPDF's structs, alive while the text page is, followed by their `next` pointers:
    PyMuPDF's Python iterators cost a wrapper and three calls an item."""
    first, end = block.begin(), block.end()
    if first == end:
        return lines
    line = first.__ref__().m_internal  # read while `first` lives: __ref__ points into it
    while line:
        last = line.last_char
        if not last or last.c in (0, 10):
            return None
        lines += 1
        line = line.next
    return lines


def image_boxes(page: pymupdf.Page, flags: int) -> list[Box]:
    """The visible boxes of the images `page` draws, from a text page of its own."""
    return walk(page.get_textpage(flags=flags | pymupdf.TEXT_PRESERVE_IMAGES), False)[0]
