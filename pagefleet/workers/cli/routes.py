"""`pagefleet routes OUT [--labels LABELS.json]`: the routing table of a finished run — file, page,
router source, script, engine, route — with the checks of the routing issue:

- a page whose text layer is labelled `garbage` must not be accepted from its text layer;
- a Hebrew or Arabic page that was OCR'd must be read by an engine that reads that script;
- no RTL page is read by an English-only engine.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from pagefleet.routing.chains import reads_script
from pagefleet.workers.engines.base import scripts_by_entry
from pagefleet.workers.store.artifacts import TEXT_LAYER_ROUTES as FROM_LAYER


def rows_for(out: Path, labels: dict[str, Any] | None) -> list[dict[str, Any]]:
    rows = []
    for path in sorted(out.glob("*/document.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        label = (labels or {}).get(doc["source"]["filename"], {})
        for page in doc["pages"]:
            rows.append(_row(doc["source"]["filename"], page, label))
    return rows


def _row(filename: str, page: dict[str, Any], label: dict[str, Any]) -> dict[str, Any]:
    kinds = label.get("pages", "")
    kind = kinds[page["number"] - 1] if page["number"] <= len(kinds) else ""
    truth = label.get("script") if label.get("script") in ("he", "ar") else None
    rtl = truth or (page["script"] if page["script"] in ("he", "ar") else None)
    problems = []
    if label.get("text_layer") == "garbage" and page["route"] in FROM_LAYER:
        problems.append("garbage accepted from text layer")
    engine = page.get("engine") or ""
    if page["route"] == "ocr" and rtl and not reads_script(engine, rtl, scripts_by_entry([engine])):
        problems.append(f"{rtl} page read by {engine}")
    if kind == "I" and page["route"] != "ocr":
        problems.append("image-only page not OCR'd")
    return {
        "file": filename,
        "page": page["number"],
        "source": page["router"]["source"],
        "script": page["router"]["script"],
        "engine": engine,
        "route": page["route"],
        "problems": problems,
    }


def print_table(rows: list[dict[str, Any]], console: Console) -> int:
    table = Table(title="routing table")
    for col in ("file", "page", "router source", "script", "engine", "route", "check"):
        table.add_column(col)
    bad = 0
    for r in rows:
        bad += bool(r["problems"])
        table.add_row(
            r["file"],
            str(r["page"]),
            r["source"],
            r["script"],
            r["engine"],
            r["route"],
            "; ".join(r["problems"]) or "ok",
        )
    console.print(table)
    console.print(f"{len(rows)} pages, {bad} with a routing problem")
    return bad


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("routes", help="print the routing table of a finished run")
    p.add_argument("out", help="a `pagefleet run` output folder")
    p.add_argument("--labels", help="LABELS.json, to check routes against labels")
    p.set_defaults(handler=_handler)


def _handler(args: argparse.Namespace, console: Console) -> int:
    labels = json.loads(Path(args.labels).read_text(encoding="utf-8")) if args.labels else None
    bad = print_table(rows_for(Path(args.out), labels), Console(width=200))
    return 2 if bad else 0
