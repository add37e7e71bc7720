"""Offsets through the edit map, chunking rules, Markdown from blocks, Markdown parsing."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pagefleet.routing.normalize import normalize
from pagefleet.routing.structure.chunking import ChunkRules, PageIn, chunk_document
from pagefleet.routing.structure.markdown import blocks_markdown
from pagefleet.routing.structure.mdparse import markdown_blocks
from pagefleet.routing.structure.offsets import OffsetMap, citation_replays

CTX = {"doc_sha256": "ab" * 32, "filename": "x.pdf", "pipeline_version": "0.2.0"}
RAW = "abc\u200f def\r\n\ufefb x  y\nשלום \u05d0\u0640\u0640\u05d1\n(1) item"


def _edits(raw: str) -> tuple[str, list[dict]]:
    result = normalize(raw)
    return result.text, [e.to_dict() for e in result.edits]


def test_line_ranges_replay() -> None:
    text, edits = _edits(RAW)
    ranges = OffsetMap(edits).line_ranges(RAW)
    assert len(ranges) == len(RAW.split("\n"))
    for start, end in ranges:
        assert citation_replays(RAW, edits, text, start, end)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="ab \n\r\u200f\ufefb\u0640\u05d0\u05dd()", max_size=40), st.data())
def test_every_range_replays(raw: str, data: st.DataObject) -> None:
    text, edits = _edits(raw)
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    assert citation_replays(raw, edits, text, start, end)


def test_a_wrong_citation_does_not_replay() -> None:
    text, edits = _edits("abc def")
    assert not citation_replays("abc xyz", edits, text, 4, 7)
    assert not citation_replays("abc def", edits, text, 5, 99)


def _block(kind: str, text: str, start: int, **extra) -> dict:
    return {
        "type": kind,
        "text": text,
        "start": start,
        "end": start + len(text),
        "bbox": [0, 0, 1, 1],
        **extra,
    }


def _page(number: int, accepted: bool = True, blocks: list[dict] | None = None) -> PageIn:
    return PageIn(
        number,
        accepted,
        blocks or [_block("paragraph", f"text of page {number}", 0)],
        route="text_layer",
        engine="pymupdf",
    )


def test_refused_page_never_reaches_a_chunk_and_a_chunk_never_crosses_it() -> None:
    pages = [_page(1), _page(2, accepted=False), _page(3)]
    chunks = chunk_document(pages, CTX)
    assert [c["pages"] for c in chunks] == [[1], [3]]
    assert all("page 2" not in c["text"] for c in chunks)


def test_accepted_pages_share_a_chunk() -> None:
    chunks = chunk_document([_page(1), _page(2)], CTX)
    assert len(chunks) == 1 and chunks[0]["pages"] == [1, 2]
    assert chunks[0]["citations"] == [
        {"page": 1, "start": 0, "end": 14},
        {"page": 2, "start": 0, "end": 14},
    ]


def test_headings_make_breadcrumbs_and_furniture_stays_out() -> None:
    blocks = [
        _block("header", "Running header", 0),
        _block("heading", "Results", 15, level=1),
        _block("paragraph", "Revenue grew.", 23),
        _block("heading", "North", 37, level=2),
        _block("paragraph", "North grew most.", 43),
        _block("heading", "Risks", 60, level=1),
        _block("paragraph", "Currency.", 66),
        _block("footer", "Page 1", 76),
    ]
    chunks = chunk_document([_page(1, blocks=blocks)], CTX)
    assert [c["headings"] for c in chunks] == [["Results"], ["Results", "North"], ["Risks"]]
    assert chunks[1]["text_for_embedding"].startswith("Results > North\n\n")
    assert all("Running header" not in c["text"] and "Page 1" not in c["text"] for c in chunks)
    assert chunks[0]["element_types"] == ["heading", "paragraph"]
    assert len({c["chunk_id"] for c in chunks}) == 3 and all(
        len(c["content_hash"]) == 64 for c in chunks
    )


def test_a_long_table_is_split_by_rows_with_its_header_repeated() -> None:
    rows = [["Region", "Total"]] + [[f"R{i}", str(i * 100)] for i in range(60)]
    table = _block(
        "table", "x" * 10, 0, table={"rows": rows, "header_rows": 1, "markdown": "x" * 900}
    )
    chunks = chunk_document([_page(1, blocks=[table])], CTX, ChunkRules(max_chars=300))
    assert len(chunks) > 2
    for chunk in chunks:
        assert chunk["text"].startswith("| Region | Total |\n|---|---|")
        assert len(chunk["text"]) <= 300
    bodies = [line for c in chunks for line in c["text"].splitlines()[2:]]
    assert len(bodies) == 60


def test_a_long_paragraph_is_split_with_exact_citations() -> None:
    text = " ".join(f"word{i}" for i in range(200))
    chunks = chunk_document(
        [_page(1, blocks=[_block("paragraph", text, 0)])], CTX, ChunkRules(max_chars=200)
    )
    assert len(chunks) > 3
    for chunk in chunks:
        cite = chunk["citations"][0]
        assert text[cite["start"] : cite["end"]] == chunk["text"]


def test_markdown_from_blocks() -> None:
    blocks = [
        _block("header", "H", 0),
        _block("heading", "Title", 0, level=2),
        _block("list_item", "1. one", 0),
        _block("paragraph", "# not a heading\nwrapped", 0),
        _block("table", "", 0, table={"rows": [["a", "b"]], "markdown": "| a | b |\n|---|---|"}),
    ]
    assert blocks_markdown(blocks).split("\n\n") == [
        "## Title",
        "1. one",
        "\\# not a heading wrapped",
        "| a | b |\n|---|---|",
    ]


def test_markdown_parser_blocks_and_tables() -> None:
    md = "# כותרת\n\nפסקה **מודגשת**\nשורה\n\n1. אחד\n2. שניים\n\n- תבליט\n\n|a|b|\n|---|---|\n|1<br>2|x|\n"
    parsed = markdown_blocks(md)
    assert [(b.type, b.text) for b in parsed] == [
        ("heading", "כותרת"),
        ("paragraph", "פסקה מודגשת שורה"),
        ("list_item", "אחד"),
        ("list_item", "שניים"),
        ("list_item", "תבליט"),
        ("table", ""),
    ]
    assert parsed[0].level == 1 and parsed[2].marker == "1." and parsed[4].marker == "-"
    assert parsed[-1].rows == [["a", "b"], ["1 2", "x"]]
    assert parsed[1].lines == (2, 4)


def test_a_table_continued_on_the_next_page_gets_its_header() -> None:
    """Rows that open page 2 right after page 1's table (same columns, no header of their own)
    are that table's rows: their chunk repeats page 1's header; a table with its own header, or
    one after a paragraph, is left alone."""
    head = [["שנה", "סכום"]]
    first = _block(
        "table",
        "t1",
        0,
        table={"rows": head + [["2020", "10"]], "header_rows": 1, "markdown": "t1"},
    )
    rest = _block(
        "table",
        "t2",
        0,
        table={"rows": [["2021", "12"], ["2022", "15"]], "header_rows": 1, "markdown": "t2"},
    )
    footer = _block("footer", "עמוד 1", 10)
    chunks = chunk_document(
        [_page(1, blocks=[first, footer]), _page(2, blocks=[rest])], CTX, ChunkRules(max_chars=40)
    )
    assert chunks[-1]["pages"] == [2]
    assert (
        chunks[-1]["text"].splitlines()[0] == "| שנה | סכום |"
        and "| 2022 | 15 |" in chunks[-1]["text"]
    )
    assert chunks[-1]["citations"] == [{"page": 2, "start": 0, "end": 2}]
    own = _block(
        "table", "t3", 0, table={"rows": head + [["2023", "9"]], "header_rows": 1, "markdown": "t3"}
    )
    alone = chunk_document(
        [_page(1, blocks=[first]), _page(2, blocks=[own])], CTX, ChunkRules(max_chars=40)
    )
    assert (
        alone[-1]["text"].endswith("t3") and "שנה" not in alone[-1]["text"]
    )  # its own Markdown, as it was
    after_text = chunk_document(
        [_page(1, blocks=[first, _block("paragraph", "סוף", 5)]), _page(2, blocks=[rest])],
        CTX,
        ChunkRules(max_chars=40),
    )
    assert "שנה" not in after_text[-1]["text"]
    wide = _block(
        "table", "t4", 0, table={"rows": [["a", "b", "c"]], "header_rows": 1, "markdown": "t4"}
    )
    other = chunk_document(
        [_page(1, blocks=[first]), _page(2, blocks=[wide])], CTX, ChunkRules(max_chars=40)
    )
    assert other[-1]["text"].endswith("t4") and "שנה" not in other[-1]["text"]
