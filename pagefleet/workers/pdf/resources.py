"""The images a page's resources list, without PyMuPDF's per-image description (issue 15).

`Page.get_images(full=False)` describes every image it finds (its mask, filter, colour spaces,
size and name, each name escaped into a tuple); rung 1 only needs how many entries the list holds
and which image objects they are (`mupdf._image_bytes` sums their streams' lengths). On the
bench's pages that description was ~0.2 ms a page, 4-6 ms on a page listing many images.

    listed_images(page) -> [xref, ...]   the xrefs of `page.get_images(full=False)`, in its order
    stream_lengths(doc, xrefs) -> int    the /Length of those objects whose /Length is an integer

The walk is PyMuPDF's own (`JM_scan_resources` / `JM_gather_images`), step for step: the page's
inherited /Resources, each /XObject entry that is a dictionary of /Subtype /Image, then the
/Resources of every XObject entry, once each (a form met a second time ends that level's descent,
as there); a resource dictionary already being walked (a cycle) is not walked again.
tests/unit/test_listed_images.py compares both on every page of the fixtures, the corpus and
generated pages of forms nested and shared.
Runs in the sandbox child, with `pagefleet.workers.pdf.mupdf`.
"""

from __future__ import annotations

from typing import Any

import pymupdf

_mu = pymupdf.mupdf
# the names as MuPDF's pdf_obj pointers: the walk calls MuPDF's functions through the bindings' ll_
# layer (borrowed pointers, as JM_scan_resources holds them), ~0.15 us a call instead of ~1.3 us
# for the wrapped objects
_RESOURCES = _mu.PDF_ENUM_NAME_Resources.m_internal
_XOBJECT = _mu.PDF_ENUM_NAME_XObject.m_internal
_SUBTYPE = _mu.PDF_ENUM_NAME_Subtype.m_internal
_IMAGE = _mu.PDF_ENUM_NAME_Image.m_internal


def listed_images(page: pymupdf.Page) -> list[int]:
    if not page.parent.is_pdf:
        return []  # as get_images: a document of another format lists none
    pdf = pymupdf._as_pdf_document(page.parent)
    pageref = _mu.ll_pdf_lookup_page_obj(pdf.m_internal, page.number)
    resources = _mu.ll_pdf_dict_get_inheritable(pageref, _RESOURCES)
    found: list[int] = []
    if resources is not None:
        _scan(resources, found, [])
    return found


def _scan(resources: Any, found: list[int], tracer: list[int]) -> None:
    """`resources` and the forms it lists, their images' xrefs appended to `found` (pdf_obj
    pointers, None for NULL)."""
    if _mu.ll_pdf_mark_obj(resources):
        return  # a cycle: this dictionary is being walked already
    try:
        xobjects = _mu.ll_pdf_dict_get(resources, _XOBJECT)
        entries = [
            _mu.ll_pdf_dict_get_val(xobjects, i) for i in range(_mu.ll_pdf_dict_len(xobjects))
        ]
        for entry in entries:
            if _mu.ll_pdf_is_dict(entry) and _mu.ll_pdf_name_eq(
                _mu.ll_pdf_dict_get(entry, _SUBTYPE), _IMAGE
            ):
                found.append(_mu.ll_pdf_to_num(entry))
        for entry in entries:
            inner = _mu.ll_pdf_dict_get(entry, _RESOURCES)
            if inner is None:
                continue
            xref = _mu.ll_pdf_to_num(entry) if _mu.ll_pdf_is_stream(entry) else 0
            if xref in tracer:
                return  # PyMuPDF stops this level's descent at a form it walked before
            tracer.append(xref)
            _scan(inner, found, tracer)
    finally:
        _mu.ll_pdf_unmark_obj(resources)


def stream_lengths(doc: pymupdf.Document, xrefs: list[int]) -> int:
    """The sum of `int(value)` over the distinct `xrefs` whose `doc.xref_get_key(xref, "Length")`
    is ("int", value), its steps taken here: xref_get_key makes a PdfDocument for each call."""
    total = 0
    if not xrefs:
        return total
    pdf = pymupdf._as_pdf_document(doc)
    for xref in set(xrefs):
        if not 1 <= xref <= _mu.ll_pdf_xref_len(pdf.m_internal) - 1:  # xref_get_key's own check
            raise ValueError(pymupdf.MSG_BAD_XREF)
        obj = _mu.ll_pdf_load_object(pdf.m_internal, xref)  # a reference of its own, dropped below
        if obj is None:
            continue
        try:
            length = _mu.ll_pdf_dict_getp(obj, "Length")
            # an indirect /Length is its "xref" kind, not "int"
            if (
                length is not None
                and not _mu.ll_pdf_is_indirect(length)
                and _mu.ll_pdf_is_int(length)
            ):
                total += _mu.ll_pdf_to_int(length)
        finally:
            _mu.ll_pdf_drop_obj(obj)
    return total
