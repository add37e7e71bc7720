"""`make eval-ocr`: OCR accuracy against known text (bench/ocr_truth.py), side by side in one run.

    pagefleet   the real fleet path: embedded `pagefleet run` (Redis, split, OCR stage, gate) on the
                image-only PDFs; a refused page is scored on its quarantined best reading
    tesseract   plain `tesseract IMAGE - -l LANGS` on the original image, the language data the
                fleet's CPU chain uses for that page (heb+eng, ara+eng, eng)
    ocrmypdf    `ocrmypdf --jobs N --deskew --clean -l LANGS --sidecar` on the same PDFs

pagefleet and ocrmypdf read the same documents: one image-only PDF per language set (heb+eng,
ara+eng, eng), a page per scan.

Metrics per kind of page, DPI and degradation: CER and WER after Unicode and whitespace folding
(and without format characters such as LRM/RLM, which plain Tesseract writes around Latin runs in
RTL lines), and the order-free word-bag error (`pagefleet.workers.cli.evaluate`). Pages/s is wall time with N processes
for every system. Then the fleet's confidence against its CER (the gate's `low_confidence` floor).
The last line is `cer_fleet=X cer_tesseract=Y fleet_pages_per_s=P tesseract_pages_per_s=Q`.

    python -m bench.eval_ocr [--quick] [--workers 2] [--systems fleet,tesseract,ocrmypdf] [--json F]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.ocr_truth import VARIANTS, TruthPage, generate
from pagefleet.workers.cli.error_rates import bag_error, cer, wer

SYSTEMS = ("fleet", "tesseract", "ocrmypdf")
CER_GOAL = 0.15  # the gate should refuse pages whose CER would exceed this


@dataclass
class Reading:
    text: str
    confidence: float | None = None
    accepted: bool = True
    reasons: list[str] = field(default_factory=list)


@dataclass
class SystemRun:
    readings: dict[str, Reading]
    seconds: float
    cpu_seconds: float = (
        0.0  # CPU time of the processes it started (less noisy on a shared machine)
    )

    def pages_per_s(self) -> float:
        return len(self.readings) / self.seconds if self.seconds else 0.0

    def cpu_per_page(self) -> float:
        return self.cpu_seconds / len(self.readings) if self.readings else 0.0


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(run: Callable[[], SystemRun]) -> SystemRun:
    """A system's run with the CPU time its child processes used (every system reads in children)."""
    before = children_cpu()
    result = run()
    result.cpu_seconds = children_cpu() - before
    return result


def documents(
    pages: list[TruthPage], truth_dir: Path, work: Path
) -> list[tuple[str, Path, list[TruthPage]]]:
    """One multi-page image-only PDF per language set: the documents pagefleet and ocrmypdf read."""
    import pymupdf

    grouped: dict[str, list[TruthPage]] = {}
    for p in pages:
        grouped.setdefault(p.langs, []).append(p)
    docs = []
    for langs, group in grouped.items():
        path = work / f"scans_{langs.replace('+', '_')}.pdf"
        doc = pymupdf.open()
        for p in group:
            with pymupdf.open(truth_dir / p.pdf) as one:
                doc.insert_pdf(one)
        doc.save(path, no_new_id=True)
        doc.close()
        docs.append((langs, path, group))
    return docs


def run_fleet(docs: list[tuple[str, Path, list[TruthPage]]], work: Path, workers: int) -> SystemRun:
    from pagefleet.workers.cli.run import run
    from pagefleet.workers.settings import Options

    out = work / "fleet_out"
    console = Console(stderr=True, quiet=True)
    started = time.monotonic()
    run(
        [str(path) for _, path, _ in docs],
        str(out),
        Options(),
        workers=workers,
        broker=None,
        force=True,
        console=console,
    )
    seconds = time.monotonic() - started
    readings = {}
    for _, path, group in docs:
        doc_path = out / path.stem / "document.json"
        document = json.loads(doc_path.read_text(encoding="utf-8")) if doc_path.exists() else {}
        for i, p in enumerate(group):
            readings[p.id] = fleet_reading(document, i)
    return SystemRun(readings, seconds)


def fleet_reading(document: dict[str, Any], index: int) -> Reading:
    """The fleet's text for a page: accepted text, or the quarantined preview of a refused page."""
    if len(document.get("pages", [])) <= index:
        return Reading("", accepted=False, reasons=["no_document"])
    page = document["pages"][index]
    accepted = not page.get("needs_review") and page.get("route") == "ocr"
    text = page.get("text", "") if accepted else (page.get("review_preview") or {}).get("text", "")
    confidence = page.get("ocr_confidence")
    if confidence is None:
        confidence = page.get("quality", {}).get("metrics", {}).get("ocr_confidence")
    reasons = sorted({r for a in page.get("attempts", []) for r in a.get("reasons", [])})
    return Reading(text, confidence, accepted, reasons if not accepted else [])


def _tesseract_one(png: Path, langs: str) -> str:
    env = dict(os.environ, OMP_THREAD_LIMIT="1")
    proc = subprocess.run(
        ["tesseract", str(png), "-", "-l", langs],
        capture_output=True,
        timeout=600,
        env=env,
        check=False,
    )
    return proc.stdout.decode("utf-8", "replace")


def run_tesseract(pages: list[TruthPage], truth_dir: Path, workers: int) -> SystemRun:
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        texts = list(pool.map(lambda p: _tesseract_one(truth_dir / p.png, p.langs), pages))
    seconds = time.monotonic() - started
    return SystemRun({p.id: Reading(t) for p, t in zip(pages, texts)}, seconds)


def run_ocrmypdf(docs: list[tuple[str, Path, list[TruthPage]]], work: Path, jobs: int) -> SystemRun:
    readings: dict[str, Reading] = {}
    seconds = 0.0
    for langs, src, group in docs:
        out, sidecar = work / f"{src.stem}.ocrmypdf.pdf", work / f"{src.stem}.ocrmypdf.txt"
        cmd = [
            sys.executable,
            "-m",
            "ocrmypdf",
            "--jobs",
            str(jobs),
            "--deskew",
            "--clean",
            "-l",
            langs,
            "--sidecar",
            str(sidecar),
            "--output-type",
            "pdf",
            "--optimize",
            "0",
            "--quiet",
            str(src),
            str(out),
        ]
        started = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, timeout=3600, check=False)
        seconds += time.monotonic() - started
        if proc.returncode != 0 or not sidecar.exists():
            raise RuntimeError(
                f"ocrmypdf failed ({proc.returncode}): {proc.stderr.decode()[-500:]}"
            )
        texts = sidecar.read_text(encoding="utf-8").split("\f")
        for i, p in enumerate(group):
            readings[p.id] = Reading(texts[i] if i < len(texts) else "")
    return SystemRun(readings, seconds)


def degradations(variant_name: str) -> list[str]:
    v = next(v for v in VARIANTS if v.name == variant_name)
    found = [
        name
        for name, on in (
            ("blur", v.blur),
            ("noise", v.noise),
            ("skew", v.skew),
            ("jpeg", v.jpeg),
            ("low contrast", v.contrast < 1),
            ("show-through", v.show_through),
        )
        if on
    ]
    return found or ["clean"]


def strip_marks(text: str) -> str:
    """Without format characters (LRM/RLM around Latin runs: Tesseract writes them, the fleet's
    repair drops them), so the comparison is about reading, not about invisible marks."""
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def score(pages: list[TruthPage], runs: dict[str, SystemRun]) -> list[dict[str, Any]]:
    rows = []
    for p in pages:
        row: dict[str, Any] = {
            "id": p.id,
            "kind": p.kind,
            "dpi": p.dpi,
            "degradations": degradations(p.variant),
        }
        for name, result in runs.items():
            reading = result.readings.get(p.id, Reading("", accepted=False))
            text = strip_marks(reading.text)
            row[name] = {
                "cer": cer(text, p.text),
                "wer": wer(text, p.text),
                "bag": bag_error(text, p.text),
                "confidence": reading.confidence,
                "accepted": reading.accepted,
                "reasons": reading.reasons,
            }
        rows.append(row)
    return rows


def groups(rows: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Rows per kind of page, per DPI, per degradation, and all together."""
    out: list[tuple[str, list[dict[str, Any]]]] = []
    for kind in ("he", "ar", "en", "mixed_he", "mixed_ar"):
        out.append((f"script {kind}", [r for r in rows if r["kind"] == kind]))
    for dpi in (150, 200, 300):
        out.append((f"{dpi} dpi", [r for r in rows if r["dpi"] == dpi]))
    for name in ("clean", "blur", "noise", "skew", "jpeg", "low contrast", "show-through"):
        out.append((name, [r for r in rows if name in r["degradations"]]))
    out.append(("all", rows))
    return [(label, members) for label, members in out if members]


def mean(rows: list[dict[str, Any]], system: str, metric: str) -> float:
    values = [r[system][metric] for r in rows if system in r]
    return sum(values) / len(values) if values else float("nan")


SHORT = {"fleet": "fleet", "tesseract": "tess", "ocrmypdf": "omp"}


def print_table(console: Console, rows: list[dict[str, Any]], runs: dict[str, SystemRun]) -> None:
    table = Table(title="OCR against known text (tess = plain tesseract, omp = ocrmypdf)")
    table.add_column("pages")
    table.add_column("n", justify="right")
    for metric in ("CER", "WER", "bag"):
        for name in runs:
            table.add_column(f"{metric} {SHORT.get(name, name)}", justify="right")
    if "fleet" in runs:
        table.add_column("fleet acc.", justify="right")
    for label, members in groups(rows):
        cells = [
            f"{mean(members, s, metric):.3f}" for metric in ("cer", "wer", "bag") for s in runs
        ]
        if "fleet" in runs:
            cells.append(str(sum(r["fleet"]["accepted"] for r in members)))
        table.add_row(label, str(len(members)), *cells)
    table.add_section()
    table.add_row("pages/s", "", *(f"{run.pages_per_s():.3f}" for run in runs.values()))
    table.add_row("CPU s/page", "", *(f"{run.cpu_per_page():.2f}" for run in runs.values()))
    console.print(table)


def calibration(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Fleet confidence against CER: the lowest confidence floor above which no benchmark page's CER
    exceeds CER_GOAL, and what each candidate floor would accept."""
    points = sorted(
        (r["fleet"]["confidence"], r["fleet"]["cer"])
        for r in rows
        if "fleet" in r and r["fleet"]["confidence"] is not None
    )
    bad = [conf for conf, c in points if c > CER_GOAL]
    floor = (max(bad) + 0.01) if bad else (points[0][0] if points else None)
    curve = []
    for threshold in (40, 50, 60, 65, 70, 75, 80, 85, 90):
        kept = [c for conf, c in points if conf >= threshold]
        curve.append(
            {
                "floor": threshold,
                "accepted": len(kept),
                "over_goal": sum(c > CER_GOAL for c in kept),
                "mean_cer": sum(kept) / len(kept) if kept else None,
            }
        )
    return {"points": points, "safe_floor": floor, "curve": curve}


def print_calibration(console: Console, calib: dict[str, Any]) -> None:
    table = Table(title=f"fleet confidence floor vs pages with CER > {CER_GOAL}")
    for col in ("floor", "accepted", f"of them CER > {CER_GOAL}", "mean CER accepted"):
        table.add_column(col, justify="right")
    for c in calib["curve"]:
        table.add_row(
            str(c["floor"]),
            str(c["accepted"]),
            str(c["over_goal"]),
            "-" if c["mean_cer"] is None else f"{c['mean_cer']:.3f}",
        )
    console.print(table)
    console.print(f"lowest floor with no accepted page over CER {CER_GOAL}: {calib['safe_floor']}")


def evaluate(
    work: Path, *, quick: bool, seed: int, workers: int, systems: tuple[str, ...]
) -> dict[str, Any]:
    truth_dir = work / "truth"
    pages = generate(truth_dir, seed=seed, quick=quick)
    docs = documents(pages, truth_dir, work)
    runs: dict[str, SystemRun] = {}
    if "fleet" in systems:
        runs["fleet"] = timed(lambda: run_fleet(docs, work, workers))
    if "tesseract" in systems:
        runs["tesseract"] = timed(lambda: run_tesseract(pages, truth_dir, workers))
    if "ocrmypdf" in systems:
        runs["ocrmypdf"] = timed(lambda: run_ocrmypdf(docs, work, workers))
    rows = score(pages, runs)
    return {"rows": rows, "runs": runs}


def closing_line(rows: list[dict[str, Any]], runs: dict[str, SystemRun]) -> str:
    def pps(name: str) -> float:
        return runs[name].pages_per_s() if name in runs else float("nan")

    return (
        f"cer_fleet={mean(rows, 'fleet', 'cer'):.4f} cer_tesseract={mean(rows, 'tesseract', 'cer'):.4f} "
        f"fleet_pages_per_s={pps('fleet'):.4f} tesseract_pages_per_s={pps('tesseract'):.4f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="OCR accuracy against known text")
    parser.add_argument(
        "--quick", action="store_true", help="16 pages (every kind, DPI and degradation)"
    )
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--workers", type=int, default=2, help="processes for every system")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--work", help="folder for pages and outputs (default: a temporary folder)")
    parser.add_argument("--json", help="also write every page's figures here")
    args = parser.parse_args()
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="pagefleet-eval-ocr-"))
    systems = tuple(s.strip() for s in args.systems.split(",") if s.strip())
    result = evaluate(work, quick=args.quick, seed=args.seed, workers=args.workers, systems=systems)
    rows, runs = result["rows"], result["runs"]
    console = Console(width=160)
    print_table(console, rows, runs)
    if "fleet" in runs:
        calib = calibration(rows)
        print_calibration(console, calib)
    if args.json:
        speed = {
            k: {"pages_per_s": v.pages_per_s(), "cpu_s_per_page": v.cpu_per_page()}
            for k, v in runs.items()
        }
        Path(args.json).write_text(
            json.dumps({"rows": rows, "speed": speed}, ensure_ascii=False, indent=1),
            encoding="utf-8",
        )
    print(closing_line(rows, runs))


if __name__ == "__main__":
    main()
