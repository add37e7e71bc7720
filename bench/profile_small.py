"""Where a one-page document's CPU goes in its split task: `split_batch` over N one-page documents
in this process (a private Redis, local storage, the warm sandbox), parent CPU a document by section.

    python bench/profile_small.py ../shared/corpus [--docs 96]

Sections are timed with `time.thread_time()` around the functions that make them, each in the
thread that runs it (a batch reads its next document's head in a thread of its own while its main
thread decides and stores this one; nested ones are inside their parent's figure). The sandbox's
own CPU (its server and the children it forks) is in none of them and is printed beside the
parent's (the fleet's `make bench` counts it under "sandbox"). Prints the Redis commands a
document costs too, and the sandbox's floor: MuPDF alone opening the same documents and reading
their text (`get_text()`, the limit's call) in this process, after the run.
"""

from __future__ import annotations

import argparse
import collections
import importlib
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SECTIONS = [  # (module, attribute, label): nested labels are inside the one above them
    ("workers.split.document", "read_heads", "the reader thread: the documents' heads"),
    ("workers.pdf.source", "inspect_many", "  sandbox: the parent's hand-over"),
    ("workers.split.job", "split_one", "the main thread: a document's split"),
    ("workers.split.ranges", "decide", "  gate and page records"),
    ("workers.collect.document", "assemble", "  assembly and artifacts"),
    ("workers.store.storage", "LocalStorage.put_stream", "    artifact writes (streams)"),
    ("workers.store.storage", "LocalStorage.put_bytes", "    artifact writes (report)"),
    ("workers.fleet.jobs", "claim", "  redis: record + lock + splitting"),
    ("workers.fleet.jobs", "update", "  redis: state updates"),
    ("workers.fleet.jobs", "done", "  redis: done, notice, metrics, unlock"),
]


def _timed(spent: collections.Counter[str], label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def inner(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()  # the calling thread's: a batch reads its next head in another
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] += time.thread_time() - started
    return inner


def instrument(spent: collections.Counter[str]) -> None:
    for module, attribute, label in SECTIONS:
        owner: Any = importlib.import_module(module)
        *path, name = attribute.split(".")
        for part in path:
            owner = getattr(owner, part)
        setattr(owner, name, _timed(spent, label, getattr(owner, name)))
    import workers.collect.document
    import workers.collect.finish
    import workers.split.batch
    import workers.split.document
    from workers.pdf import source

    workers.split.document.pdf = source  # names bound at import: point them at the timed functions
    workers.collect.finish.collect_held = workers.collect.document.collect_held
    workers.split.batch.read_heads = workers.split.document.read_heads


def sandbox_cpu() -> float:
    """CPU seconds of this process's sandbox server (`workers.pdf.forkserver`; not the private
    redis-server, also a child of this process) and every child it has forked so far: the server's
    own, its reaped children's, and its live children's (a batch's shared child)."""
    import psutil

    total = 0.0
    for server in psutil.Process().children():
        try:
            if "workers.pdf.forkserver" not in " ".join(server.cmdline()):
                continue
            t = server.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
            for child in server.children(recursive=True):
                t = child.cpu_times()
                total += t.user + t.system
        except psutil.NoSuchProcess:
            continue
    return total


def mupdf_floor(files: list[Path], passes: int = 2) -> float:
    """CPU seconds a document for MuPDF alone to open each of `files` and read every page's text
    (`get_text()`, what the limit runs) in this process, the best of `passes`: what the sandbox's
    share of a small document cannot go below (its probe, text page and RTL evidence read more)."""
    from bench.bench_peers import get_text_cpu

    best = math.inf
    for _ in range(passes):
        best = min(best, sum(get_text_cpu((str(path), 0, None))[0] for path in files))
    return best / len(files)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--docs", type=int, default=96)
    args = ap.parse_args(argv)
    from workers.cli.embedded import RedisServer

    tmp = Path(tempfile.mkdtemp(prefix="pagefleet-profile-small-"))
    (tmp / "redis").mkdir()
    server = RedisServer(tmp / "redis")
    url = server.start()
    os.environ.update({"PAGEFLEET_BROKER_URL": url, "PAGEFLEET_RESULT_BACKEND": url, "PAGEFLEET_GPU": "0"})
    try:
        return _measure(args.corpus, args.docs, tmp, url)
    finally:
        server.stop()


def _measure(corpus: Path, n: int, tmp: Path, url: str) -> int:
    import redis

    from bench import bench_docs
    from workers.fleet import jobs
    from workers.split import submit
    from workers.app import use_broker
    from workers.settings import reliability
    from workers.settings import Options, get_settings

    get_settings.cache_clear()
    use_broker(url)
    files = bench_docs.one_page_pdfs(corpus, n, tmp / "small")

    def specs(tag: str) -> list[dict[str, Any]]:
        made = [submit.spec_for_path(str(f), (tmp / tag).as_uri(), f"doc/{f.stem}", Options(structure=False))
                for f in files]
        payloads = [(s.model_dump(mode="json"), s.force) for s in made]
        jobs.start_runs(payloads, stale_after_s=reliability().deadline_s)
        return [p for p, _ in payloads]

    spent: collections.Counter[str] = collections.Counter()
    instrument(spent)
    from tasks.split import split_batch

    split_batch(specs("warm")[:4])  # the sandbox server and the first imports
    spent.clear()
    todo, client = specs("run"), redis.Redis.from_url(url)
    commands = client.info("stats")["total_commands_processed"]
    sandbox = sandbox_cpu()
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(0, n, 16):
        split_batch(todo[i:i + 16], "profile")  # one submission, as enqueue_many sends it
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    sandbox = sandbox_cpu() - sandbox
    commands = client.info("stats")["total_commands_processed"] - commands - 1
    print(f"{n} one-page documents: wall {wall / n * 1000:.2f} ms, parent CPU {cpu / n * 1000:.2f} ms a document; "
          f"sandbox (its server and children) {sandbox / n * 1000:.2f} ms; Redis commands {commands / n:.1f} a document")
    for _, _, label in SECTIONS:
        print(f"  {label:40s} {spent[label] / n * 1000:6.2f} ms")
    passes = 2
    print(f"the sandbox's floor: MuPDF alone, open + get_text() of each in one process (best of {passes}) "
          f"{mupdf_floor(files, passes) * 1000:.2f} ms a document")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
