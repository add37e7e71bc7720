"""Throughput and output-trust benchmark: pagefleet side by side with its peers, in one run.

    python bench/bench_trust.py CORPUS [--labels LABELS.json] [--workers 2] [--skip-tesseract]

Peers, on the same files and the same machine:
- `pymupdf`: PyMuPDF `get_text()` per page, no gate (what most RAG loaders do);
- `pdftotext`: Poppler per document, pages split on form feeds;
- `tesseract-all`: render every page at 300 DPI and OCR it with `heb+ara+eng` (an OCRmyPDF-style
  force-OCR pipeline), `--workers` pages in parallel.

Each system runs in a fresh child process. For each: wall time, pages/s, the largest resident set of
any one process it ran (workers included), and what reached the output that should not have:
labelled-garbage pages whose garbage text layer was emitted (≥ 80% similar to it), labelled-reversed
pages emitted still reversed, image-only pages emitted empty, pages holding U+FFFD / Private Use /
presentation forms / decomposed lam-alef. pagefleet's refused pages count as not emitted (they are
quarantined in document.json, never in its text or Markdown).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from pagefleet.routing.visual_order import page_order  # noqa: E402
from pagefleet.routing.quality import canonical_violations  # noqa: E402
from pagefleet.workers.store.artifacts import ACCEPTED_ROUTES  # noqa: E402
from pagefleet.workers.cli.evaluate import plain_tesseract  # noqa: E402

Pages = dict[str, list[str | None]]  # file -> page texts (None: not emitted / refused)


def peak_rss_mb() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return max(kids, own) / 1024


def run_pagefleet(files: list[Path], workers: int) -> tuple[Pages, float]:
    out = Path(tempfile.mkdtemp(prefix="bench-pagefleet-"))
    started = time.monotonic()
    subprocess.run(
        [
            str(ROOT / ".venv" / "bin" / "pagefleet"),
            "run",
            *map(str, files),
            "--out",
            str(out),
            "--workers",
            str(workers),
            "--force",
        ],
        capture_output=True,
        check=False,
    )
    wall = time.monotonic() - started
    pages: Pages = {}
    for f in files:
        doc = out / f.stem / "document.json"
        if doc.exists():
            data = json.loads(doc.read_text(encoding="utf-8"))
            pages[f.name] = [
                p["text"] if p["route"] in ACCEPTED_ROUTES else None for p in data["pages"]
            ]
    return pages, wall


def run_pymupdf(files: list[Path]) -> tuple[Pages, float]:
    import pymupdf

    started = time.monotonic()
    pages: Pages = {}
    for f in files:
        try:
            with pymupdf.open(f) as doc:
                pages[f.name] = [p.get_text() for p in doc]
        except Exception:  # noqa: BLE001 - a peer failing on a bad file is a data point
            pages[f.name] = []
    return pages, time.monotonic() - started


def run_pdftotext(files: list[Path]) -> tuple[Pages, float]:
    started = time.monotonic()
    pages: Pages = {}
    for f in files:
        proc = subprocess.run(
            ["pdftotext", "-enc", "UTF-8", "-q", str(f), "-"], capture_output=True, timeout=120
        )
        text = proc.stdout.decode("utf-8", "replace")
        pages[f.name] = text.split("\f")[:-1] if proc.returncode == 0 else []
    return pages, time.monotonic() - started


def _ocr_page(pdf: Path, number: int) -> str:
    import pymupdf

    with tempfile.TemporaryDirectory() as tmp, pymupdf.open(pdf) as doc:
        png = f"{tmp}/p.png"
        doc[number].get_pixmap(dpi=300, colorspace=pymupdf.csGRAY).save(png)
        return plain_tesseract(png, "heb+ara+eng")


def run_tesseract_all(files: list[Path], workers: int) -> tuple[Pages, float]:
    import pymupdf

    started = time.monotonic()
    jobs: list[tuple[str, int, Path]] = []
    pages: Pages = {}
    for f in files:
        try:
            with pymupdf.open(f) as doc:
                n = 0 if doc.needs_pass else doc.page_count
        except Exception:  # noqa: BLE001
            n = 0
        pages[f.name] = [None] * n
        jobs += [(f.name, i, f) for i in range(n)]
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(_ocr_page, path, i): (name, i) for name, i, path in jobs}
        for fut in concurrent.futures.as_completed(futures):
            name, i = futures[fut]
            pages[name][i] = fut.result()
    return pages, time.monotonic() - started


def _layers(files: list[Path]) -> dict[str, list[str]]:
    import pymupdf

    layers = {}
    for f in files:
        try:
            with pymupdf.open(f) as doc:
                layers[f.name] = [p.get_text() for p in doc]
        except Exception:  # noqa: BLE001
            layers[f.name] = []
    return layers


def _same_text(a: str, b: str) -> bool:
    from rapidfuzz import fuzz

    return fuzz.ratio(" ".join(a.split()), " ".join(b.split())) >= 80


def trust(pages: Pages, labels: dict[str, Any], layers: dict[str, list[str]]) -> dict[str, int]:
    counts = {
        "pages": 0,
        "garbage_emitted": 0,
        "reversed_emitted": 0,
        "image_only_empty": 0,
        "bad_chars": 0,
    }
    for name, texts in pages.items():
        label = labels.get(name, {})
        kinds = label.get("pages", "")
        for i, text in enumerate(texts):
            counts["pages"] += 1
            if text is None:
                continue
            kind = kinds[i] if i < len(kinds) else "T"
            layer = layers.get(name, [])
            if (
                label.get("text_layer") == "garbage"
                and i < len(layer)
                and _same_text(text, layer[i])
            ):
                counts["garbage_emitted"] += 1
            if (
                label.get("text_layer") in ("reversed", "partly_reversed")
                and page_order(text, None, from_ocr=False).visual_lines
            ):
                counts["reversed_emitted"] += 1
            if kind == "I" and not text.strip():
                counts["image_only_empty"] += 1
            if canonical_violations(text):
                counts["bad_chars"] += 1
    return counts


SYSTEMS = ("pagefleet", "pymupdf", "pdftotext", "tesseract-all")


def run_one(name: str, files: list[Path], workers: int) -> tuple[Pages, float]:
    if name == "pagefleet":
        return run_pagefleet(files, workers)
    if name == "pymupdf":
        return run_pymupdf(files)
    if name == "pdftotext":
        return run_pdftotext(files)
    return run_tesseract_all(files, workers)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("corpus")
    ap.add_argument("--labels")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--skip-tesseract", action="store_true")
    ap.add_argument("--one", choices=SYSTEMS, help=argparse.SUPPRESS)  # child mode: one system
    ap.add_argument("--result", help=argparse.SUPPRESS)  # child mode: where to write its JSON
    args = ap.parse_args(argv)
    corpus = Path(args.corpus)
    files = sorted(corpus.glob("*.pdf"))
    if args.one:
        pages, wall = run_one(args.one, files, args.workers)
        Path(args.result).write_text(
            json.dumps({"pages": pages, "wall": wall, "rss_mb": peak_rss_mb()}), encoding="utf-8"
        )
        return 0
    labels_path = Path(args.labels) if args.labels else corpus / "LABELS.json"
    labels = json.loads(labels_path.read_text(encoding="utf-8")) if labels_path.exists() else {}
    layers = _layers(files)
    console = Console(width=160)
    table = Table(title=f"{len(files)} files from {corpus}, {args.workers} workers")
    for col in (
        "system",
        "wall s",
        "pages/s",
        "max RSS MB",
        "pages",
        "garbage layer emitted",
        "reversed emitted",
        "image-only empty",
        "U+FFFD/PUA/pres. forms",
    ):
        table.add_column(col, justify="right")
    for name in SYSTEMS:
        if name == "tesseract-all" and args.skip_tesseract:
            continue
        console.print(f"running {name} …")
        with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
            subprocess.run(
                [
                    sys.executable,
                    __file__,
                    str(corpus),
                    "--workers",
                    str(args.workers),
                    "--one",
                    name,
                    "--result",
                    tmp.name,
                ],
                capture_output=True,
                check=True,
            )
            result = json.loads(Path(tmp.name).read_text(encoding="utf-8"))
        wall = result["wall"]
        t = trust(result["pages"], labels, layers)
        table.add_row(
            name,
            f"{wall:.1f}",
            f"{t['pages'] / wall:.2f}" if wall else "-",
            f"{result['rss_mb']:.0f}",
            str(t["pages"]),
            str(t["garbage_emitted"]),
            str(t["reversed_emitted"]),
            str(t["image_only_empty"]),
            str(t["bad_chars"]),
        )
    console.print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
