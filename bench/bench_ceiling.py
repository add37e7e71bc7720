"""The fleet's own ceiling: rung 1 alone, with nothing of the fleet around it.

    rung1_alone(jobs, procs=2)   every page's text layer and evidence (`pagefleet.workers.pdf.mupdf`, as the
                                 sandbox child reads it) and the quality gate (`decide_page`), in
                                 `procs` processes over the same cores, with no queue, storage,
                                 sandbox fork, JSON hand-over or collector

What rung 1 must do for every page (read the RTL glyph geometry, run the gate) costs this much
before any orchestration; `make bench` prints it beside the fleet and the limit, so the distance
between the fleet and the limit splits into what the checks cost and what the fleet adds.
"""

from __future__ import annotations

import concurrent.futures
import gc
import multiprocessing
import resource
import time
from pathlib import Path
from typing import Any

from bench.bench_peers import settle

Job = tuple[str, int, int]  # (pdf, first page, last page), 1-based inclusive


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def child_read(pdf: str, first: int, last: int) -> dict[str, Any]:
    """`mupdf.extract_range` as the sandbox child runs it (`command.run_command`: the cycle collector
    off), in this process; the document is closed after."""
    from pagefleet.workers.pdf import mupdf

    gc.disable()
    try:
        return mupdf.extract_range(pdf, first, last)
    finally:
        gc.enable()
        mupdf.forget()


def _rung1(jobs: list[Job]) -> tuple[int, float]:
    """(pages decided, CPU seconds) for these jobs, one after the other in this process."""
    from pagefleet.workers.ladder.textlayer import decide_page

    before, pages = _cpu(), 0
    for pdf, first, last in jobs:
        read = child_read(pdf, first, last)["pages"]
        for page in read:
            decide_page(page, ocr="auto", gpu=False)
        pages += len(read)
    return pages, _cpu() - before


def _warm(_: int) -> None:
    from pagefleet.workers.ladder.textlayer import decide_page  # noqa: F401 - imported before the clock, as in a warm fleet
    from pagefleet.workers.pdf import mupdf  # noqa: F401


def document_jobs(pdf: Path, pages: int, procs: int) -> list[list[Job]]:
    """One document's pages in `procs` equal halves (thirds, ...)."""
    bounds = [pages * i // procs for i in range(procs + 1)]
    return [[(str(pdf), bounds[i] + 1, bounds[i + 1])] for i in range(procs)]


def file_jobs(pdfs: list[Path], procs: int) -> list[list[Job]]:
    """Whole files dealt out to `procs` processes in turn."""
    return [[(str(p), 1, 1_000_000) for p in pdfs[i::procs]] for i in range(procs)]


def rung1_alone(jobs: list[list[Job]]) -> tuple[float, int, float]:
    """(wall s, pages, CPU s) of rung 1 over `jobs`, one list per process, all at once."""
    ctx = multiprocessing.get_context("spawn")  # fresh processes, nothing inherited
    with concurrent.futures.ProcessPoolExecutor(len(jobs), mp_context=ctx) as pool:
        list(pool.map(_warm, range(len(jobs))))
        settle()
        started = time.perf_counter()
        results = list(pool.map(_rung1, jobs))
        wall = time.perf_counter() - started
    return wall, sum(n for n, _ in results), sum(cpu for _, cpu in results)
