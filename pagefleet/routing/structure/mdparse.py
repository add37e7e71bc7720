"""Markdown (a VLM's page, pymupdf4llm's output) → block specs, with a real parser (markdown-it-py,
CommonMark + GFM tables).

Each spec keeps the source lines it came from (`lines`: [first, last+1) of the Markdown), so the
caller can give the block the display range of those lines in the page text and keep citations
replayable. Cell and heading text is the inline content without emphasis markers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.token import Token

_MD = MarkdownIt("commonmark").enable("table")


@dataclass
class MdBlock:
    type: str  # heading | paragraph | list_item | table
    text: str
    lines: tuple[int, int]
    level: int | None = None
    marker: str | None = None
    rows: list[list[str]] = field(default_factory=list)


def inline_text(token: Token) -> str:
    parts = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak") or (
            child.type == "html_inline" and "br" in child.content.lower()
        ):
            parts.append(" ")
    return " ".join("".join(parts).split())


def _table(tokens: list[Token], i: int) -> tuple[list[list[str]], int]:
    rows: list[list[str]] = []
    while tokens[i].type != "table_close":
        tok = tokens[i]
        if tok.type == "tr_open":
            rows.append([])
        elif tok.type == "inline" and rows:
            rows[-1].append(inline_text(tok))
        i += 1
    return rows, i


def _marker(list_tok: Token | None, item: Token) -> str:
    if list_tok is not None and list_tok.type == "ordered_list_open":
        return f"{item.info}{item.markup}"
    return item.markup or "-"


def markdown_blocks(md: str) -> list[MdBlock]:
    tokens = _MD.parse(md)
    out: list[MdBlock] = []
    lists: list[Token] = []
    item: Token | None = None
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        span = tuple(tok.map) if tok.map else (0, 0)
        if tok.type in ("bullet_list_open", "ordered_list_open"):
            lists.append(tok)
        elif tok.type in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
        elif tok.type == "list_item_open":
            item = tok
        elif tok.type == "heading_open":
            out.append(MdBlock("heading", inline_text(tokens[i + 1]), span, level=int(tok.tag[1])))  # type: ignore[arg-type]
        elif tok.type == "paragraph_open" and item is not None:
            marker = _marker(lists[-1] if lists else None, item)
            out.append(
                MdBlock(
                    "list_item", inline_text(tokens[i + 1]), tuple(item.map or span), marker=marker
                )
            )  # type: ignore[arg-type]
            item = None
        elif tok.type == "paragraph_open":
            out.append(MdBlock("paragraph", inline_text(tokens[i + 1]), span))  # type: ignore[arg-type]
        elif tok.type == "table_open":
            rows, i = _table(tokens, i)
            out.append(MdBlock("table", "", span, rows=rows))  # type: ignore[arg-type]
        i += 1
    return out


def markdown_tables(md: str) -> list[list[list[str]]]:
    return [b.rows for b in markdown_blocks(md) if b.type == "table"]
