"""Profile the split of one generated born-digital document (cProfile), parent and sandbox child.

    python bench/profile_split.py ../shared/corpus [--pages 100] [--top 15]

Parent: `split_document` in this process (local storage in a temp dir) — the gate, the classifier,
the storage writes and the wait for the sandbox child. Child: the extraction the sandbox runs
(`workers.pdf.mupdf`), in this process so cProfile sees it.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_docs import digital_pdf  # noqa: E402


def _report(prof: cProfile.Profile, title: str, top: int) -> None:
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf).strip_dirs().sort_stats("tottime")
    stats.print_stats(top)
    lines = [line for line in buf.getvalue().splitlines() if line.strip()]
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    print(f"--- {title}: top {top} by own time")
    print("\n".join(lines[start - 1:start + top + 1]))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--pages", type=int, default=100)
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args(argv)
    from workers.store.keys import job_id_for
    from workers.model import JobSpec
    from workers.pdf import mupdf
    from workers.split.document import split_document
    from workers.settings import Settings

    with tempfile.TemporaryDirectory(prefix="pagefleet-prof-") as tmp:
        pdf = digital_pdf(args.corpus, args.pages, Path(tmp) / "doc.pdf")
        from workers.settings import Options

        options = {"structure": False} if "structure" in Options.model_fields else {}  # text only, as in make bench
        job = JobSpec(job_id=job_id_for("profile", {}), source=str(pdf), filename=pdf.name,
                      storage=Path(tmp, "store").as_uri(), artifact_prefix="doc", options=options)
        prof = cProfile.Profile()
        started = time.perf_counter()
        prof.enable()
        outcome = split_document(job, Settings(split_range_pages=100_000))  # the whole document in this task
        prof.disable()
        wall = time.perf_counter() - started
        print(f"split of {args.pages} pages: {wall:.2f}s wall ({wall / args.pages * 1000:.1f} ms/page), "
              f"{outcome.accepted} accepted, pending {sum(map(len, outcome.pending.values()))}")
        _report(prof, "split task (parent)", args.top)
        child = cProfile.Profile()
        started = time.perf_counter()
        child.enable()
        mupdf.extract_range(str(pdf), 1, args.pages)
        child.disable()
        wall = time.perf_counter() - started
        print(f"\nextraction in the sandbox child, run in-process: {wall:.2f}s ({wall / args.pages * 1000:.1f} ms/page)")
        _report(child, "extraction (child)", args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
