"""`make eval-wse`: Word Shape Encoding against the same LTR parser on the original RTL page.

    .venv/bin/python bench/wse_eval.py [--corpus ../shared/corpus] [--fixtures DIR]
                                       [--parsers pymupdf,pymupdf4llm] [--json OUT.json]

Per RTL table — the generated ones (fixtures/make_wse_fixtures.py: Hebrew and Arabic, ruled and
unruled, numeric columns, known cells) and the corpus tables (`bench/wse_corpus.py`: cells from
the page's own text layer on a hand-given grid) — and per parser, both routes:

    wse      encode the page, run the parser on the mirrored English-looking page, decode
    direct   the parser on the original page, its text and cells given pagefleet's repair
    pagefleet  pagefleet's own text-layer tables (rung 1 + structure, `bench/eval_structure.py`)

Columns: TEDS and cell accuracy of the predicted table closest to the truth (`pagefleet.workers.wse.table_scores`;
corpus tables: body rows only, the prediction cut to the rows that match them), word recovery
(the page's words found in the decoded output, `pagefleet.workers.wse.decode.word_recovery`), seconds per
page (wse: encode + parse + decode; pymupdf4llm runs in a child process on both routes). The last
line is the summary. Times are wall-clock on a shared machine: noisy.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from statistics import mean
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "fixtures")]

from wse_corpus import SPECS, WORDS_ONLY, truth_table  # noqa: E402

from pagefleet.workers.wse.table_scores import best_match, cell_accuracy, crop_to_truth, teds  # noqa: E402
from pagefleet.workers.wse.recover import PageRun, run_direct, run_wse  # noqa: E402

ROUTES = {"wse": run_wse, "direct": run_direct}
_FLEET: dict[str, tuple[list[Any], float]] = {}


def run_pagefleet(pdf: str, page: int) -> PageRun:
    """pagefleet's own text-layer tables (rung 1 + structure, as `make eval-structure` runs it)."""
    from bench.eval_structure import pagefleet_pages, pagefleet_prediction
    from pagefleet.workers.wse.decode import word_recovery
    from pagefleet.workers.wse.recover import original_words

    if pdf not in _FLEET:
        started = time.perf_counter()
        records = pagefleet_pages(Path(pdf))
        _FLEET[pdf] = (records, (time.perf_counter() - started) / max(1, len(records)))
    records, seconds = _FLEET[pdf]
    record = records[page - 1]
    tables = pagefleet_prediction(record).tables
    found, total = word_recovery(original_words(pdf, page), getattr(record, "text", "") or "")
    return PageRun("pagefleet", "text layer", tables, "", found, total, 0, seconds)


def score(run: PageRun, truth: list[list[str]] | None, body_only: bool) -> dict[str, Any]:
    row: dict[str, Any] = {
        "route": run.route,
        "parser": run.parser,
        "words": round(run.word_recovery, 4),
        "found": run.words_found,
        "total": run.words_total,
        "seconds": round(run.seconds, 2),
    }
    if truth is None:
        return row | {"teds": None, "cells": None}
    index, _ = best_match(run.tables, truth)
    if index < 0:
        return row | {"teds": 0.0, "cells": 0.0}
    pred = crop_to_truth(run.tables[index], truth) if body_only else run.tables[index]
    return row | {
        "teds": round(teds(pred, truth), 4),
        "cells": round(cell_accuracy(pred, truth), 4),
    }


def cases(corpus: Path | None, fixtures: Path) -> list[dict[str, Any]]:
    """(name, pdf, page, truth, kind, body_only) for every table to score."""
    out = []
    for truth_file in sorted(fixtures.glob("wse_*.truth.json")):
        pdf = truth_file.with_name(truth_file.name.replace(".truth.json", ".pdf"))
        truth = json.loads(truth_file.read_text(encoding="utf-8"))["pages"][0]["tables"][0]
        out.append(
            {
                "name": pdf.stem,
                "pdf": pdf,
                "page": 1,
                "truth": truth,
                "kind": "generated",
                "body": False,
            }
        )
    if corpus is not None and corpus.is_dir():
        for spec in SPECS:
            if (corpus / spec["file"]).exists():
                out.append(
                    {
                        "name": f"{Path(spec['file']).stem} p{spec['page']}",
                        "pdf": corpus / spec["file"],
                        "page": spec["page"],
                        "truth": truth_table(corpus, spec),
                        "kind": "corpus",
                        "body": True,
                    }
                )
        for name, page in WORDS_ONLY:
            if (corpus / name).exists():
                out.append(
                    {
                        "name": f"{Path(name).stem} p{page}",
                        "pdf": corpus / name,
                        "page": page,
                        "truth": None,
                        "kind": "corpus",
                        "body": False,
                    }
                )
    return out


def _fmt(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def _print(name: str, row: dict[str, Any]) -> None:
    print(
        f"| {name} | {row['parser']} | {row['route']} | {_fmt(row['teds'])} | {_fmt(row['cells'])} | "
        f"{row['found']}/{row['total']} | {row['seconds']:.2f} |",
        flush=True,
    )


def summary(rows: list[dict[str, Any]], parsers: list[str]) -> list[str]:
    lines = [
        "| tables | parser | route | TEDS | cell acc. | word recovery | s/page |",
        "|---|---|---|---|---|---|---|",
    ]
    pairs = [("text layer", "pagefleet")] + [(p, r) for p in parsers for r in ROUTES]
    for kind in ("generated", "corpus"):
        for parser, route in pairs:
            sel = [
                r
                for r in rows
                if r["kind"] == kind and r["parser"] == parser and r["route"] == route
            ]
            scored = [r for r in sel if r["teds"] is not None]
            if not sel:
                continue
            words = sum(r["found"] for r in sel) / max(1, sum(r["total"] for r in sel))
            lines.append(
                f"| {kind} ({len(scored)} tables) | {parser} | {route} | "
                f"{mean(r['teds'] for r in scored) if scored else 0:.3f} | "
                f"{mean(r['cells'] for r in scored) if scored else 0:.3f} | {words:.4f} | "
                f"{mean(r['seconds'] for r in sel):.2f} |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    ap.add_argument(
        "--fixtures", type=Path, help="generated tables (default: made fresh in a temp dir)"
    )
    ap.add_argument("--parsers", default="pymupdf,pymupdf4llm")
    ap.add_argument("--json", type=Path, help="also write every row here")
    args = ap.parse_args(argv)
    parsers = [p for p in args.parsers.split(",") if p]
    with tempfile.TemporaryDirectory(prefix="wse-eval-") as tmp:
        fixtures = args.fixtures
        if fixtures is None:
            import make_wse_fixtures

            fixtures = Path(tmp)
            make_wse_fixtures.make(fixtures)
        rows = []
        print(
            "| table | parser | route | TEDS | cell acc. | word recovery | s |\n|---|---|---|---|---|---|---|"
        )
        for case in cases(args.corpus, fixtures):
            row = score(run_pagefleet(str(case["pdf"]), case["page"]), case["truth"], case["body"])
            rows.append(row | {"table": case["name"], "kind": case["kind"]})
            _print(case["name"], row)
            for parser in parsers:
                for route, run in ROUTES.items():
                    row = score(
                        run(str(case["pdf"]), case["page"], parser), case["truth"], case["body"]
                    )
                    rows.append(row | {"table": case["name"], "kind": case["kind"]})
                    _print(case["name"], row)
    print()
    print("\n".join(summary(rows, parsers)))
    if args.json:
        args.json.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    wse = [r for r in rows if r["route"] == "wse"]
    found, total = sum(r["found"] for r in wse), sum(r["total"] for r in wse)
    better = sum(
        1
        for r in wse
        if r["teds"] is not None
        and r["teds"]
        > next(
            d["teds"]
            for d in rows
            if d["route"] == "direct" and d["table"] == r["table"] and d["parser"] == r["parser"]
        )
    )
    scored = sum(1 for r in wse if r["teds"] is not None)
    print(
        f"wse: words restored {found}/{total} ({found / max(total, 1):.2%}); TEDS above the direct route "
        f"in {better}/{scored} table×parser pairs"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
