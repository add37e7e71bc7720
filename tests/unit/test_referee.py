"""Rows that read both ways (`Hello שלום` drawn as `Hello םולש` on a page of both scripts): Poppler's
words decide, and where they cannot, the page is not accepted as is (`line_order_unresolved`)."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from pagefleet.routing.evidence import GlyphFacts
from pagefleet.routing.quality import GateInput, assess
from pagefleet.workers.ladder import referee
from pagefleet.workers.pdf.mupdf import extract_range

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


def _page_with(tmp_path: Path, lines: list[str]) -> Path:
    """Centred lines drawn as HTML with their own direction: neither margin says which way a row
    reads, so only its letters and punctuation can."""
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=200)
    body = "".join(
        f"<p dir='{d}' style='font-size:12px;margin:0 0 8px 0;text-align:center'>{t}</p>"
        for d, t in lines
    )
    page.insert_htmlbox(pymupdf.Rect(20, 20, 380, 180), body)
    out = tmp_path / "both_ways.pdf"
    doc.save(out)
    return out


def test_a_row_flush_with_one_margin_reads_that_way(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=200)
    page.insert_htmlbox(
        pymupdf.Rect(20, 20, 380, 180),
        "<p dir='rtl' style='font-size:12px'>שלום Hello</p>"
        "<p dir='ltr' style='font-size:12px'>Hello עולם</p>",
    )
    doc.save(tmp_path / "flush.pdf")
    read = extract_range(str(tmp_path / "flush.pdf"), 1, 1)["pages"][0]
    assert read["text"].split("\n") == ["שלום Hello", "Hello עולם"] and not read.get(
        "unresolved_rows"
    )


def test_a_row_that_reads_both_ways_carries_its_other_reading(tmp_path: Path) -> None:
    pdf = _page_with(tmp_path, [("rtl", "שלום Hello"), ("ltr", "Hello עולם")])
    page = extract_range(str(pdf), 1, 1)["pages"][0]
    rows = page.get("unresolved_rows") or []
    assert rows, page["text"]
    for start, end, other, box in rows:
        assert sorted(page["text"][start:end]) == sorted(other) and page["text"][start:end] != other
        assert len(box) == 4


def test_poppler_decides_or_the_gate_refuses(tmp_path: Path) -> None:
    pdf = _page_with(tmp_path, [("rtl", "שלום Hello"), ("ltr", "Hello עולם")])
    page = extract_range(str(pdf), 1, 1)["pages"][0]
    settled = referee.settle(page, str(pdf))
    assert settled["unresolved_rows"] == [] and len(settled["text"]) == len(page["text"])
    verdict = assess(
        GateInput(text=settled["text"], origin="text_layer", glyphs=GlyphFacts.from_layer(settled))
    )
    assert ("line_order_unresolved" in verdict.reasons) == bool(settled["line_order_unresolved"])
    # no referee at all: never accepted as is
    alone = referee.settle(page, "")
    assert alone["line_order_unresolved"] == len(page["unresolved_rows"])
    assert (
        "line_order_unresolved"
        in assess(
            GateInput(text=alone["text"], origin="text_layer", glyphs=GlyphFacts.from_layer(alone))
        ).reasons
    )


def test_a_clear_answer_picks_the_reading_poppler_gives() -> None:
    assert referee._closer("שלום Hello", "Hello שלום", ["Hello", "שלום"]) == "Hello שלום"
    assert referee._closer("שלום Hello", "Hello שלום", ["שלום", "Hello"]) == "שלום Hello"
    assert referee._closer("שלום Hello", "Hello שלום", []) is None
