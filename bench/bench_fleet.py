"""Throughput close to the machine's limit, measured side by side (`make bench`).

    python bench/bench_fleet.py CORPUS [--quick] [--sizes 10 100 1000 10000] [--small 500] [--scanned 12]

Every figure comes from one run on the same cores. Inputs are generated from corpus pages into a
temp dir (bench/bench_docs.py). The fleet is warm (Redis + one split/collect worker + one cpu
worker of concurrency 2, started once, a one-page job run first) and each row is timed from submit
to every job done.

    digital   N born-digital pages (Hebrew, Arabic, English, mixed) in one document, structure
              extraction off, beside the limit: PyMuPDF get_text() in two processes over the
              same file (up to 1000 pages: the median of --repeats rounds, each round every size
              in turn, fleet then limit); pymupdf4llm on a sample; with structure on, the fleet
              beside pymupdf4llm. The pages taken from one corpus file share its fonts, as the
              pages of one long document do (bench/bench_docs.py)
    merged    the ratio's size once more with every page carrying its own copy of its fonts
              (pages merged from separate files)
    ceiling   at the ratio's size and for the small documents: rung 1 alone (extraction + gate in
              two bare processes, bench/bench_ceiling.py), what the checks cost with no fleet
    small     M one-page documents submitted at once (`submit.enqueue_many`: batches of
              split_batch_documents), beside one M-page document of the same pages (each with
              its own fonts, as in its one-page file) and the same M documents
              submitted a task each
    S3        the 1000-page run (the largest size ≤ 1000) and the M one-page documents with storage
              on moto's S3 served as S3 is: HTTPS, connections kept alive (tests/support/s3_server.py)
    events    M one-page uploads to that S3 server announced to `pagefleet events` by webhook POSTs
              one after another, with and without `--inbox-list`, beside the same M objects
              submitted at once and one M-page upload (bench/bench_events.py)
    scanned   image-only pages (he/ar/en in turn), beside plain tesseract two at a time on
              pre-rendered 300-DPI images (each page in its script's languages) and ocrmypdf --jobs 2
              (each system the median of min(--repeats, 3) runs)

Ends with `digital_ratio=X scanned_ratio=Y`: fleet / limit at 1000 pages; fleet / OCRmyPDF.
The CPU may be shared with other work: the numbers are as noisy as the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import bench_ceiling, bench_docs, bench_events, bench_peers  # noqa: E402
from tests.support.warm_fleet import RunResult, WarmFleet, scratch  # noqa: E402
from bench.fleet_rows import (  # noqa: E402
    HEAD,
    Row,
    cells,
    fleet_row,
    median_run,
    options,
    print_table,
    warm_up,
)

QUICK = {"sizes": [10, 100], "small": 40, "scanned": 3}
FULL = {"sizes": [10, 100, 1000, 10000], "small": 500, "scanned": 12}


def ratio_size(sizes: list[int]) -> int:
    """The document size digital_ratio is read at: the largest of at most 1000 pages."""
    return max((n for n in sizes if n <= 1000), default=sizes[0])


def digital_rows(
    fleet: WarmFleet, tmp: Path, corpus: Path, sizes: list[int], storage: str, repeats: int = 1
) -> list[Row]:
    """A document of up to 1000 pages runs in a few seconds, which the machine's other work moves a
    lot (the 1000-page row gives the closing line's digital_ratio, and the time per page is compared
    across sizes): those sizes are run `repeats` rounds, each round every size in turn, the fleet
    and then the limit on each (a slower minute falls on all of them alike), and the run with the
    median wall time is the row (every figure from that one run). Bigger documents run once."""
    rows: list[Row] = []
    ref = ratio_size(sizes)
    rounds = [n for n in sizes if n <= 1000]
    pdfs = {n: bench_docs.digital_pdf(corpus, n, tmp / f"digital-{n}.pdf") for n in rounds}
    runs: dict[int, list[Any]] = {n: [] for n in rounds}
    limits: dict[int, list[Any]] = {n: [] for n in rounds}
    for i in range(repeats if rounds else 0):
        for n in rounds:
            runs[n].append(fleet.run([pdfs[n]], storage, options(False), f"d{n}-{i}"))
            limits[n].append(bench_peers.get_text_limit(pdfs[n], n))
    for n in sizes:
        pdf = pdfs.get(n) or bench_docs.digital_pdf(corpus, n, tmp / f"digital-{n}.pdf")
        if n not in runs:
            runs[n], limits[n] = (
                [fleet.run([pdf], storage, options(False), f"d{n}")],
                [bench_peers.get_text_limit(pdf, n)],
            )
        times = len(runs[n])
        note = f"median of {times} runs" if times > 1 else ""
        rows.append(fleet_row(f"digital {n}", median_run(runs[n], lambda r: r.wall), note))
        rows.append(limit_row(f"digital {n}", n, median_run(limits[n], lambda r: r[0]), note))
        if n == ref:
            rows.append(
                ceiling_row(f"digital {n}", bench_ceiling.document_jobs(pdf, n, 2), min(times, 3))
            )
        pdf.unlink()
    return rows


def merged_rows(fleet: WarmFleet, tmp: Path, corpus: Path, n: int, storage: str) -> list[Row]:
    """The n-page run on a document whose every page carries its own copy of its fonts (pages
    merged from separate files): MuPDF then
    loads fonts on every page (~2.4 of get_text's ~3.9 ms a page), for the fleet and the limit alike."""
    pdf = bench_docs.digital_pdf(corpus, n, tmp / f"merged-{n}.pdf", fonts_per_page=True)
    work = f"digital {n}, fonts copied per page"
    rows = [
        fleet_row(work, fleet.run([pdf], storage, options(False), f"m{n}")),
        limit_row(work, n, bench_peers.get_text_limit(pdf, n)),
    ]
    pdf.unlink()
    return rows


def limit_row(work: str, pages: int, measured: tuple[float, float, float], note: str = "") -> Row:
    """The limit's row from `bench_peers.get_text_limit`'s (wall s, peak RSS MB, CPU s)."""
    wall, rss, cpu = measured
    return Row(work, "limit: get_text ×2", pages, wall, f"each={rss:.0f}", note=note, cpu_s=cpu)


def ceiling_row(work: str, jobs: list[list[bench_ceiling.Job]], times: int) -> Row:
    """Rung 1 alone over the same pages in two processes (bench/bench_ceiling.py): what the checks
    every page needs cost before the fleet adds anything."""
    wall, pages, cpu = median_run(
        [bench_ceiling.rung1_alone(jobs) for _ in range(times)], lambda r: r[0]
    )
    note = "extraction + gate, no fleet" + (f"; median of {times} runs" if times > 1 else "")
    return Row(work, "ceiling: rung 1 alone ×2", pages, wall, note=note, cpu_s=cpu)


def structure_rows(fleet: WarmFleet, tmp: Path, corpus: Path, n: int, storage: str) -> list[Row]:
    pdf = bench_docs.digital_pdf(corpus, n, tmp / f"structure-{n}.pdf")
    rows = []
    from pagefleet.workers.settings import Options

    if "structure" in Options.model_fields:
        rows.append(
            fleet_row(
                f"digital {n}, structure on", fleet.run([pdf], storage, options(True), f"s{n}")
            )
        )
    sample = min(n, 50)
    wall, rss = bench_peers.pymupdf4llm_sample(pdf, sample)
    rows.append(
        Row(
            f"digital {n}, structure on",
            "pymupdf4llm (1 process, sample)",
            sample,
            wall,
            f"{rss:.0f}",
        )
    )
    return rows


def small_rows(
    fleet: WarmFleet,
    tmp: Path,
    corpus: Path,
    m: int,
    storage: str,
    suffix: str = "",
    repeats: int = 1,
) -> list[Row]:
    """M one-page documents submitted at once, one M-page document and (on the main fleet) the M
    documents a task each: `repeats` rounds taking turns (the machine's speed moves from one
    minute to the next, and the target is a ratio of two of these rows), each row its median run."""
    files = bench_docs.one_page_pdfs(corpus, m, tmp / "small")
    # the same pages as one document, every page with its own copy of its fonts as its one-page file
    # has: the two rows differ in documents only, not in the fonts MuPDF loads (pages sharing
    # fonts would make even get_text's one-page documents ~0.4× the long one's pages/s here)
    big = bench_docs.digital_pdf(corpus, m, tmp / f"one-{m}.pdf", fonts_per_page=True)
    runs: dict[str, list[RunResult]] = {"many": [], "one": [], "alone": []}
    for i in range(repeats):
        runs["many"].append(fleet.run(files, storage, options(False), f"small{suffix}-{i}"))
        runs["one"].append(fleet.run([big], storage, options(False), f"one{m}{suffix}-{i}"))
        if not suffix:
            with _setting(
                "PAGEFLEET_ADVANCED__SPLIT_BATCH_DOCUMENTS", "1"
            ):  # the producer's batches off: a task per document
                runs["alone"].append(fleet.run(files, storage, options(False), f"small1-{i}"))
    note = f"median of {repeats} runs; " if repeats > 1 else ""
    one = fleet_row(
        f"one {m}-page document{suffix}",
        median_run(runs["one"], lambda r: r.wall),
        note.rstrip("; "),
    )
    median = median_run(runs["many"], lambda r: r.wall)
    many = fleet_row(f"{m} one-page documents{suffix}", median, note)
    many.note += f"{many.pps / one.pps:.2f}× one {m}-page document" if one.pps else ""
    if suffix:  # the second fleet's rows: the ceiling does not change with it
        return [many, one]
    alone = fleet_row(
        f"{m} one-page documents, a task each", median_run(runs["alone"], lambda r: r.wall), note
    )
    alone.note += f"{alone.pps / one.pps:.2f}× one {m}-page document" if one.pps else ""
    plan = _batch_plan(m)
    many.note += f" ({len(plan)} batches of {plan[0]} … {plan[-1]})"
    many.note += (
        f"; a file created in {median.fs_ms:.3f} ms just before (tests/support/fs_quiet.py)"
    )
    ceiling = ceiling_row(f"{m} one-page documents", bench_ceiling.file_jobs(files, 2), 1)
    return [many, one, alone, ceiling]


def _batch_plan(documents: int) -> list[int]:
    from pagefleet.workers.settings import get_settings
    from pagefleet.workers.split.submit import batch_plan

    return batch_plan(documents, get_settings())


@contextlib.contextmanager
def _setting(name: str, value: str) -> Iterator[None]:
    """A setting of this process (the producer's, and the workers' it starts) for the block."""
    import os

    from pagefleet.workers.settings import get_settings

    before = os.environ.get(name)
    os.environ[name] = value
    get_settings.cache_clear()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before
        get_settings.cache_clear()


def reused_small_rows(
    tmp: Path, corpus: Path, m: int, split_concurrency: int, reuse: int
) -> list[Row]:
    """The small-documents rows on a second warm fleet whose sandbox children run up to `reuse`
    commands each (a setting, off by default: documents then share a child's MuPDF state)."""
    tmp.mkdir(parents=True, exist_ok=True)
    with (
        _setting("PAGEFLEET_ADVANCED__SANDBOX_REUSE", str(reuse)),
        WarmFleet(tmp, s3=False, split_concurrency=split_concurrency) as fleet,
    ):  # its workers inherit it
        storage = (tmp / "out").as_uri()
        warm_up(fleet, tmp, corpus, storage)
        return small_rows(fleet, tmp, corpus, m, storage, f", sandbox_reuse={reuse}")


def s3_rows(fleet: WarmFleet, tmp: Path, corpus: Path, n: int, m: int) -> list[Row]:
    """The ratio's size and the M one-page documents with their artifacts and work state on S3
    (the same one-page files as the small-documents rows). Warmed as the fleet was for local
    storage: every worker process has stored to S3 before (its client made, minio imported, ~0.1 s
    of CPU once a process)."""
    pdf = bench_docs.digital_pdf(corpus, n, tmp / f"s3-{n}.pdf")
    bucket = fleet.make_bucket("bench-results")
    warm_up(fleet, tmp, corpus, bucket)
    rows = [
        fleet_row(f"digital {n}, S3 storage", fleet.run([pdf], bucket, options(False), f"s3{n}"))
    ]
    if m:
        files = bench_docs.one_page_pdfs(corpus, m, tmp / "small")
        rows.append(
            fleet_row(
                f"{m} one-page documents, S3 storage",
                fleet.run(files, bucket, options(False), "s3small"),
            )
        )
    return rows


def scanned_rows(
    fleet: WarmFleet, tmp: Path, corpus: Path, n: int, storage: str, repeats: int = 1
) -> list[Row]:
    """Each system `min(repeats, 3)` times, the run with the median wall time its row: a dozen
    scans take 15–25 s a system, and one run moved scanned_ratio by ±0.1 between full runs."""
    pdf = bench_docs.scanned_pdf(corpus, n, tmp / f"scanned-{n}.pdf")
    scripts = [bench_docs.SCAN_SCRIPTS[i % len(bench_docs.SCAN_SCRIPTS)] for i in range(n)]
    times = max(1, min(repeats, 3))
    median = f"; median of {times} runs" if times > 1 else ""
    runs = [fleet.run([pdf], storage, options(False), f"scan{n}-{i}") for i in range(times)]
    rows = [fleet_row(f"scanned {n}", median_run(runs, lambda r: r.wall), note="he/ar/en" + median)]
    pngs = bench_docs.scanned_pngs(pdf, 300, tmp / "pngs")
    wall, rss = median_run(
        [bench_peers.tesseract_limit(pngs, scripts) for _ in range(times)], lambda r: r[0]
    )
    rows.append(
        Row(
            f"scanned {n}",
            "limit: tesseract ×2",
            n,
            wall,
            f"{rss:.0f}",
            note="pre-rendered 300 DPI" + median,
        )
    )
    wall, rss = median_run([bench_peers.ocrmypdf_peer(pdf) for _ in range(times)], lambda r: r[0])
    rows.append(
        Row(
            f"scanned {n}",
            "ocrmypdf --jobs 2",
            n,
            wall,
            f"{rss:.0f}",
            note="-l heb+ara+eng" + median,
        )
    )
    return rows


def markdown(rows: list[Row]) -> str:
    """The same table as GitHub Markdown (for docs/benchmarks/throughput.md)."""
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    lines += ["| " + " | ".join(cells(r)) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def role_lines(rows: list[Row]) -> list[str]:
    """Where each fleet row's CPU went: ms per page by role (sandbox: the servers and their forks;
    split, cpu: the workers' pool processes; *-main: their consumers; redis: the broker)."""
    lines = []
    for r in rows:
        if r.cpu_roles and r.pages:
            parts = sorted(r.cpu_roles.items(), key=lambda item: -item[1])
            lines.append(
                f"{r.work}: " + " · ".join(f"{role} {1000 * s / r.pages:.1f}" for role, s in parts)
            )
    return lines


def _find(rows: list[Row], work: str, system: str) -> Row | None:
    return next((r for r in rows if r.work == work and r.system.startswith(system)), None)


def verdicts(
    rows: list[Row], sizes: list[int], small: int, scanned: int
) -> tuple[float, float, list[str]]:
    """The issue's targets, checked on this run's rows; returns the two closing ratios."""
    ref = ratio_size(sizes)
    fleet, limit = _find(rows, f"digital {ref}", "fleet"), _find(rows, f"digital {ref}", "limit")
    digital_ratio = fleet.pps / limit.pps if fleet and limit and limit.pps else 0.0
    scan, ocrmypdf = (
        _find(rows, f"scanned {scanned}", "fleet"),
        _find(rows, f"scanned {scanned}", "ocrmypdf"),
    )
    tess = _find(rows, f"scanned {scanned}", "limit")
    scanned_ratio = scan.pps / ocrmypdf.pps if scan and ocrmypdf and ocrmypdf.pps else 0.0
    lines = [f"digital fleet/limit at {ref} pages: {digital_ratio:.2f} (target ≥ 0.8)"]
    ceiling = _find(rows, f"digital {ref}", "ceiling")
    if ceiling and limit and fleet and ceiling.pps:
        lines.append(
            f"digital rung 1 alone/limit at {ref} pages: {ceiling.pps / limit.pps:.2f} (the most the fleet "
            f"could reach with every page checked); fleet/rung 1 alone: {fleet.pps / ceiling.pps:.2f}"
        )
    merged = f"digital {ref}, fonts copied per page"
    if (
        (m_fleet := _find(rows, merged, "fleet"))
        and (m_limit := _find(rows, merged, "limit"))
        and m_limit.pps
    ):
        lines.append(
            f"digital fleet/limit at {ref} pages, fonts copied per page (pages merged from separate "
            f"files): {m_fleet.pps / m_limit.pps:.2f}"
        )
    lines.append(f"scanned fleet/OCRmyPDF: {scanned_ratio:.2f} (target ≥ 1.3)")
    if scan and tess and tess.pps:
        lines.append(f"scanned fleet/plain tesseract: {scan.pps / tess.pps:.2f} (target ≥ 0.9)")
    per_page = [
        (n, r.wall / r.pages)
        for n in sizes
        if n >= 100 and (r := _find(rows, f"digital {n}", "fleet"))
    ]
    if len(per_page) > 1:
        lo, hi = min(t for _, t in per_page), max(t for _, t in per_page)
        lines.append(
            f"time per page {', '.join(f'{n}: {t * 1000:.1f} ms' for n, t in per_page)}; "
            f"spread {hi / lo - 1:+.0%} (target within ±20 %)"
        )
        bare = [
            r.wall / r.pages for n, _ in per_page if (r := _find(rows, f"digital {n}", "limit"))
        ]
        if len(bare) == len(
            per_page
        ):  # the same sizes without the fleet: what a bare reader's time per page does
            lines.append(
                f"limit's own time per page {', '.join(f'{t * 1000:.1f} ms' for t in bare)}; "
                f"spread {max(bare) / min(bare) - 1:+.0%}"
            )
    many_rows = f"{small} one-page documents"
    s3 = ", S3 storage"
    for many in [
        r
        for r in rows
        if r.system == "fleet" and r.work.startswith(many_rows) and not r.work.endswith(s3)
    ]:
        sfx = many.work.removeprefix(
            many_rows
        )  # "", ", a task each" or the second fleet's ", sandbox_reuse=N"
        one = _find(rows, f"one {small}-page document{sfx}", "fleet") or _find(
            rows, f"one {small}-page document", "fleet"
        )
        if one and one.pps:
            lines.append(
                f"{small} one-page documents / one {small}-page document{sfx}: {many.pps / one.pps:.2f} "
                "(target ≥ 0.7)"
            )
    if (
        (on_s3 := _find(rows, many_rows + s3, "fleet"))
        and (local := _find(rows, many_rows, "fleet"))
        and local.pps
    ):
        lines.append(
            f"{small} one-page documents, S3 storage / local storage: {on_s3.pps / local.pps:.2f}"
        )
    lines += bench_events.lines(rows, small)
    alone, many = _find(rows, many_rows, "ceiling"), _find(rows, many_rows, "fleet")
    if alone and many and alone.pps:
        lines.append(
            f"{small} one-page documents, fleet/rung 1 alone: {many.pps / alone.pps:.2f} (the rest is the fleet's "
            "cost per document)"
        )
    return digital_ratio, scanned_ratio, lines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--quick", action="store_true", help=f"small sizes while iterating: {QUICK}")
    ap.add_argument("--sizes", type=int, nargs="+")
    ap.add_argument("--small", type=int)
    ap.add_argument("--scanned", type=int)
    ap.add_argument(
        "--skip",
        nargs="*",
        default=[],
        choices=["merged", "structure", "small", "s3", "events", "scanned"],
    )
    ap.add_argument(
        "--split-concurrency",
        type=int,
        default=2,
        help="pool processes of the split/collect worker",
    )
    ap.add_argument(
        "--sandbox-reuse",
        type=int,
        default=1,
        help="the small-documents rows again on a fleet whose sandbox children run up to N commands "
        "(PAGEFLEET_ADVANCED__SANDBOX_REUSE); 1: not run",
    )
    ap.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="digital documents of up to 1000 pages: runs of fleet and limit each, the median one reported",
    )
    ap.add_argument(
        "--markdown",
        type=Path,
        help="also write the table as this docs page's latest run "
        "(`make bench`: docs/benchmarks/throughput.md)",
    )
    args = ap.parse_args(argv)
    plan = dict(QUICK if args.quick else FULL)
    plan.update(
        {
            k: v
            for k, v in (("sizes", args.sizes), ("small", args.small), ("scanned", args.scanned))
            if v
        }
    )
    rows = measure(
        args.corpus.resolve(),
        plan,
        set(args.skip),
        args.split_concurrency,
        args.sandbox_reuse,
        args.repeats,
    )
    print_table(
        rows,
        f"pagefleet throughput: warm fleet (one split/collect worker ×{args.split_concurrency}, one cpu "
        "worker ×2) beside the limit, same cores",
    )
    roles = role_lines(rows)
    print("CPU ms/page by role (fleet rows):\n  " + "\n  ".join(roles))
    digital_ratio, scanned_ratio, lines = verdicts(
        rows, plan["sizes"], plan["small"], plan["scanned"]
    )
    if (
        args.markdown
    ):  # the docs site's page (bench/page.py): its hand-written part kept, this run below
        from bench import page

        page.write(
            args.markdown,
            markdown(rows)
            + "\nCPU ms/page by role:\n\n"
            + "\n".join(f"- {line}" for line in roles)
            + "\n\n"
            + "\n".join(f"- {line}" for line in lines)
            + "\n",
            "python " + " ".join(sys.argv),
        )
    from pagefleet.routing import compiled

    print(
        f"quality gate: {'compiled with mypyc (make compiled)' if compiled.active() else 'from its sources'}"
    )
    print("\n".join(lines))
    print(f"digital_ratio={digital_ratio:.2f} scanned_ratio={scanned_ratio:.2f}")
    return 0


def measure(
    corpus: Path,
    plan: dict,
    skip: set[str],
    split_concurrency: int = 2,
    reuse: int = 1,
    repeats: int = 1,
) -> list[Row]:
    import shutil

    tmp = scratch()
    storage = (tmp / "out").as_uri()
    rows: list[Row] = []
    try:
        with WarmFleet(tmp, s3="s3" not in skip, split_concurrency=split_concurrency) as fleet:
            warm_up(fleet, tmp, corpus, storage)
            ref = ratio_size(plan["sizes"])
            rows += digital_rows(fleet, tmp, corpus, plan["sizes"], storage, repeats)
            if "merged" not in skip:
                rows += merged_rows(fleet, tmp, corpus, ref, storage)
            if "structure" not in skip:
                rows += structure_rows(fleet, tmp, corpus, ref, storage)
            if "small" not in skip:
                rows += small_rows(
                    fleet, tmp, corpus, plan["small"], storage, repeats=min(repeats, 3)
                )
            if "s3" not in skip:
                rows += s3_rows(fleet, tmp, corpus, ref, plan["small"])
            if "s3" not in skip and "events" not in skip:
                rows += bench_events.events_rows(
                    bench_events.runs(fleet, tmp, corpus, plan["small"]), plan["small"]
                )
            if "scanned" not in skip:
                rows += scanned_rows(fleet, tmp, corpus, plan["scanned"], storage, repeats)
        if "small" not in skip and reuse > 1:
            rows += reused_small_rows(
                tmp / "reuse", corpus, plan["small"], split_concurrency, reuse
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
