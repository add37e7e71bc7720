"""Untrusted page text → HTML. Every character of document text goes through `escape`; the only
tags are the ones written here.

- `isolated`: on RTL pages each Latin run and number sits in `<bdi>` so it keeps its own order
  without reordering the Hebrew/Arabic around it ("Tel Aviv", "2024", "12%", "-4.5%", "٢٠٢٤").
- `page_body`: the rendered view: `pages[].blocks[]` when the page has them (headings, paragraphs,
  list items, tables as RTL tables, figures, captions, …), else the page text line by line.
- `edit_map`: `raw_text` with every edit shown as a highlighted change (deleted → inserted, kind).
"""

from __future__ import annotations

import re
from typing import Any

from markupsafe import Markup, escape

_LATIN = r"A-Za-z0-9\u00C0-\u024F"
_INDIC = r"\u0660-\u0669\u06F0-\u06F9"  # Arabic-Indic and Extended Arabic-Indic digits
LTR_RUN = re.compile(
    rf"(?:(?<![^\s(\[])[-+\u2212](?=[0-9]))?[{_LATIN}](?:[{_LATIN} .,:;/%@&'’_+#=\-]*[{_LATIN}%])?"
    rf"|[{_INDIC}](?:[{_INDIC}.,\u066B\u066C]*[{_INDIC}])?%?"
)
DIRECTIONS = ("rtl", "ltr")
BLOCK_CLASSES = {"figure", "caption", "footnote", "header", "footer", "paragraph"}


def direction_attr(direction: Any) -> str:
    return direction if direction in DIRECTIONS else "auto"


def isolated(text: str, rtl: bool) -> Markup:
    """Escaped text; on RTL pages Latin runs and numbers wrapped in <bdi>."""
    if not rtl:
        return escape(text)
    out: list[str] = []
    last = 0
    for match in LTR_RUN.finditer(text):
        out.append(str(escape(text[last : match.start()])))
        out.append(f"<bdi>{escape(match.group())}</bdi>")
        last = match.end()
    out.append(str(escape(text[last:])))
    return Markup("".join(out))


def lines_html(text: str, direction: str) -> Markup:
    rtl = direction == "rtl"
    paras = [f"<p>{isolated(line, rtl)}</p>" for line in text.split("\n") if line.strip()]
    return Markup("\n".join(paras))


def _cell_text(cell: Any) -> str:
    if isinstance(cell, dict):
        return str(cell.get("text", ""))
    return "" if cell is None else str(cell)


def table_html(table: dict[str, Any], direction: str, extra: str = "") -> Markup:
    """Rows of cells in logical order; `<table dir="rtl">` lays an RTL table out right to left."""
    rows = table.get("rows") if isinstance(table.get("rows"), list) else []
    header_rows = min(max(int(table.get("header_rows") or 0), 0), len(rows))
    rtl = direction == "rtl"
    parts = [f'<table class="blk-table" dir="{direction_attr(direction)}"{extra}>']
    for i, row in enumerate(rows):
        if i == 0 and header_rows:
            parts.append("<thead>")
        if i == header_rows:
            parts.append("<tbody>")
        tag = "th" if i < header_rows else "td"
        cells = "".join(
            f"<{tag}>{isolated(_cell_text(c), rtl)}</{tag}>"
            for c in (row if isinstance(row, list) else [])
        )
        parts.append(f"<tr>{cells}</tr>")
        if i == header_rows - 1:
            parts.append("</thead>")
    if len(rows) > header_rows:
        parts.append("</tbody>")
    parts.append("</table>")
    return Markup("".join(parts))


def _block_text(block: dict[str, Any], text: str) -> str:
    if isinstance(block.get("text"), str):
        return block["text"]
    start, end = block.get("start"), block.get("end")
    if isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= len(text):
        return text[start:end]
    return ""


def bbox_attr(block: dict[str, Any]) -> str:
    """` data-bbox="x0,y0,x1,y1"` (PDF points, top-left origin) when the block has a box: the page
    view draws it over the source image while the block is pointed at."""
    box = block.get("bbox")
    if isinstance(box, list) and len(box) == 4 and all(isinstance(v, (int, float)) for v in box):
        return ' data-bbox="' + ",".join(f"{float(v):.1f}" for v in box) + '"'
    return ""


def block_html(block: dict[str, Any], text: str, page_direction: str) -> Markup:
    kind = str(block.get("type", "paragraph"))
    direction = block.get("direction") if block.get("direction") in DIRECTIONS else page_direction
    body = isolated(_block_text(block, text), direction == "rtl")
    attr = f'dir="{direction_attr(direction)}"{bbox_attr(block)}'
    if kind == "table" and isinstance(block.get("table"), dict):
        return table_html(block["table"], direction, bbox_attr(block))
    if kind == "heading":
        level = (
            min(max(int(block.get("level") or 1), 1), 4) + 2
        )  # h3..h6 under the page's own headings
        return Markup(f'<h{level} class="blk-heading" {attr}>{body}</h{level}>')
    if kind == "list_item":
        marker = str(block.get("marker") or "")
        if not marker or _block_text(block, text).lstrip().startswith(
            marker
        ):  # the text holds its marker
            return Markup(f'<p class="blk-list_item" {attr}>{body}</p>')
        return Markup(
            f'<p class="blk-list_item" {attr}><span class="marker">{escape(marker)}</span> {body}</p>'
        )
    css = kind if kind in BLOCK_CLASSES else "paragraph"
    return Markup(f'<p class="blk-{css}" {attr}>{body}</p>')


def page_body(page: dict[str, Any], text: str | None = None) -> Markup:
    """The rendered view of a page: its blocks when present, else its text line by line."""
    text = page.get("text", "") if text is None else text
    direction = str(page.get("direction", "unknown"))
    blocks = page.get("blocks")
    if isinstance(blocks, list) and blocks:
        return Markup(
            "\n".join(block_html(b, text, direction) for b in blocks if isinstance(b, dict))
        )
    return lines_html(text, direction)


def _valid_edits(raw: str, edits: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    ordered = sorted(edits, key=lambda e: (e.get("start", -1), e.get("end", -1)))
    last = 0
    for e in ordered:
        start, end = e.get("start"), e.get("end")
        if not (
            isinstance(start, int) and isinstance(end, int) and last <= start <= end <= len(raw)
        ):
            return None
        last = end
    return ordered


def edit_map(raw: str, edits: list[dict[str, Any]], direction: str) -> Markup:
    """raw_text with each edit as <del>raw</del><ins>replacement</ins>, titled by its kind."""
    ordered = _valid_edits(raw, edits)
    if ordered is None:
        return Markup(
            '<p class="warn">The edit map does not fit raw_text; raw text only:</p>'
        ) + escape(raw)
    rtl = direction == "rtl"
    out: list[str] = []
    last = 0
    for i, e in enumerate(ordered):
        out.append(str(isolated(raw[last : e["start"]], rtl)))
        kind = escape(str(e.get("kind", "edit")))
        removed = escape(raw[e["start"] : e["end"]])
        added = escape(str(e.get("replacement", "")))
        out.append(
            f'<span class="edit" data-kind="{kind}" title="edit {i + 1}: {kind}">'
            f"<del>{removed}</del><ins>{added}</ins></span>"
        )
        last = e["end"]
    out.append(str(isolated(raw[last:], rtl)))
    return Markup("".join(out))
