"""Markdown from blocks: `#` headings, `-` list items (the marker kept as written), GFM tables,
paragraphs with their line breaks. Headers and footers are left out (they stay in document.json).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

FURNITURE = frozenset({"header", "footer"})
_SPECIAL_START = ("#", ">", "|", "<", "- ", "* ", "+ ", "=", "```")


def escape_line(line: str) -> str:
    """Keep a line of text from being read as Markdown syntax at its start."""
    stripped = line.lstrip()
    head = stripped.split(" ", 1)[0]
    if stripped.startswith(_SPECIAL_START):
        return line.replace(stripped[0], "\\" + stripped[0], 1)
    if head[:-1].isdigit() and head[-1:] in (".", ")"):
        return line.replace(head, head[:-1] + "\\" + head[-1], 1)
    return line


def _one_line(text: str) -> str:
    return " ".join(text.split())


def block_markdown(block: Mapping[str, Any]) -> str:
    kind = block["type"]
    text = block.get("text", "")
    if kind in FURNITURE:
        return ""
    if kind == "heading":
        return "#" * max(1, min(int(block.get("level") or 1), 6)) + " " + _one_line(text).lstrip("#")
    if kind == "list_item":
        marker = block.get("marker") or ""
        item = _one_line(text) if not marker or text.lstrip().startswith(marker) else f"{marker} {_one_line(text)}"
        return "- " + escape_line(item)
    if kind == "table":
        return (block.get("table") or {}).get("markdown", "")
    return escape_line(_one_line(text))  # wrapped lines of one paragraph: Markdown reflows them


def blocks_markdown(blocks: Sequence[Mapping[str, Any]]) -> str:
    parts = [block_markdown(b) for b in blocks]
    return "\n\n".join(p for p in parts if p)
