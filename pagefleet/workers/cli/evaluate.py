"""`pagefleet eval CORPUS --labels LABELS.json`: the accuracy benchmark, one table.

1. Gate verdicts: every labelled page is run through the fleet (embedded default) and its route is
   judged against the label: `good`/`needs_normalization`/`bidi_scrambled` must be accepted from
   the text layer; `reversed`/`partly_reversed` accepted only after order repair (or OCR'd);
   `garbage`/`none` never accepted from the text layer; `expect_error` files give that code.
2. Reversed-text detection: page level on the labelled corpus, and line level on every RTL line of
   the corpus's accepted text layers, each in its logical form (negative) and mirrored the way an
   unshaped producer stores it (positive) — precision and recall.
3. OCR CER on synthetic scans: pages with a good text layer are rendered to image-only PDFs at
   300 DPI; reference = the page's accepted text layer (NFKC + repairs), whitespace folded. The
   fleet reads them (routing, engine chain, gate, repair) side by side with plain `tesseract` on the
   same images (`-l eng`, Tesseract's default, and `-l heb+ara+eng`, a peer that knows every script).
   Besides CER (order-sensitive: a table read row by row differs from a layer stored column by
   column), the "bag" column gives 1 − F1 of word multisets (fleet / eng / heb+ara+eng).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from pagefleet.routing.visual_order import page_order
from pagefleet.routing.mirrored_lines import visual_to_logical
from pagefleet.workers.cli.error_rates import bag_error, cer, fold
from pagefleet.workers.store.artifacts import TEXT_LAYER_ROUTES as FROM_LAYER
from pagefleet.workers.settings import Options

TEXT_OK = {"good", "needs_normalization", "bidi_scrambled"}
REVERSED = {"reversed", "partly_reversed"}

_RTL_RUN = re.compile(
    r"[\u0590-\u05ff\u0600-\u06ff\ufb1d-\ufdff\ufe70-\ufeff][\u0590-\u05ff\u0600-\u06ff\ufb1d-\ufdff\ufe70-\ufeff\s]*"
)


def judge_page(label: str, route: str, reasons_seen: list[str]) -> tuple[str, bool]:
    """What the label demands, and whether the route satisfies it."""
    if label in TEXT_OK:
        return "accept from text layer", route in FROM_LAYER
    if label in REVERSED:
        repaired = route == "text_layer_repaired" and "visual_order_rtl" in reasons_seen
        return "repair order or OCR", repaired or route == "ocr"
    if label == "garbage":
        return "never accept text layer", route not in FROM_LAYER
    if label == "none":
        return "OCR", route == "ocr"
    return "?", False


def mirror_line(line: str) -> str:
    """How an unshaped producer's line comes out of a position-ordered extractor: every RTL run
    reversed in place (numbers and Latin keep their order). The in-place run reversal is its own
    inverse, so the repair's own function mirrors a logical line."""
    return visual_to_logical(line)


def _run_fleet(inputs: list[Path], out: Path, console: Console, workers: int) -> None:
    from pagefleet.workers.cli.run import run

    run(
        [str(p) for p in inputs],
        str(out),
        Options(),
        workers=workers,
        broker=None,
        force=True,
        console=console,
    )


def _documents(out: Path) -> dict[str, dict[str, Any]]:
    docs = {}
    for path in sorted(out.glob("*/document.json")):
        docs[path.parent.name] = json.loads(path.read_text(encoding="utf-8"))
    for path in sorted(out.glob("*/error.json")):
        docs[path.parent.name] = {"error": json.loads(path.read_text(encoding="utf-8"))}
    return docs


def gate_section(
    labels: dict[str, Any], docs: dict[str, dict[str, Any]]
) -> tuple[list[list[str]], Counter[str]]:
    rows: list[list[str]] = []
    tally: Counter[str] = Counter()
    for name, label in sorted(labels.items()):
        doc = docs.get(Path(name).stem, {})
        if label.get("expect_error"):
            got = doc.get("error", {}).get("code")
            ok = got == label["expect_error"]
            tally["ok" if ok else "wrong"] += 1
            rows.append(
                [
                    name,
                    "-",
                    f"error {label['expect_error']}",
                    f"error {got}",
                    "ok" if ok else "WRONG",
                ]
            )
            continue
        pages = doc.get("pages", [])
        page_labels = label.get("pages", "")
        for page in pages:
            kind = page_labels[page["number"] - 1] if page["number"] <= len(page_labels) else "?"
            layer_label = "none" if kind == "I" else label["text_layer"]
            seen = [r for a in page["attempts"] for r in a["reasons"]] + page["quality"]["warnings"]
            if "visual_order_repaired" in page["quality"]["warnings"]:
                seen.append("visual_order_rtl")
            want, ok = judge_page(layer_label, page["route"], seen)
            tally["ok" if ok else "wrong"] += 1
            rows.append(
                [
                    name,
                    str(page["number"]),
                    f"{layer_label}: {want}",
                    page["route"],
                    "ok" if ok else "WRONG",
                ]
            )
        if len(pages) != len(page_labels):
            tally["wrong"] += 1
            rows.append([name, "*", f"{len(page_labels)} pages", f"{len(pages)} pages", "WRONG"])
    return rows, tally


def reversal_section(labels: dict[str, Any], docs: dict[str, dict[str, Any]]) -> dict[str, float]:
    tp = fp = fn = tn = 0
    lines: list[str] = []
    for name, label in labels.items():
        doc = docs.get(Path(name).stem, {})
        for page in doc.get("pages", []):
            warnings = page["quality"]["warnings"]
            predicted = "visual_order_repaired" in warnings or any(
                "visual_order_rtl" in a["reasons"] for a in page["attempts"]
            )
            actual = label.get("text_layer") in REVERSED
            tp, fp = tp + (predicted and actual), fp + (predicted and not actual)
            fn, tn = fn + (actual and not predicted), tn + (not actual and not predicted)
            if label.get("text_layer") in TEXT_OK and page["route"] in FROM_LAYER:
                lines += [
                    ln
                    for ln in page["text"].split("\n")
                    if len(_RTL_RUN.findall(ln)) and len(ln.split()) >= 2
                ]
    ltp = lfp = lfn = 0
    for line in lines:
        mirrored = mirror_line(line)
        if mirrored == line:
            continue
        lfp += page_order(line, None, from_ocr=False).visual_lines > 0
        got = page_order(mirrored, None, from_ocr=False).visual_lines > 0
        ltp, lfn = ltp + got, lfn + (not got)
    return {
        "page_tp": tp,
        "page_fp": fp,
        "page_fn": fn,
        "page_tn": tn,
        "page_precision": tp / max(tp + fp, 1),
        "page_recall": tp / max(tp + fn, 1),
        "lines": len(lines),
        "line_precision": ltp / max(ltp + lfp, 1),
        "line_recall": ltp / max(ltp + lfn, 1),
    }


def _pick_scan_pages(
    labels: dict[str, Any], docs: dict[str, dict[str, Any]], per_file: int
) -> list[tuple[str, int, str]]:
    picks = []
    for name, label in sorted(labels.items()):
        if label.get("text_layer") not in ("good", "needs_normalization") or label.get(
            "script"
        ) not in ("he", "ar", "en"):
            continue
        pages = [
            p
            for p in docs.get(Path(name).stem, {}).get("pages", [])
            if p["route"] in FROM_LAYER and len(fold(p["text"])) >= 200
        ]
        for page in pages[:per_file]:
            picks.append((name, page["number"], page["text"]))
    return picks


def plain_tesseract(png: str, lang: str) -> str:
    """A peer: Tesseract's CLI with nothing around it (no routing, gate or repair)."""
    proc = subprocess.run(
        ["tesseract", png, "-", "-l", lang],
        capture_output=True,
        timeout=300,
        env={"OMP_THREAD_LIMIT": "1", "PATH": "/usr/bin:/bin:/usr/local/bin"},
        check=False,
    )
    return proc.stdout.decode("utf-8", "replace")


def cer_section(
    corpus: Path, picks: list[tuple[str, int, str]], work: Path, console: Console, workers: int
) -> list[dict[str, Any]]:
    import pymupdf

    scans = work / "scans"
    scans.mkdir(parents=True, exist_ok=True)
    items = []
    for name, number, reference in picks:
        src = pymupdf.open(corpus / name)
        pix = src[number - 1].get_pixmap(dpi=300, colorspace=pymupdf.csGRAY)
        stem = f"{Path(name).stem}__p{number}"
        png = scans / f"{stem}.png"
        pix.save(png)
        doc = pymupdf.open()
        page = doc.new_page(width=src[number - 1].rect.width, height=src[number - 1].rect.height)
        page.insert_image(page.rect, filename=str(png))
        doc.save(scans / f"{stem}.pdf")
        items.append(
            {"file": name, "page": number, "stem": stem, "png": str(png), "reference": reference}
        )
    out = work / "scan_out"
    _run_fleet([scans / f"{i['stem']}.pdf" for i in items], out, console, workers)
    for item in items:
        document = json.loads((out / item["stem"] / "document.json").read_text(encoding="utf-8"))
        fleet_page = document["pages"][0]
        text = fleet_page["text"] if fleet_page["route"] == "ocr" else ""
        plain_eng, plain_all = (
            plain_tesseract(item["png"], "eng"),
            plain_tesseract(item["png"], "heb+ara+eng"),
        )
        ref = item["reference"]
        item.update(
            engine=fleet_page.get("engine"),
            route=fleet_page["route"],
            fleet=cer(text, ref),
            plain_eng=cer(plain_eng, ref),
            plain_all=cer(plain_all, ref),
            fleet_bag=bag_error(text, ref),
            plain_eng_bag=bag_error(plain_eng, ref),
            plain_all_bag=bag_error(plain_all, ref),
        )
    return items


def evaluate(
    corpus: Path,
    labels_path: Path,
    *,
    results: Path | None,
    workers: int,
    scan_pages: int,
    console: Console,
) -> dict[str, Any]:
    labels = json.loads(labels_path.read_text(encoding="utf-8"))
    work = Path(tempfile.mkdtemp(prefix="pagefleet-eval-"))
    if results is None:
        results = work / "corpus_out"
        _run_fleet([corpus / name for name in sorted(labels)], results, console, workers)
    docs = _documents(results)
    rows, tally = gate_section(labels, docs)
    reversal = reversal_section(labels, docs)
    cers = (
        cer_section(corpus, _pick_scan_pages(labels, docs, scan_pages), work, console, workers)
        if scan_pages
        else []
    )
    _print(console, rows, tally, reversal, cers)
    return {"gate": {"rows": rows, **tally}, "reversal": reversal, "cer": cers}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _print(
    console: Console,
    rows: list[list[str]],
    tally: Counter[str],
    reversal: dict[str, float],
    cers: list[dict[str, Any]],
) -> None:
    table = Table(title="pagefleet eval", show_lines=False)
    for col in ("file", "page", "label → demand", "got", "verdict"):
        table.add_column(col)
    for row in rows:
        table.add_row(*row)
    table.add_section()
    table.add_row("gate verdicts", "", f"{tally['ok']} ok / {tally['ok'] + tally['wrong']}", "", "")
    table.add_row(
        "reversed pages",
        "",
        f"precision {reversal['page_precision']:.3f} recall {reversal['page_recall']:.3f}",
        f"tp={reversal['page_tp']} fp={reversal['page_fp']} fn={reversal['page_fn']}",
        "",
    )
    table.add_row(
        "reversed lines (synthetic)",
        "",
        f"precision {reversal['line_precision']:.3f} recall {reversal['line_recall']:.3f}",
        f"{reversal['lines']} lines",
        "",
    )
    table.add_section()
    for item in cers:
        table.add_row(
            f"CER {item['file']}",
            str(item["page"]),
            f"fleet {item['fleet']:.3f} ({item['engine']})",
            f"plain eng {item['plain_eng']:.3f} / heb+ara+eng {item['plain_all']:.3f}",
            f"bag {item['fleet_bag']:.2f}/{item['plain_eng_bag']:.2f}/{item['plain_all_bag']:.2f}",
        )
    if cers:
        table.add_row(
            "mean CER",
            "",
            f"fleet {_mean([c['fleet'] for c in cers]):.3f}",
            f"plain eng {_mean([c['plain_eng'] for c in cers]):.3f} / heb+ara+eng "
            f"{_mean([c['plain_all'] for c in cers]):.3f}",
            "bag "
            + "/".join(
                f"{_mean([c[k] for c in cers]):.3f}"
                for k in ("fleet_bag", "plain_eng_bag", "plain_all_bag")
            ),
        )
    console.print(table)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="accuracy benchmark against a labelled corpus")
    p.add_argument("corpus", help="folder of PDFs")
    p.add_argument("--labels", required=True, help="LABELS.json")
    p.add_argument(
        "--results", help="reuse a finished `pagefleet run` output folder instead of running"
    )
    p.add_argument(
        "--workers", type=int, default=2, help="worker processes for the run (default 2)"
    )
    p.add_argument(
        "--scan-pages", type=int, default=2, help="synthetic scans per labelled file (0: skip CER)"
    )
    p.add_argument("--json", help="also write the figures here")
    p.set_defaults(handler=_handler)


def _handler(args: argparse.Namespace, console: Console) -> int:
    result = evaluate(
        Path(args.corpus),
        Path(args.labels),
        results=Path(args.results) if args.results else None,
        workers=args.workers,
        scan_pages=args.scan_pages,
        console=console,
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8"
        )
    wrong = result["gate"].get("wrong", 0)
    return 0 if not wrong else 2
