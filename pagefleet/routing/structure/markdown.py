"""Markdown from blocks: `#` headings, list items with one marker (`- ` for a bullet, `N. ` for a
number written with ASCII digits, `- ` before any other marker as written), GFM tables,
paragraphs with their line breaks. Headers and footers are left out (they stay in document.json).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pagefleet.routing.structure.markers import BULLETS, list_marker

FURNITURE = frozenset({"header", "footer"})
_SPACED_NUMBER = re.compile(r"^(\d{1,3})\s+([.)])(?=\s)")
_SPECIAL_START = ("#", ">", "|", "<", "- ", "* ", "+ ", "=", "```")


def escape_line(line: str) -> str:
    """Keep a line of text from being read as Markdown syntax at its start."""
    stripped = line.lstrip()
    head = stripped.split(" ", 1)[0]
    if stripped.startswith(_SPECIAL_START):
        return line.replace(stripped[0], "\\" + stripped[0], 1)
    if head[:-1].isascii() and head[:-1].isdigit() and head[-1:] in (".", ")"):
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
        return (
            "#" * max(1, min(int(block.get("level") or 1), 6)) + " " + _one_line(text).lstrip("#")
        )
    if kind == "list_item":
        return _list_item(str(block.get("marker") or ""), _one_line(text))
    if kind == "table":
        return (block.get("table") or {}).get("markdown", "")
    return escape_line(_one_line(text))  # wrapped lines of one paragraph: Markdown reflows them


def _list_item(marker: str, body: str) -> str:
    """One list item, its marker written once: the text's own marker (as drawn, `1 .` or `•`)
    is replaced by Markdown's."""
    body = _SPACED_NUMBER.sub(r"\1\2", body)  # `1 . item`: a number and its dot drawn apart
    found = list_marker(body + " ") if body else None
    if found is not None:
        marker, body = found.marker, body[found.length :].strip()
    core = marker.strip("().-")
    if not marker or marker in BULLETS:
        return "- " + escape_line(body)
    if core.isascii() and core.isdigit():
        return f"{int(core)}. " + escape_line(body)
    return "- " + escape_line(f"{marker} {body}")


def blocks_markdown(blocks: Sequence[Mapping[str, Any]]) -> str:
    parts = [block_markdown(b) for b in blocks]
    return "\n\n".join(p for p in parts if p)
