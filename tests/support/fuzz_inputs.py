"""Fuzz the fleet with mutated PDFs: every input must end in artifacts or a typed error.json, in
bounded time, with no worker dying (issue 9).

    python tests/support/fuzz_inputs.py [CORPUS_DIR ...] [--count 500] [--seed 9] [--out DIR] [--keep]

Seeds are the project's generated fixtures plus the PDFs of every CORPUS_DIR (small ones). Each
mutant is one seed changed by one or two deterministic mutations (bit flips, truncation, a
deleted/duplicated/zeroed span, a damaged xref or startxref, forged /Length, /Count or /Size
values, a broken header, junk appended, objects renumbered). All mutants go through one
`pagefleet run --ocr off` on the embedded fleet (the split, with every parser of the untrusted
bytes sandboxed, is what malformed input meets). The last line says how it ended:

    fuzz: 500 inputs, 500 ended in artifacts or a typed error (412 artifacts, 88 errors), 0 without either, exit 1, 187.3 s, largest process 120 MB

(`aborted` does not count: it means the run gave up — a worker died or the deadline passed.)
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
Mutation = Callable[[bytes, random.Random], bytes]


def _span(data: bytes, rng: random.Random, most: int = 4096) -> tuple[int, int]:
    start = rng.randrange(max(1, len(data)))
    return start, min(len(data), start + rng.randint(1, most))


def flip_bits(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 64)):
        if out:
            i = rng.randrange(len(out))
            out[i] ^= 1 << rng.randrange(8)
    return bytes(out)


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(max(1, len(data)))]


def delete_span(data: bytes, rng: random.Random) -> bytes:
    a, b = _span(data, rng)
    return data[:a] + data[b:]


def duplicate_span(data: bytes, rng: random.Random) -> bytes:
    a, b = _span(data, rng)
    return data[:b] + data[a:b] * rng.randint(1, 8) + data[b:]


def zero_span(data: bytes, rng: random.Random) -> bytes:
    a, b = _span(data, rng)
    return data[:a] + b"\x00" * (b - a) + data[b:]


def _numbers(pattern: bytes) -> Mutation:
    """Replace the number after `pattern` with a hostile one."""

    def mutate(data: bytes, rng: random.Random) -> bytes:
        hostile = rng.choice([b"0", b"-1", b"999999999", b"2147483648", b"1e308", b"NaN", b""])
        return re.sub(
            re.escape(pattern) + rb"\s*-?\d+",
            pattern + b" " + hostile,
            data,
            count=rng.randint(1, 3),
        )

    return mutate


def break_xref(data: bytes, rng: random.Random) -> bytes:
    return data.replace(b"xref", rng.choice([b"xraf", b"", b"xref\n0 99999999\n"]), 1)


def break_header(data: bytes, rng: random.Random) -> bytes:
    return rng.choice([b"%PDF-9.9\n", b"%PDX-1.7\n", b"", b"\xef\xbb\xbf%PDF-1.7\n"]) + data[9:]


def append_junk(data: bytes, rng: random.Random) -> bytes:
    return data + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8192)))


def renumber_objects(data: bytes, rng: random.Random) -> bytes:
    return re.sub(
        rb"(\d+) 0 obj", lambda m: b"%d 0 obj" % rng.randint(0, 50), data, count=rng.randint(1, 20)
    )


MUTATIONS: dict[str, Mutation] = {
    "flip_bits": flip_bits,
    "truncate": truncate,
    "delete_span": delete_span,
    "duplicate_span": duplicate_span,
    "zero_span": zero_span,
    "break_xref": break_xref,
    "startxref": _numbers(b"startxref"),
    "length": _numbers(b"/Length"),
    "count": _numbers(b"/Count"),
    "size": _numbers(b"/Size"),
    "break_header": break_header,
    "append_junk": append_junk,
    "renumber": renumber_objects,
}


def seeds(corpus_dirs: list[Path], work: Path, max_bytes: int = 400_000) -> list[Path]:
    """The fixtures (generated now) and the corpus PDFs no bigger than `max_bytes`."""
    fixtures = work / "seeds"
    subprocess.run(
        [sys.executable, str(ROOT / "fixtures" / "make_fixtures.py"), str(fixtures)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    found = sorted(fixtures.glob("*.pdf"))
    for folder in corpus_dirs:
        found += sorted(p for p in folder.glob("*.pdf") if 0 < p.stat().st_size <= max_bytes)
    return found


def mutants(sources: list[Path], count: int, seed: int, folder: Path) -> list[tuple[Path, str]]:
    """`count` mutated files in `folder`: (path, what was done)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    names = sorted(MUTATIONS)
    made = []
    for i in range(count):
        source = sources[i % len(sources)]
        data = source.read_bytes()
        done = [rng.choice(names) for _ in range(rng.randint(1, 2))]
        for name in done:
            data = MUTATIONS[name](data, rng)
        path = folder / f"fuzz-{i:04d}.pdf"
        path.write_bytes(data)
        made.append((path, f"{source.name}: {'+'.join(done)}"))
    return made


def run_fleet(
    inputs: list[Path], out: Path, timeout_s: float, workers: int = 2
) -> tuple[int, float]:
    """One `pagefleet run --ocr off` over every input; (exit status, seconds)."""
    rc, seconds, _ = run_fleet_measured(inputs, out, timeout_s, workers)
    return rc, seconds


def run_fleet_measured(
    inputs: list[Path], out: Path, timeout_s: float, workers: int = 2
) -> tuple[int, float, int]:
    """`run_fleet`, also sampling the largest resident set of any process of the run (bytes; 0
    without psutil): the CLI, Redis, the workers, their pool children and sandbox children."""
    argv = [
        sys.executable,
        "-m",
        "pagefleet.workers.cli.main",
        "run",
        str(inputs[0].parent),
        "--out",
        str(out),
        "--ocr",
        "off",
        "--workers",
        str(workers),
    ]
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with open(out / "run.log", "wb") as log:
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        peak = 0
        while proc.poll() is None:
            if time.monotonic() - started > timeout_s:
                proc.terminate()
                proc.wait(timeout=60)
                break
            peak = max(peak, _peak_rss(proc.pid))
            time.sleep(0.2)
    return proc.returncode, time.monotonic() - started, peak


def _peak_rss(pid: int) -> int:
    try:
        import psutil
    except ImportError:
        return 0
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    best = 0
    for proc in procs:
        try:
            best = max(best, proc.memory_info().rss)
        except psutil.Error:
            continue
    return best


def verdicts(inputs: list[tuple[Path, str]], out: Path) -> Counter[str]:
    """What each input ended in: `artifacts`, `error:<code>`, or `neither`/`both` (failures)."""
    from pagefleet.workers.errors import INPUT_ERROR_CODES

    tally: Counter[str] = Counter()
    for path, _ in inputs:
        folder = out / path.stem
        has_doc, has_err = (folder / "report.json").exists(), (folder / "error.json").exists()
        if has_doc and not has_err:
            tally["artifacts"] += 1
        elif has_err and not has_doc:
            code = json.loads((folder / "error.json").read_text()).get("code", "")
            tally[f"error:{code}" if code in INPUT_ERROR_CODES else f"untyped:{code}"] += 1
        else:
            tally["both" if has_doc else "neither"] += 1
    return tally


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "corpus", nargs="*", type=Path, help="folders of seed PDFs (besides the fixtures)"
    )
    p.add_argument("--count", type=int, default=500)
    p.add_argument("--seed", type=int, default=9)
    p.add_argument(
        "--out", type=Path, help="keep inputs and outputs here (default: a temporary folder)"
    )
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds for the whole run")
    args = p.parse_args(argv)
    work = args.out or Path(tempfile.mkdtemp(prefix="pagefleet-fuzz-"))
    try:
        made = mutants(seeds(args.corpus, work), args.count, args.seed, work / "inputs")
        rc, seconds, peak = run_fleet_measured([m[0] for m in made], work / "out", args.timeout)
        tally = verdicts(made, work / "out")
        for path, what in made:
            if (work / "out" / path.stem / "error.json").exists() == (
                work / "out" / path.stem / "report.json"
            ).exists():
                print(f"FAILED {path.name} ({what})")
        print(json.dumps(dict(sorted(tally.items())), indent=1))
        # `aborted` means the run itself gave up (a worker died, the deadline): a failure here
        good = tally["artifacts"] + sum(
            v for k, v in tally.items() if k.startswith("error:") and k != "error:aborted"
        )
        errors = good - tally["artifacts"]
        print(
            f"fuzz: {len(made)} inputs, {good} ended in artifacts or a typed error ({tally['artifacts']} artifacts, "
            f"{errors} errors), {len(made) - good} without either, exit {rc}, {seconds:.1f} s, "
            f"largest process {peak / 2**20:.0f} MB"
        )
        return 0 if good == len(made) else 1
    finally:
        if args.out is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
