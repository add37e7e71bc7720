"""What the page view's correction editor needs: the text a reviewer corrects (the page's own, or
its correction while that applies), the tables as grids, the blocks' ranges and boxes (the line
under the caret drawn on the source page), the decision's revision and the text's hash (so a
decision is made on exactly what was shown), and the form's grid cells read back into rows.
"""

from __future__ import annotations

import re
from typing import Any

from pagefleet.workers.review import decisions
from pagefleet.workers.review.decisions import ReviewFile
from pagefleet.workers.review.reviewed import current_view

CELL = re.compile(r"^cell-(\d{1,4})-(\d{1,5})-(\d{1,4})$")


def tables(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tables among `blocks` as grids: {index (of the block), rows, header_rows, direction}."""
    out = []
    for index, block in enumerate(blocks):
        table = block.get("table") if block.get("type") == "table" else None
        if isinstance(table, dict) and table.get("rows"):
            out.append(
                {
                    "index": index,
                    "rows": [[str(c) for c in row] for row in table["rows"]],
                    "header_rows": int(table.get("header_rows") or 0),
                    "direction": block.get("direction")
                    if block.get("direction") in ("rtl", "ltr")
                    else "auto",
                }
            )
    return out


def spans(blocks: list[dict[str, Any]]) -> str:
    """`start,end,x0,y0,x1,y1;…` for the blocks that have a box: where the caret's text stands on
    the source page (data for static/studio.js; numbers only)."""
    parts = []
    for block in blocks:
        box = block.get("bbox")
        if (
            isinstance(box, list)
            and len(box) == 4
            and all(isinstance(v, (int, float)) for v in box)
        ):
            parts.append(
                ",".join(
                    [
                        str(int(block.get("start", 0))),
                        str(int(block.get("end", 0))),
                        *(f"{float(v):.1f}" for v in box),
                    ]
                )
            )
    return ";".join(parts)


def context(page: dict[str, Any], review: ReviewFile) -> dict[str, Any]:
    made = review.pages.get(str(page["number"]))
    text, blocks = current_view(page, review)
    return {
        "shown_text": text,
        "text_sha256": decisions.page_hash(page),
        "revision": made.revision if made else 0,
        "stale": decisions.is_stale(page, made),
        "tables": tables(blocks),
        "spans": spans(blocks),
    }


def cells_from_form(
    page: dict[str, Any], review: ReviewFile, form: dict[str, str]
) -> dict[int, list[list[str]]]:
    """The grids' rows as posted (against the view the editor started from), for the tables in
    which some cell changed."""
    grids = {t["index"]: t["rows"] for t in tables(current_view(page, review)[1])}
    changed: dict[int, list[list[str]]] = {}
    for name, value in form.items():
        match = CELL.match(name)
        if not match:
            continue
        b, r, c = (int(g) for g in match.groups())
        rows = grids.get(b)
        if rows is None or r >= len(rows) or c >= len(rows[r]) or rows[r][c] == value:
            continue
        changed.setdefault(b, [list(row) for row in rows])[r][c] = value
    return changed
