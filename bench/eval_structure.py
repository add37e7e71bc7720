"""`make eval-structure`: headings, tables and reading order against known structure, pagefleet
and pymupdf4llm side by side in one run.

    pagefleet    the split's rung 1 as the fleet runs it: sandboxed probe + extraction with the
                 page layout, the gate, blocks, the table check against Poppler (fail closed);
                 a refused page counts as giving nothing
    pymupdf4llm  `pymupdf4llm.to_markdown(page_chunks=True, use_ocr=False)`, its Markdown parsed
                 (markdown-it-py) into headings, paragraphs and GFM tables as written

Documents: fixtures/make_structure_fixtures.py (Hebrew, Arabic, English, mixed; one and two
columns; ruled and unruled tables; RTL tables with numeric columns; running headers), scored by
bench/structure_score.py, plus the corpus tables (no cell truth: tables found, the fleet's verdict
and agreement with Poppler). Pages/s is wall time over every document; pymupdf4llm runs first in a
process of its own (its layout mode changes PyMuPDF process-wide), each system warmed up once.
The last line is
`heading_f1=X table_cell_acc=Y pymupdf4llm_table_cell_acc=Z pages_per_s=P pymupdf4llm_pages_per_s=Q`.

    python -m bench.eval_structure [--fixtures fixtures/structure] [--corpus ../shared/corpus] [--json F]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.structure_score import Prediction, f1, heading_counts, order_pairs, table_cells
from pagefleet.routing.structure.mdparse import markdown_blocks
from pagefleet.workers.store.artifacts import ACCEPTED_ROUTES

ROOT = Path(__file__).resolve().parent.parent
CORPUS_TABLES = (
    "he_macro_table_ghostscript",
    "ar_tunisia_stats_table",
    "he_pdfcpu_table_rtl_niqqud",
)
BODY = ("heading", "paragraph", "list_item")


def pagefleet_pages(pdf: Path) -> list[Any]:
    """Rung 1 + structure for every page, as `pagefleet.workers.split.pages.split_document` runs it."""
    from pagefleet.workers.ladder import structure
    from pagefleet.workers.ladder.textlayer import decide_page
    from pagefleet.workers.pdf import source
    from pagefleet.workers.settings import Options, get_settings

    options, settings = Options(ocr="off"), get_settings()
    src = source.local_source(str(pdf), options)
    src = source.SourceFile(path=src.path, filename=pdf.name, bytes=src.bytes, sha256=src.sha256)
    info = source.inspect(src, options, settings)
    pages = source.extract_pages(
        src, info["page_count"], settings, already=info.pop("pages", None), structure=True
    )
    layout = structure.document_layout(pages)
    records = []
    for page in pages:
        record = decide_page(page, ocr="off", gpu=False)
        if hasattr(record, "route") and record.route in ("text_layer", "text_layer_repaired"):
            record = structure.structure_page(record, page, layout, src.path)
        records.append(record)
    return records


def pagefleet_prediction(record: Any) -> Prediction:
    if getattr(record, "route", None) not in ACCEPTED_ROUTES:
        return Prediction([], [], [])
    blocks = record.blocks
    return Prediction(
        [b.text for b in blocks if b.type == "heading"],
        [b.text for b in blocks if b.type in BODY],
        [b.table.rows for b in blocks if b.type == "table" and b.table],
    )


def pymupdf4llm_predictions(pdf: Path) -> list[Prediction]:
    import pymupdf4llm

    with contextlib.redirect_stdout(io.StringIO()):
        chunks = pymupdf4llm.to_markdown(
            str(pdf), page_chunks=True, use_ocr=False, show_progress=False
        )
    out = []
    for chunk in chunks:
        parsed = markdown_blocks(chunk["text"])
        out.append(
            Prediction(
                [b.text for b in parsed if b.type == "heading"],
                [b.text for b in parsed if b.type in BODY],
                [b.rows for b in parsed if b.type == "table"],
            )
        )
    return out


Results = dict[str, tuple[list[Any], float]]  # pdf -> (pages or predictions, seconds)


def peer_main(pdfs: list[str]) -> int:
    """Child mode (`--peer`): pymupdf4llm on every PDF, warmed up on the first, timed per document.
    In its own process: its layout mode changes PyMuPDF process-wide, and its size would slow the
    fleet's subprocess starts in a shared process."""
    pymupdf4llm_predictions(Path(pdfs[0]))
    out: dict[str, Any] = {}
    cpu = time.process_time()
    for pdf in pdfs:
        pages, seconds = _timed(pymupdf4llm_predictions, Path(pdf))
        out[pdf] = {"seconds": seconds, "pages": [asdict(p) for p in pages]}
    cpu = time.process_time() - cpu
    sys.stdout.write(json.dumps({"documents": out, "cpu_s": cpu}, ensure_ascii=False))
    return 0


def run_peer(pdfs: list[Path]) -> tuple[Results, float]:
    """pymupdf4llm's predictions per document, and the CPU seconds its process spent on them."""
    proc = subprocess.run(
        [sys.executable, "-m", "bench.eval_structure", "--peer", *map(str, pdfs)],
        capture_output=True,
        timeout=3600,
        check=True,
        cwd=ROOT,
    )
    data = json.loads(proc.stdout.decode("utf-8"))
    return (
        {
            pdf: ([Prediction(**p) for p in v["pages"]], v["seconds"])
            for pdf, v in data["documents"].items()
        },
        float(data["cpu_s"]),
    )


def _warm(pdf: str) -> None:
    """A pool process's start: imports and its sandbox's fork server, outside the clock."""
    pagefleet_pages(Path(pdf))


def _started(_: int) -> None:
    time.sleep(
        0.3
    )  # one per pool process: every process has started (and warmed up) before the clock


def _pagefleet_timed(pdf: str) -> tuple[str, list[Any], float]:
    records, seconds = _timed(pagefleet_pages, Path(pdf))
    return pdf, records, seconds


def run_pagefleet(pdfs: list[Path], jobs: int) -> tuple[Results, float]:
    """Every document through rung 1 + structure, `jobs` documents at a time (the fleet's pool
    processes, one sandbox each); returns per document (records, seconds) and the wall time."""
    names = [str(p) for p in pdfs]
    if jobs <= 1:
        _warm(names[0])
        started = time.perf_counter()
        results = [_pagefleet_timed(name) for name in names]
    else:
        with ProcessPoolExecutor(jobs, initializer=_warm, initargs=(names[0],)) as pool:
            list(pool.map(_started, range(jobs)))
            started = time.perf_counter()
            results = list(pool.map(_pagefleet_timed, names))
    wall = time.perf_counter() - started
    return {pdf: (records, t) for pdf, records, t in results}, wall


def score(
    truth: dict[str, Any], predictions: list[Prediction], totals: dict[str, list[int]]
) -> None:
    rtl = "rtl" if truth["rtl"] else "ltr"
    for page, pred in zip(truth["pages"], predictions):
        heads = [b["text"] for b in page["blocks"] if b["type"] == "heading"]
        for key, value in zip(("h_tp", "h_pred", "h_truth"), heading_counts(heads, pred.headings)):
            totals[key][0] += value
        for table in (b for b in page["blocks"] if b["type"] == "table"):
            right, cells = table_cells(table["rows"], pred.tables)
            for key in ("cells", f"cells_{rtl}"):
                totals[key][0] += right
                totals[key][1] += cells
        ordered, pairs = order_pairs(
            [b["text"] for b in page["blocks"] if b["type"] != "table"], pred.blocks
        )
        totals["order"][0] += ordered
        totals["order"][1] += pairs


def _timed(fn: Any, *args: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - started


def _ratio(pair: list[int]) -> float:
    return pair[0] / pair[1] if pair[1] else 0.0


def run_generated(
    fixtures: Path, ours: Results, peer: Results, console: Console
) -> tuple[dict[str, dict[str, list[int]]], int]:
    totals: dict[str, dict[str, list[int]]] = {
        s: defaultdict(lambda: [0, 0]) for s in ("pagefleet", "pymupdf4llm")
    }
    pages = 0
    for truth_file in sorted(fixtures.glob("*.truth.json")):
        truth = json.loads(truth_file.read_text(encoding="utf-8"))
        pdf = fixtures / f"{truth['name']}.pdf"
        records, t1 = ours[str(pdf)]
        theirs, t2 = peer[str(pdf)]
        pages += len(truth["pages"])
        score(truth, [pagefleet_prediction(r) for r in records], totals["pagefleet"])
        score(truth, theirs, totals["pymupdf4llm"])
        console.print(
            f"{truth['name']}: pagefleet {t1:.2f}s, pymupdf4llm {t2:.2f}s, routes "
            f"{[getattr(r, 'route', 'pending') for r in records]}"
        )
    return totals, pages


def _poppler_page(pdf: Path, number: int) -> str:
    proc = subprocess.run(
        ["pdftotext", "-f", str(number), "-l", str(number), "-layout", "-q", str(pdf), "-"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    return proc.stdout.decode("utf-8", "replace")


def run_corpus(corpus: Path, fleet: Results, peer: Results) -> tuple[list[list[str]], int]:
    from pagefleet.routing.structure.tables import cell_agreement

    rows, pages = [], 0
    for name in CORPUS_TABLES:
        pdf = corpus / f"{name}.pdf"
        if not pdf.exists():
            rows.append([name, "missing", "", "", ""])
            continue
        records, _ = fleet[str(pdf)]
        theirs, _ = peer[str(pdf)]
        pages += len(records)
        routes = defaultdict(int)
        for r in records:
            routes[
                "+".join(getattr(r, "quality").reasons) or r.route
                if hasattr(r, "quality")
                else "pending"
            ] += 1
        ours = sum(len(pagefleet_prediction(r).tables) for r in records)
        agree = [
            cell_agreement([c for t in p.tables for row in t for c in row], _poppler_page(pdf, n))[
                0
            ]
            for n, p in enumerate(theirs, 1)
            if p.tables
        ]
        rows.append(
            [
                name,
                ", ".join(f"{k}={v}" for k, v in routes.items()),
                str(ours),
                str(sum(len(p.tables) for p in theirs)),
                f"{min(agree):.2f}" if agree else "-",
            ]
        )
    return rows, pages


def report(
    totals: dict[str, dict[str, list[int]]], speed: dict[str, float], console: Console
) -> dict[str, float]:
    table = Table(title="structure: generated documents (truth known)")
    for col in (
        "system",
        "heading F1",
        "cell acc (all)",
        "cell acc RTL",
        "cell acc LTR",
        "reading order",
        "pages/s",
    ):
        table.add_column(col)
    out: dict[str, float] = {}
    for system, t in totals.items():
        hf1 = f1(t["h_tp"][0], t["h_pred"][0], t["h_truth"][0])
        cells = _ratio(t["cells"])
        out[system] = cells
        out[f"{system}_f1"] = hf1
        table.add_row(
            system,
            f"{hf1:.3f}",
            f"{cells:.3f}",
            f"{_ratio(t['cells_rtl']):.3f}",
            f"{_ratio(t['cells_ltr']):.3f}",
            f"{_ratio(t['order']):.3f}",
            f"{speed[system]:.1f}",
        )
    console.print(table)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--fixtures", type=Path, default=ROOT / "fixtures" / "structure")
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="pagefleet documents at a time (default: one per core, as the fleet's pool; "
        "pymupdf4llm's layout model uses the cores by itself)",
    )
    parser.add_argument(
        "--peer", nargs="+", help=argparse.SUPPRESS
    )  # child mode: pymupdf4llm alone
    args = parser.parse_args(argv)
    if args.peer:
        return peer_main(args.peer)
    console = Console(stderr=True)
    if not any(args.fixtures.glob("*.truth.json")):
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "fixtures" / "make_structure_fixtures.py"),
                str(args.fixtures),
            ],
            check=True,
            timeout=300,
        )
    pdfs = sorted(args.fixtures.glob("*.pdf")) + [
        p for n in CORPUS_TABLES if (p := args.corpus / f"{n}.pdf").exists()
    ]
    peer, peer_cpu = run_peer(pdfs)  # first, alone: the two systems never share the CPU
    ours, wall = run_pagefleet(pdfs, args.jobs)
    totals, pages = run_generated(args.fixtures, ours, peer, console)
    corpus_rows, corpus_pages = run_corpus(args.corpus, ours, peer)
    pages += corpus_pages
    peer_wall = sum(t for _, t in peer.values())
    speed = {"pagefleet": pages / max(wall, 1e-9), "pymupdf4llm": pages / max(peer_wall, 1e-9)}
    out = report(totals, speed, console)
    console.print(
        f"pagefleet: {args.jobs} document(s) at a time, {wall:.2f} s wall; pymupdf4llm: one process, "
        f"{peer_wall:.2f} s wall, {peer_cpu / max(peer_wall, 1e-9):.2f} cores busy on average"
    )
    corpus = Table(title="corpus tables (no cell truth)")
    for col in (
        "document",
        "pagefleet pages",
        "pagefleet tables",
        "pymupdf4llm tables",
        "pymupdf4llm cells vs Poppler",
    ):
        corpus.add_column(col)
    for row in corpus_rows:
        corpus.add_row(*row)
    console.print(corpus)
    line = (
        f"heading_f1={out['pagefleet_f1']:.3f} table_cell_acc={out['pagefleet']:.3f} "
        f"pymupdf4llm_table_cell_acc={out['pymupdf4llm']:.3f} pages_per_s={speed['pagefleet']:.1f} "
        f"pymupdf4llm_pages_per_s={speed['pymupdf4llm']:.1f}"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "totals": totals,
                    "speed": speed,
                    "corpus": corpus_rows,
                    "jobs": args.jobs,
                    "pymupdf4llm_cores": peer_cpu / max(peer_wall, 1e-9),
                },
                indent=1,
            )
        )
    print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
