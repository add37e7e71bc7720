"""PyMuPDF reading: runs inside the sandbox child only (see `pagefleet.workers.pdf.sandbox`).

`extract_range` returns, per page, the text layer built from MuPDF's raw characters together with
the evidence the quality gate needs and a plain string cannot carry: per-line glyph geometry of
RTL runs (x-order of consecutive RTL letters in extraction order), glyph counts, runs of letters
that share one glyph position (a ToUnicode map giving one glyph a whole word), and how much of the
page images cover.
"""

from __future__ import annotations

import os
from typing import Any

import pymupdf

from pagefleet.workers.pdf import fastrows, fastwalk, glyphlines, layout, stext
from pagefleet.workers.pdf.clusters import glyph_clusters
from pagefleet.workers.pdf.fastwalk import glyph_kinds
from pagefleet.workers.pdf.resources import listed_images, stream_lengths
from pagefleet.workers.pdf.runs import run_order

_TEXT_FLAGS = (
    pymupdf.TEXT_PRESERVE_LIGATURES | pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP
)


def probe(
    pdf: str, extract_upto: int = 0, max_pages: int = 0, structure: bool = False
) -> dict[str, Any]:
    """Page count, encryption, producer; with `extract_upto`, also rung 1 for every page of a
    document of at most `extract_upto` pages that passes the checks, in the same child (one process
    start per small document). A longer one is split into page ranges: the probe returns at once,
    so the range tasks start while the split task reads its own first pages."""
    doc = _open(pdf)
    meta = doc.metadata or {}
    info = {
        "needs_pass": bool(doc.needs_pass),
        "is_encrypted": bool(doc.is_encrypted),
        "encryption": meta.get("encryption"),
        "page_count": 0 if doc.needs_pass else doc.page_count,
        "producer": (meta.get("producer") or "")[:200],
    }
    if not doc.needs_pass and doc.page_count:
        doc.load_page(0)  # a recursive or broken page tree fails here, not later in a worker
    count = info["page_count"]
    if extract_upto and 0 < count <= min(extract_upto, max_pages or count):
        info["pages"] = _read(doc, 1, count, structure)
    info["repaired"] = bool(
        doc.is_repaired
    )  # after the reads: MuPDF may repair while it loads a page
    return info


def probe_many(pdf: str, docs: list[list[Any]]) -> dict[str, Any]:
    """`probe` of each [path, params] of `docs` in turn (`pdf`: the first path), one result for all:
    {"heads": [a probe, or {"failed": why}]}. The first probe that raises stops the command: that
    document and the ones after it are "failed" (not read here), and the caller probes each alone,
    so a document that breaks MuPDF ends its own command, and its child, as it would alone."""
    heads: list[dict[str, Any]] = []
    for path, params in docs:
        try:
            heads.append(probe(path, **params))
        except Exception as exc:  # noqa: BLE001 - reported, and the rest left to commands of their own
            why = f"{type(exc).__name__}: {exc}"[:300]
            heads += [{"failed": why}] + [{"failed": "not read after a failure"}] * (
                len(docs) - len(heads) - 1
            )
            break
    return {"heads": heads}


def extract_range(pdf: str, first: int, last: int, structure: bool = False) -> dict[str, Any]:
    doc = _open(pdf)
    return {"pages": _read(doc, first, min(last, doc.page_count), structure)}


def _read(doc: pymupdf.Document, first: int, last: int, structure: bool) -> list[dict[str, Any]]:
    """Rung 1 for pages first..last; with `structure`, their layout too (headings, lists, tables:
    plain JSON gathered here, in the sandbox child, from the same rawdict)."""
    kept: layout.Kept | None = {} if structure else None
    pages = [_extract_page(doc, number, kept) for number in range(first, last + 1)]
    if structure:
        layout.add_layout(doc, pages, _TEXT_FLAGS, kept)
    if (
        doc.is_repaired
    ):  # a broken file MuPDF rebuilt: a page it left empty may have lost its content
        for page in pages:
            page["repaired"] = True
    return pages


_OPEN: dict[str, tuple[tuple[int, int], pymupdf.Document]] = {}


def _open(pdf: str) -> pymupdf.Document:
    """The document, kept open for the child's next command on it (`forkserver`: a child runs every
    range of one document that reaches its worker process): MuPDF's fonts and objects loaded for
    one range serve the next. A child holds one document at a time; a changed file is reopened."""
    stat = os.stat(pdf)
    key = (stat.st_mtime_ns, stat.st_size)
    if pdf in _OPEN and _OPEN[pdf][0] == key:
        return _OPEN[pdf][1]
    forget()
    doc = pymupdf.open(pdf, filetype="pdf")
    _OPEN[pdf] = (key, doc)
    return doc


def forget() -> None:
    """Close the document kept open (the fork server after its warm-up: children start with none)."""
    for _, doc in _OPEN.values():
        doc.close()
    _OPEN.clear()


def _extract_page(
    doc: pymupdf.Document, number: int, kept: layout.Kept | None = None
) -> dict[str, Any]:
    """One page's text layer and evidence; `kept`, when given, keeps the page's `rawdict` and the
    images it draws for the structure pass (one text page per page; a second one only where the
    characters of a page that draws an image are read)."""
    page = doc.load_page(number - 1)
    # one text page for the text and the images drawn (XObjects and inline images, visible boxes)
    textpage = page.get_textpage(flags=_TEXT_FLAGS | pymupdf.TEXT_PRESERVE_IMAGES)
    raw: dict[str, Any] = {}
    rtl, plain = fastwalk.text_unless_rtl(textpage) if kept is None else (None, None)
    read = _rtl_page(page, textpage) if rtl else None
    if read is not None:
        images, evidence = read
    else:
        images, evidence, raw = _read_page(page, textpage, kept, plain)
    listed = listed_images(
        page
    )  # get_images' xrefs, from the resources: the images count and their bytes
    if kept is not None:
        kept[number] = (raw, images)
    text = evidence.pop("text")
    rect = page.rect  # a MuPDF call each time it is read
    return {
        "number": number,
        "text": text,
        **evidence,
        "images": len(listed),
        "image_coverage": _image_coverage(page, images),
        "image_bytes": _image_bytes(doc, listed),
        # vector paths tell a drawn page from a blank one (layout.add_layout counts them for tables)
        "drawings": layout.drawings(page) if not text.strip() else 0,
        "width": round(rect.width, 2),
        "height": round(rect.height, 2),
    }


def _read_page(
    page: pymupdf.Page,
    textpage: pymupdf.TextPage,
    kept: layout.Kept | None,
    plain: str | None = None,
) -> tuple[list[stext.Box], dict[str, Any], dict[str, Any]]:
    """(image boxes, text and evidence, the rawdict where it was read): a page without RTL letters
    from its plain text once `stext.walk` proves it exact; any other from its characters. `plain`:
    the page's extractText string where the C walk already gave it."""
    if kept is not None:
        plain = ""  # structure needs the characters
    elif plain is None:
        plain = _plain_text(textpage)
    kinds = glyph_kinds(plain)
    plain_ok = kept is None and "R" not in kinds and "\x00" not in plain
    images, lines = fastwalk.blocks(textpage) or stext.walk(textpage, count_lines=plain_ok)
    if plain_ok and lines == plain.count("\n"):
        return images, _plain_evidence(plain, kinds), {}
    # rawdict would carry every image's pixels: a page that draws one reads it from a text page without
    chars = page.get_textpage(flags=_TEXT_FLAGS) if images else textpage
    # structure keeps the rawdict; a page with RTL letters is read from its glyphs' rows
    if kept is None:
        evidence = (fastwalk.evidence if "R" not in kinds else fastrows.evidence)(chars)
        if evidence is not None:
            return images, evidence, {}
    evidence, raw = glyph_evidence(chars)
    return images, evidence, raw


def _plain_text(textpage: pymupdf.TextPage) -> str:
    """extractText's string, from the C walk where it can give it (`fastwalk.text`)."""
    found = fastwalk.text(textpage)
    return textpage.extractText() if found is None else found


def _rtl_page(
    page: pymupdf.Page, textpage: pymupdf.TextPage
) -> tuple[list[stext.Box], dict[str, Any]] | None:
    """`_read_page`'s answer for a page the C walk found a Hebrew or Arabic character on
    (`fastwalk.text_unless_rtl`), read from its characters without its plain text first
    (`_read_page` would drop it for the characters: ~0.4 ms a page); None for a page without an RTL
    letter, or where the C walk declines the page (`_read_page` reads it)."""
    found = fastwalk.blocks(textpage)
    if found is None:
        return None
    images = found[0]
    chars = page.get_textpage(flags=_TEXT_FLAGS) if images else textpage
    evidence = fastrows.evidence(chars) or glyph_evidence(chars)[0]
    if "R" not in glyph_kinds(evidence["text"]):
        return None  # Hebrew or Arabic marks, digits or punctuation only: read as any other page
    return images, evidence


def glyph_evidence(textpage: pymupdf.TextPage) -> tuple[dict[str, Any], dict[str, Any]]:
    """(text and evidence, rawdict) of a page read from its characters, its RTL rows rebuilt
    from the glyphs (`glyphlines`); `gap_repairs` holds the word-gap edits against that text."""
    reading = glyphlines.read_rows(textpage.extractRAWDICT())
    evidence = _geometry_evidence(reading.raw)
    if reading.rows_rebuilt:
        evidence["run_orders"] = []  # every RTL row is in its reading order already
        evidence["glyph_rows"] = True
        # per line, the direction its row was read in (1 RTL, 0 LTR, -1 a line not rebuilt)
        evidence["row_directions"] = [
            int(line["rtl"]) if line.get("rebuilt") else -1
            for block in reading.raw.get("blocks", [])
            for line in block.get("lines", [])
        ]
        evidence["gap_repairs"] = reading.gap_edits
        if reading.unresolved:
            evidence["unresolved_rows"] = reading.unresolved
    return evidence, reading.raw


def _plain_evidence(plain: str, kinds: str) -> dict[str, Any]:
    """A page without RTL letters, from its plain text (issue 15: no per-character geometry to
    read), once `stext.walk` proved that text is exactly the page's lines: no line has RTL
    geometry, clusters or run orders, and the shared-origin test (one glyph mapped to a whole word)
    is not made."""
    text = plain[:-1]  # the final newline
    return {
        "text": text,
        "line_geometry": [[0, 0]] * (text.count("\n") + 1) if text else [],
        "glyph_clusters": [],
        "run_orders": [],
        "glyphs": len(kinds) - kinds.count(" "),
        "shared_position_runs": 0,
    }


def _geometry_evidence(raw: dict[str, Any]) -> dict[str, Any]:
    """The text layer from MuPDF's raw characters with its per-line evidence: RTL x-order, glyph
    clusters and run orders of lines holding RTL letters, glyph count, shared-origin runs."""
    lines: list[str] = []
    geometry: list[list[int]] = []
    clusters: list[list[int]] = []
    run_orders: list[list[list[int]]] = []
    glyphs = shared_runs = offset = 0
    for block in raw.get("blocks", []):
        for line in block.get("lines", []):
            chars = [c for span in line["spans"] for c in span["chars"]]
            lines.append("".join([c["c"] for c in chars]))
            kinds = glyph_kinds(lines[-1])
            glyphs += len(kinds) - kinds.count(" ")
            rtl = "R" in kinds  # RTL geometry only where the line holds RTL letters
            # a row rebuilt from its glyphs is in logical order by construction: its x-order says
            # nothing of how the producer stored it (only its letters can)
            geometry.append(_rtl_order(chars, kinds) if rtl and not line.get("rebuilt") else [0, 0])
            shared_runs += _shared_position_runs(chars, kinds)
            if rtl:
                clusters += [[offset + a, offset + b] for a, b in glyph_clusters(chars, kinds)]
                order = (
                    None if line.get("rebuilt") else run_order(chars, lines[-1])
                )  # a row is in order
                if order:
                    run_orders.append([[offset + a, offset + b] for a, b in order])
            offset += len(lines[-1]) + 1
    return {
        "text": "\n".join(lines),
        "line_geometry": geometry,
        "glyph_clusters": clusters,
        "run_orders": run_orders,
        "glyphs": glyphs,
        "shared_position_runs": shared_runs,
    }


def _image_bytes(doc: pymupdf.Document, listed: list[int]) -> int:
    """The compressed size of the images the page's resources hold: how much a scan carries, so
    the slowest OCR pages can be sent out first (a dense page compresses worse than a sparse one)."""
    return stream_lengths(doc, listed)


def _image_coverage(page: pymupdf.Page, images: list[stext.Box]) -> float:
    """Share of the page that images cover (`images`: the visible boxes of those it draws)."""
    if not images:
        return 0.0
    left, top, right, bottom = page.rect
    covered = 0.0
    for x0, y0, x1, y1 in images:
        width, height = min(x1, right) - max(x0, left), min(y1, bottom) - max(y0, top)
        if width > 0 and height > 0:
            covered += width * height
    return round(min(covered / ((right - left) * (bottom - top) or 1.0), 1.0), 4)


def _rtl_order(chars: list[dict[str, Any]], kinds: str | None = None) -> list[int]:
    """[increasing, decreasing]: x-order of consecutive RTL letters (box centres) in extraction order;
    a mark keeps a run going, anything else ends it.

    Increasing x inside an RTL run means the run was stored in visual order (pdf-inspector's test).
    """
    if kinds is None:
        kinds = glyph_kinds("".join([c["c"] for c in chars]))
    # marks left out; an RTL letter's centre, None for anything that ends a run: a pair of
    # neighbours that are both letters is a pair inside one run (one pass a line, not one a run)
    centres = [
        (c["bbox"][0] + c["bbox"][2]) / 2 if kind == "R" else None
        for c, kind in zip(chars, kinds)
        if kind != "M"
    ]
    steps = [b - a for a, b in zip(centres, centres[1:]) if a is not None and b is not None]
    return [sum(1 for step in steps if step > 0.5), sum(1 for step in steps if step < -0.5)]


def _shared_position_runs(chars: list[dict[str, Any]], kinds: str) -> int:
    """Runs of >= 3 base letters drawn at one origin (rounded to 0.1 pt): one glyph mapped to a
    whole word. Three such letters lie within 0.22 pt in x, so a line whose sorted x origins are
    never that close three at a time has none (most lines: no per-character pass); origins
    further apart than 0.11 pt cannot round alike, so most characters skip the rounding."""
    xs = sorted([c["origin"][0] for c in chars])
    if all(b - a >= 0.23 for a, b in zip(xs, xs[2:])):
        return 0
    runs = count = 0
    prev: tuple[float, float] | None = None
    for i, c in enumerate(chars):
        if kinds[i] in " M":
            continue
        x, y = c["origin"]
        if (
            prev is not None
            and abs(x - prev[0]) < 0.11
            and abs(y - prev[1]) < 0.11
            and round(x, 1) == round(prev[0], 1)
            and round(y, 1) == round(prev[1], 1)
        ):
            count += 1
            if count == 3:
                runs += 1
        else:
            count = 1
        prev = (x, y)
    return runs


def _scan_dpi(p: pymupdf.Page) -> float | None:
    """A scanned page (one image covering it, no text): the image's own resolution, else None."""
    infos = p.get_image_info()
    if len(infos) != 1 or p.get_text("text").strip():
        return None
    box = pymupdf.Rect(infos[0]["bbox"])
    if box.is_empty or abs(box & p.rect) < 0.9 * abs(p.rect):
        return None
    return 72.0 * (infos[0]["width"] * infos[0]["height"] / abs(box)) ** 0.5


def render(
    pdf: str, page: int, dpi: int, png: str, max_pixels: int = 0, rotate: int = 0
) -> dict[str, Any]:
    """Render one page to a grey image file (PNG or PGM, by `png`'s suffix), turned by `rotate` degrees (Tesseract OSD's "Rotate");
    lower the resolution if it would exceed max_pixels. A scanned page below `dpi` is rendered at
    its image's own resolution (pixel for pixel: interpolating up adds nothing a reader can use;
    the OCR engine decides whether to upscale); `native_dpi` in the result says so."""
    p = _open(pdf).load_page(page - 1)
    native = _scan_dpi(p)
    zoom = (native if native and native < dpi else dpi) / 72.0
    width, height = p.rect.width * zoom, p.rect.height * zoom
    if max_pixels and width * height > max_pixels:
        zoom *= (max_pixels / (width * height)) ** 0.5
    matrix = pymupdf.Matrix(zoom, zoom).prerotate(rotate)
    pix = p.get_pixmap(matrix=matrix, colorspace=pymupdf.csGRAY, alpha=False, annots=True)
    pix.save(png)
    return {
        "png": png,
        "dpi": round(zoom * 72),
        "width": pix.width,
        "height": pix.height,
        "rotate": rotate,
        "native_dpi": round(native) if native else None,
    }
