"""The collector's shortcuts give what the plain ways give: a chunk's line as json.dumps writes it,
a page's document.md part as its Markdown parts joined, an edit map's verdict as verify_edits
gives it, the chunker's paragraphs as plain_blocks finds them."""

from __future__ import annotations

import json
import random

import pytest

from pagefleet.routing.edits import EditMapError, verify_edits
from pagefleet.workers.collect.assembly import chunk_line
from pagefleet.workers.collect.chunks import _paragraphs
from pagefleet.workers.ladder.structure import plain_blocks
from pagefleet.workers.model import PageRecord, Quality, RouterInfo
from pagefleet.workers.store import artifacts

EVERY = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
ODD = ['"', "\\", "\n", "\x00", "\x1f", "\x7f", "\u2028", "ש", "😀", "\ufeff", " ", "a"]


def _chunk(text: str, crumb: str) -> dict:
    return {
        "chunk_id": "ab-00000",
        "filename": 'a "b".pdf',
        "pages": [1],
        "bboxes": [{"page": 1, "bbox": [1.5, 2.0]}],
        "headings": [crumb, '"text": 0, "text_for_embedding": 0'],
        "text": text,
        "text_for_embedding": f"{crumb}\n\n{text}" if crumb else text,
        "ocr_confidence": 0.1 + 0.2,
        "citations": [{"page": 1, "start": 0, "end": len(text)}],
    }


def test_a_chunks_line_is_json_dumps() -> None:
    rng = random.Random(7)
    texts = [EVERY, "", *("".join(rng.choices(ODD, k=12)) for _ in range(200))]
    for text in texts:
        for chunk in (_chunk(text, ""), _chunk(text, "כותרת > ש"), {**_chunk(text, ""), "x": 1}):
            assert chunk_line(chunk) == (json.dumps(chunk, ensure_ascii=False) + "\n").encode()
        other = {**_chunk(text, ""), "text_for_embedding": "other"}
        assert chunk_line(other) == (json.dumps(other, ensure_ascii=False) + "\n").encode()
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate fails as json's line fails
        chunk_line(_chunk("a\ud800", ""))


def _record(route: str, **fields: object) -> PageRecord:
    return PageRecord(
        number=3,
        router=RouterInfo(source="default", script="ar"),
        route=route,  # type: ignore[arg-type]
        quality=Quality(ok=False, reasons=["low"]),
        **fields,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("route", ["text_layer", "ocr", "no_text", "review_required", "failed"])
@pytest.mark.parametrize("direction", ["rtl", "ltr"])
@pytest.mark.parametrize("markdown", ["", "# כותרת\n\nטקסט 😀"])
def test_a_pages_markdown_part(route: str, direction: str, markdown: str) -> None:
    page = _record(route, direction=direction, markdown=markdown)
    joined = "\n\n".join(artifacts.markdown_parts(page)).encode()
    assert artifacts.markdown_utf8(page) == joined


def _edits(raw: str, rng: random.Random) -> tuple[list[dict], str]:
    edits, shown, pos = [], [], 0
    while rng.random() < 0.8:
        start = rng.randint(pos, len(raw))
        end = rng.randint(start, min(len(raw), start + 3))
        new = rng.choice(["", "x", "yz"])
        shown.append(raw[pos:start])
        out = sum(map(len, shown))
        edits.append(dict(start=start, end=end, replacement=new, kind="nfkc", out_start=out))
        edits[-1]["out_end"] = out + len(new)
        shown.append(new)
        pos = end
    return edits, "".join(shown) + raw[pos:]


def _spoiled(edits: list[dict], rng: random.Random) -> list[dict]:
    edits = [dict(e) for e in edits]
    edit = rng.choice(edits)
    name = rng.choice(list(edit))
    change = rng.choice(["shift", "type", "drop", "extra"])
    if change == "shift" and type(edit[name]) is int:
        edit[name] += rng.choice([-1, 1])
    elif change == "type":
        edit[name] = rng.choice([True, 1.0, "1", None])
    elif change == "drop":
        del edit[name]
    else:
        edit["extra"] = 1
    return edits


def test_an_edit_maps_verdict_is_verify_edits() -> None:
    rng = random.Random(3)
    for _ in range(3000):
        raw = "".join(rng.choices("ab c\nש", k=rng.randint(0, 12)))
        edits, shown = _edits(raw, rng)
        if edits and rng.random() < 0.6:
            edits = _spoiled(edits, rng)
        if rng.random() < 0.2:
            shown += "q"
        if not raw and not edits:  # nothing to replay: verified keeps the page as it is
            continue
        page = _record("text_layer", raw_text=raw, edits=edits, text=shown)
        try:
            want = verify_edits(raw, edits, shown).ok
            got = artifacts.verified(page)
        except EditMapError:  # malformed: verify_edits raises
            continue
        assert (got.route == "failed") == (not want)


def test_the_chunkers_paragraphs_are_plain_blocks() -> None:
    rng = random.Random(5)
    for _ in range(2000):
        text = "".join(rng.choices(["a", "ש", " ", "\n", "\n\n", "\t", "\x1c", "\u3000"], k=14))
        whole = [{k: v for k, v in b.items() if k != "direction"} for b in plain_blocks(text)]
        assert _paragraphs(text) == whole
