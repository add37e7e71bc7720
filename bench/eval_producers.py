"""`make eval-producers`: known RTL text through real PDF producers, the fleet beside its peers.

The documents come from fixtures/make_producer_docs.py: one page each of Hebrew, Arabic and Persian
(mixed with English), in two font sets, printed by LibreOffice (from .docx and from .odt), Chromium
and fpdf2, each with its logical-order truth. Every page is read by:

    fleet        the real fleet, embedded: `pagefleet run DOCS --out OUT --force`; scored on the
                 `text` of its ACCEPTED pages, a page whose route is review_required or failed (or
                 that needs review) counted as refused
    pymupdf      `page.get_text()` (PyMuPDF's default "text" mode)
    pdftotext    poppler's `pdftotext -enc UTF-8 FILE -` in its default mode (no -layout, no -raw)
    pymupdf4llm  `to_markdown(page_chunks=True, use_ocr=False)`, its Markdown markup stripped
    arafix       `arafix.extract_pdf(FILE)` page text (what `arafix.read` returns), on Arabic-script
                 pages (Arabic, Persian) only: it is a repairer of Arabic PDF text

Scoring (fixtures/producers_score.py): NFKC, bidi controls dropped, whitespace-split tokens with
punctuation split off except inside numbers, URLs and e-mail addresses; nothing else is forgiven.
WER is the token edit distance over the page in reading order divided by the truth's token
count; "letters and digits" is the same with punctuation tokens dropped on both sides. Rows pool
pages (total edits / total truth tokens) per producer x script. The last line is
`producers_wer fleet=X best_peer=Y refused=N/M`: X the fleet's pooled WER over its accepted pages, Y
the lowest pooled WER among the peers that read every page (pymupdf, pdftotext, pymupdf4llm), N of M
pages refused by the fleet.

    python -m bench.eval_producers [--work out/eval_producers] [--reuse] [--docs DIR]
                                   [--systems fleet,pymupdf,...] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from fixtures.make_producer_docs import PRODUCERS, SCRIPTS, ProducerError, generate
from fixtures.producers_score import Score, score, strip_markdown

SYSTEMS = ("fleet", "pymupdf", "pdftotext", "pymupdf4llm", "arafix")
FULL_PEERS = ("pymupdf", "pdftotext", "pymupdf4llm")
ARABIC_SCRIPTS = ("ar", "fa")
REFUSED_ROUTES = ("review_required", "failed")
FLEET_TIMEOUT_S = 900
PDFTOTEXT_TIMEOUT_S = 60

# ------------------------------------------------------------------------------------- readers


@dataclass
class Doc:
    stem: str
    pdf: Path
    producer: str
    script: str
    pages: list[str]  # truth per page, lines joined by newlines


def load_docs(folder: Path) -> list[Doc]:
    docs = []
    for truth_path in sorted(folder.glob("*.truth.json")):
        truth = json.loads(truth_path.read_text(encoding="utf-8"))
        stem = truth_path.name.removesuffix(".truth.json")
        pages = ["\n".join(lines) for lines in truth["pages"]]
        docs.append(Doc(stem, folder / f"{stem}.pdf", truth["producer"], truth["script"], pages))
    return docs


class FleetFailed(RuntimeError):
    """The fleet wrote no document at all: a broken fleet is not a fleet that refuses pages."""


Reading = dict[tuple[str, int], str | None]  # (stem, page index) -> text; None: refused


def read_fleet(docs: list[Doc], folder: Path, out: Path) -> Reading:
    pagefleet = Path(sys.executable).with_name("pagefleet")
    cmd = [str(pagefleet), "run", str(folder), "--out", str(out), "--force"]
    shutil.rmtree(out, ignore_errors=True)  # only this run's documents may be scored
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            _, stderr = proc.communicate(timeout=FLEET_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.terminate()  # SIGTERM: pagefleet stops the Redis and workers it started
            proc.communicate(timeout=60)
            raise
    # 0 or 2 (some page needs review) write every document; another exit status with some
    # documents written means some inputs failed, whose pages count as refused
    if proc.returncode not in (0, 2) and not any(out.glob("*/document.json")):
        raise FleetFailed(f"pagefleet run exited {proc.returncode}: {stderr.strip()[-800:]}")
    return fleet_pages(docs, out)


def fleet_pages(docs: list[Doc], out: Path) -> Reading:
    """The accepted pages' `text` from OUT/<stem>/document.json; None for a refused page (its
    route review_required or failed, or it needs review) and for a document that has none."""
    reading: Reading = {}
    for doc in docs:
        path = out / doc.stem / "document.json"
        pages = json.loads(path.read_text(encoding="utf-8"))["pages"] if path.exists() else []
        for i in range(len(doc.pages)):
            page = pages[i] if i < len(pages) else {}
            refused = (
                not page or page.get("route") in REFUSED_ROUTES or bool(page.get("needs_review"))
            )
            reading[(doc.stem, i)] = None if refused else page.get("text", "")
    return reading


def _per_page(docs: list[Doc], read: Callable[[Doc], list[str]]) -> Reading:
    reading: Reading = {}
    for doc in docs:
        texts = read(doc)
        for i in range(len(doc.pages)):
            reading[(doc.stem, i)] = texts[i] if i < len(texts) else ""
    return reading


def read_pymupdf(doc: Doc) -> list[str]:
    import pymupdf

    with pymupdf.open(doc.pdf) as pdf:
        return [page.get_text() for page in pdf]


def read_pdftotext(doc: Doc) -> list[str]:
    cmd = ["pdftotext", "-enc", "UTF-8", str(doc.pdf), "-"]
    done = subprocess.run(
        cmd, capture_output=True, text=True, timeout=PDFTOTEXT_TIMEOUT_S, check=True
    )
    return done.stdout.split("\f")


def read_pymupdf4llm(doc: Doc) -> list[str]:
    import pymupdf4llm

    with contextlib.redirect_stdout(io.StringIO()):  # it prints parser messages to stdout
        chunks = pymupdf4llm.to_markdown(
            str(doc.pdf), page_chunks=True, use_ocr=False, show_progress=False
        )
    return [strip_markdown(chunk["text"]) for chunk in chunks]


def read_arafix(doc: Doc) -> list[str]:
    import pymupdf

    # arafix imports PyMuPDF by its old name `fitz`, whose shim prints a deprecation warning
    sys.modules.setdefault("fitz", pymupdf)
    import arafix

    return [page.text for page in arafix.extract_pdf(str(doc.pdf)).pages]


PEER_READERS: dict[str, Callable[[Doc], list[str]]] = {
    "pymupdf": read_pymupdf,
    "pdftotext": read_pdftotext,
    "pymupdf4llm": read_pymupdf4llm,
    "arafix": read_arafix,
}


def read_all(
    docs: list[Doc], folder: Path, work: Path, systems: Iterable[str]
) -> dict[str, Reading]:
    readings: dict[str, Reading] = {}
    for system in systems:
        if system == "fleet":
            readings[system] = read_fleet(docs, folder, work / "fleet")
        elif system == "arafix":
            arabic = [d for d in docs if d.script in ARABIC_SCRIPTS]
            readings[system] = _per_page(arabic, PEER_READERS[system])
        else:
            readings[system] = _per_page(docs, PEER_READERS[system])
    return readings


# ------------------------------------------------------------------------------------- scoring


@dataclass
class Cell:
    full: Score
    ld: Score
    pages: int = 0
    refused: int = 0


Table = dict[tuple[str, str], dict[str, Cell]]  # (producer, script) -> system -> Cell
ALL = ("all", "all")


def aggregate(docs: list[Doc], readings: dict[str, Reading]) -> tuple[Table, list[dict]]:
    """Pooled scores per producer x script (and ALL), and one record per page and system."""
    table: Table = {}
    records: list[dict] = []
    for doc in docs:
        for i, truth in enumerate(doc.pages):
            for system, reading in readings.items():
                if (doc.stem, i) not in reading:
                    continue
                text = reading[(doc.stem, i)]
                full, ld = score(truth, text) if text is not None else (Score(), Score())
                for key in ((doc.producer, doc.script), ALL):
                    cell = table.setdefault(key, {}).setdefault(system, Cell(Score(), Score()))
                    cell.pages += 1
                    cell.refused += text is None
                    cell.full.add(full)
                    cell.ld.add(ld)
                records.append(
                    {
                        "document": doc.stem,
                        "page": i + 1,
                        "system": system,
                        "refused": text is None,
                        "wer": full.wer if text is not None else None,
                        "wer_letters_digits": ld.wer if text is not None else None,
                        "edits": full.edits,
                        "truth_tokens": full.truth,
                        "text": text,
                    }
                )
    return table, records


def row_order(table: Table) -> list[tuple[str, str]]:
    order = {key: i for i, key in enumerate((p, s) for p in PRODUCERS for s in SCRIPTS)}
    rows = sorted((k for k in table if k != ALL), key=lambda k: (order.get(k, len(order)), k))
    return rows + ([ALL] if ALL in table else [])


def _wer(cell: Cell | None, metric: str) -> str:
    if cell is None or cell.pages == cell.refused:
        return "—"
    return f"{getattr(cell, metric).wer:.3f}"


def table_rows(table: Table, systems: list[str], metric: str) -> list[list[str]]:
    rows = []
    for key in row_order(table):
        cells = table[key]
        fleet = cells.get("fleet")
        refused = f"{fleet.refused}/{fleet.pages}" if fleet else "—"
        pages = max(c.pages for c in cells.values())
        rows.append([*key, str(pages), refused, *(_wer(cells.get(s), metric) for s in systems)])
    return rows


HEADERS = ["producer", "script", "pages", "fleet refused"]
METRICS = {"full": "WER, tokens with punctuation", "ld": "WER, letters and digits only"}


def summary(table: Table, records: list[dict], systems: list[str]) -> list[str]:
    """The closing lines, the last one `producers_wer fleet=X best_peer=Y refused=N/M`."""
    lines = []
    fleet_pages = [
        (r["wer"], f"{r['document']} page {r['page']}")
        for r in records
        if r["system"] == "fleet" and not r["refused"]
    ]
    if fleet_pages:
        wer, where = max(fleet_pages)
        lines.append(f"fleet's worst accepted page: {where}, WER {wer:.3f}")
        rows = [(c["fleet"].full.wer, k) for k, c in table.items() if k != ALL and "fleet" in c]
        rows = [(w, k) for w, k in rows if table[k]["fleet"].full.truth]
        if rows:
            wer, (producer, script) = max(rows)
            lines.append(f"fleet's worst producer x script: {producer} {script}, WER {wer:.3f}")
    every = table.get(ALL, {})
    peers = {p: every[p].full.wer for p in FULL_PEERS if p in every and p in systems}
    best = min(peers, key=peers.__getitem__) if peers else None
    if best:
        lines.append(f"best peer: {best}")
    fleet = every.get("fleet")
    x = f"{fleet.full.wer:.3f}" if fleet and fleet.full.truth else "nan"
    y = f"{peers[best]:.3f}" if best else "nan"
    refused = f"{fleet.refused}/{fleet.pages}" if fleet else "0/0"
    if fleet and fleet.refused and best:
        lines.append(_on_accepted_pages(records, peers))
    lines.append(f"producers_wer fleet={x} best_peer={y} refused={refused}")
    return lines


def _on_accepted_pages(records: list[dict], peers: dict[str, float]) -> str:
    """The full peers pooled over the pages the fleet accepted, for a like-for-like comparison."""
    accepted = {
        (r["document"], r["page"]) for r in records if r["system"] == "fleet" and not r["refused"]
    }
    pooled = []
    for peer in peers:
        mine = [
            r for r in records if r["system"] == peer and (r["document"], r["page"]) in accepted
        ]
        truth = sum(r["truth_tokens"] for r in mine)
        wer = sum(r["edits"] for r in mine) / truth if truth else float("nan")
        pooled.append(f"{peer} {wer:.3f}")
    return f"peers on the fleet's accepted pages only: {', '.join(pooled)}"


def print_tables(table: Table, systems: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table as RichTable

    console = Console(width=max(Console().width, 120))  # all columns, even in a pipe
    for metric, title in METRICS.items():
        rich = RichTable(title=title)
        for header in HEADERS + systems:
            rich.add_column(header, justify="left" if header in ("producer", "script") else "right")
        for row in table_rows(table, systems, metric):
            rich.add_row(*row)
        console.print(rich)


def _first_line(cmd: list[str]) -> str:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return ((done.stdout or done.stderr).splitlines() or ["unknown"])[0]


def provenance(docs: list[Doc]) -> str:
    """What made and read the pages: the PDFs' Producer fields and the readers' versions."""
    import pymupdf

    producers = set()
    for doc in docs:
        with pymupdf.open(doc.pdf) as pdf:
            producers.add(pdf.metadata.get("producer") or "unnamed")
    readers = []
    for package in ("pymupdf", "pymupdf4llm", "arafix"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            readers.append(f"{package} {metadata.version(package)}")
    readers.append(_first_line(["pdftotext", "-v"]))
    return f"Producers: {', '.join(sorted(producers))}. Readers: {', '.join(readers)}."


def markdown(table: Table, systems: list[str], lines: list[str], about: str) -> str:
    """The latest run's part of docs/benchmarks/producers.md (bench.page adds when and where)."""
    cpus = len(os.sched_getaffinity(0))  # what `nproc` prints
    out = [f"`uname -m` {platform.machine()}, `nproc` {cpus}. {about}"]
    for metric, title in METRICS.items():
        out += ["", f"### {title}", ""]
        out.append("| " + " | ".join(HEADERS + systems) + " |")
        out.append(
            "|" + "|".join(["---", "---"] + ["---:"] * (len(HEADERS) - 2 + len(systems))) + "|"
        )
        out += ["| " + " | ".join(row) + " |" for row in table_rows(table, systems, metric)]
    out += ["", "```text", *lines, "```"]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------- main


def prepare_docs(args: argparse.Namespace) -> Path:
    if args.docs:
        return args.docs
    folder = args.work / "docs"
    if args.reuse and any(folder.glob("*.truth.json")):
        return folder
    for old in [*folder.glob("*.pdf"), *folder.glob("*.truth.json")]:
        old.unlink()
    generate(folder)
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("out/eval_producers"))
    parser.add_argument("--reuse", action="store_true", help="keep documents already in WORK/docs")
    parser.add_argument("--docs", type=Path, help="score the documents in DOCS (no generation)")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--markdown", type=Path, help="also write the tables as Markdown")
    args = parser.parse_args(argv)
    systems = [s for s in args.systems.split(",") if s]
    if unknown := sorted(set(systems) - set(SYSTEMS)):
        parser.error(f"unknown systems {unknown}; choose from {','.join(SYSTEMS)}")
    try:
        folder = prepare_docs(args)
    except (ProducerError, subprocess.SubprocessError) as exc:
        print(f"eval_producers: {exc}", file=sys.stderr)
        return 1
    docs = load_docs(folder)
    if not docs:
        parser.error(f"no *.truth.json documents in {folder}")
    try:
        readings = read_all(docs, folder, args.work, systems)
    except (FleetFailed, subprocess.SubprocessError) as exc:
        print(f"eval_producers: {exc}", file=sys.stderr)
        return 1
    table, records = aggregate(docs, readings)
    lines = summary(table, records, systems)
    pages_json = args.work / "pages.json"
    pages_json.parent.mkdir(parents=True, exist_ok=True)
    pages_json.write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")
    print_tables(table, systems)
    if args.markdown:
        from bench.page import write

        argv_ = ["python", "-m", "bench.eval_producers", *(sys.argv[1:] if argv is None else argv)]
        command = shlex.join(argv_)
        if os.environ.get("MAKELEVEL"):
            command = f"make eval-producers  # runs: {command}"
        write(args.markdown, markdown(table, systems, lines, provenance(docs)), command)
        print(f"wrote {args.markdown}")
    print(f"per page and system (text and WER): {pages_json}")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
