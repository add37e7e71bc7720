"""The peers the fleet is measured against, on the same files and cores.

    get_text_limit(pdf, procs=2)       PyMuPDF `get_text()` over every page, the pages split between
                                       `procs` processes (opening the file included): the limit
    pymupdf4llm_sample(pdf, pages)     `pymupdf4llm.to_markdown` on the first pages, one process
    tesseract_limit(pngs, langs, 2)    plain `tesseract` on pre-rendered page images, two at a time,
                                       OMP_THREAD_LIMIT=1, each page with its own script's languages
    ocrmypdf_peer(pdf, jobs=2)         `ocrmypdf --jobs 2 -l heb+ara+eng` (it does not route scripts)

Each returns (wall seconds, peak RSS MB of its largest process).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESSERACT_LANGS = {"he": "heb+eng", "ar": "ara+eng", "en": "eng"}


def get_text_cpu(args: tuple[str, int, int | None]) -> tuple[float, float]:
    """(CPU s, peak RSS MB) of this process opening `path` and running `get_text()` on its pages
    `first` up to `last` (0-based, `last` excluded; None: to the end): the limit's own work."""
    import pymupdf

    path, first, last = args
    before = resource.getrusage(resource.RUSAGE_SELF)
    with pymupdf.open(path) as doc:
        for i in range(first, doc.page_count if last is None else last):
            doc[i].get_text()
    after = resource.getrusage(resource.RUSAGE_SELF)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, hwm_mb(os.getpid())


def hwm_mb(pid: int) -> float:
    """A process's own peak RSS (VmHWM: reset by exec, unlike ru_maxrss, which a child inherits
    from the process that forked it), 0 once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    line = next((ln for ln in status.splitlines() if ln.startswith("VmHWM:")), "VmHWM: 0 kB")
    return int(line.split()[1]) / 1024


def settle() -> None:
    """Every dirty page of the machine written out before a timed run (`os.sync`, outside the clock):
    the files a run's setup writes (a generated 10 000-page document, ~200 MB) and the artifacts
    the run before it stored are otherwise written back by the kernel's flusher threads during the
    next timed run, on the same two cores. Measured (a warm fleet, 500 one-page documents, three
    runs each, `/tmp` harness over `small_rows`): 2.34 s before a 10 000-page document, 2.64 s right
    after it (~270 MB dirty), 2.49 s after it and a sync. Before every run of the fleet
    (`warm_fleet.WarmFleet.measure`) and of its peers alike."""
    os.sync()


def get_text_limit(pdf: Path, pages: int, procs: int = 2) -> tuple[float, float, float]:
    """(wall s, peak RSS MB, CPU s) of get_text over every page in `procs` processes."""
    bounds = [(str(pdf), pages * i // procs, pages * (i + 1) // procs) for i in range(procs)]
    ctx = __import__("multiprocessing").get_context("spawn")  # fresh processes, nothing inherited
    with concurrent.futures.ProcessPoolExecutor(procs, mp_context=ctx) as pool:
        list(pool.map(_noop, range(procs)))  # start the processes before the clock
        settle()
        started = time.perf_counter()
        results = list(pool.map(get_text_cpu, bounds))
        wall = time.perf_counter() - started
    return wall, max(rss for _, rss in results), sum(cpu for cpu, _ in results)


def _noop(_: int) -> None:
    import pymupdf  # noqa: F401 - imported before the clock, as in a warm fleet


def pymupdf4llm_sample(pdf: Path, pages: int) -> tuple[float, float]:
    """Run in a child so its memory is its own."""
    code = (
        "import sys, time, resource, pymupdf4llm; t = time.perf_counter(); "
        f"pymupdf4llm.to_markdown({str(pdf)!r}, pages=list(range({pages}))); "
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=3600
    )
    if proc.returncode != 0:
        raise RuntimeError(f"pymupdf4llm failed: {proc.stderr[-500:]}")
    wall, rss = proc.stdout.split()[-2:]
    return float(wall), float(rss)


def measured(argv: list[str], env: dict[str, str]) -> tuple[int, float]:
    """Run a command; (exit status, the peak RSS MB of its largest process, sampled every 50 ms)."""
    import psutil

    with tempfile.TemporaryFile() as err:  # a file, not a pipe: a chatty tool never blocks on it
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=err)
        peak = 0.0
        while proc.poll() is None:
            with contextlib.suppress(psutil.Error):
                tree = [
                    proc.pid,
                    *(c.pid for c in psutil.Process(proc.pid).children(recursive=True)),
                ]
                peak = max([peak, *(hwm_mb(pid) for pid in tree)])
            time.sleep(0.05)
        if proc.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{argv[0]} failed: {err.read().decode(errors='replace')[-500:]}")
    return proc.returncode, peak


def _tesseract(args: tuple[str, str, str]) -> float:
    png, langs, out = args
    return measured(["tesseract", png, out, "-l", langs], dict(os.environ, OMP_THREAD_LIMIT="1"))[1]


def tesseract_limit(pngs: list[Path], scripts: list[str], workers: int = 2) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix="bench-tess-") as tmp:
        jobs = [
            (str(png), TESSERACT_LANGS[s], f"{tmp}/{i}")
            for i, (png, s) in enumerate(zip(pngs, scripts))
        ]
        settle()
        started = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            rss = list(pool.map(_tesseract, jobs))
        return time.perf_counter() - started, max(rss)


def ocrmypdf_peer(pdf: Path, jobs: int = 2) -> tuple[float, float]:
    exe = shutil.which("ocrmypdf") or str(Path(sys.executable).with_name("ocrmypdf"))
    with tempfile.TemporaryDirectory(prefix="bench-ocrmypdf-") as tmp:
        argv = [
            exe,
            "--jobs",
            str(jobs),
            "-l",
            "heb+ara+eng",
            "--output-type",
            "pdf",
            "--sidecar",
            f"{tmp}/out.txt",
            str(pdf),
            f"{tmp}/out.pdf",
        ]
        settle()
        started = time.perf_counter()
        _, rss = measured(
            argv, dict(os.environ, OMP_THREAD_LIMIT="1")
        )  # its largest process (ocrmypdf itself
        return time.perf_counter() - started, rss  # or a tesseract it waited for)
