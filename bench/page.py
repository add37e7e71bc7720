"""A benchmark's page of the docs site (docs/benchmarks/*.md), rewritten by the benchmark's own run.

A page is its hand-written part (what the benchmark measures, the command that regenerates it),
then the marker line, then the latest run: when, on which machine, at which commit, with which
command, and its table. Writing a page keeps everything above the marker and replaces the rest, so
a page holds one run, never a history (git keeps that).

    python -m bench.page docs/benchmarks/ocr.md [--raw] -- .venv/bin/python -m bench.eval_ocr --quick
        runs the command (its output shown as it comes), then writes its output as the page's latest
        run: as a text block, or as it is with --raw (a command that prints Markdown)
    bench.page.write(path, markdown, command)
        what a benchmark that makes its own Markdown table calls (bench/bench_fleet.py --markdown)
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import re
import shlex
import subprocess
import sys
from pathlib import Path

MARKER = "<!-- latest run: everything below is rewritten by the command above -->"
ROOT = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def machine() -> str:
    """CPU model and cores, and the GPU when one is named, e.g. `AMD EPYC 7B13, 2 cores, Linux 6.1`."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release().split('-')[0]}"
    )


def commit() -> str:
    try:
        proc = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return proc.stdout.strip() or "unknown"


def write(path: Path, body: str, command: str) -> None:
    """Keep the page's hand-written part, replace its latest run by this one."""
    path = Path(path)
    kept = (
        path.read_text(encoding="utf-8").split(MARKER, 1)[0].rstrip()
        if path.exists()
        else f"# {path.stem}"
    )
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    run = [
        MARKER,
        "",
        f"Last run: {when}, on {machine()}, at commit `{commit()}`:",
        "",
        "```sh",
        command,
        "```",
        "",
        body.strip(),
        "",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(kept + "\n\n" + "\n".join(run), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    split = args.index("--") if "--" in args else -1
    if split not in (1, 2) or (split == 2 and args[1] != "--raw") or len(args) <= split + 1:
        print("usage: python -m bench.page PAGE.md [--raw] -- COMMAND [ARGS...]", file=sys.stderr)
        return 64
    page, raw, command = Path(args[0]), split == 2, args[split + 1 :]
    lines: list[str] = []
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "160"},
    ) as proc:
        assert proc.stdout is not None
        # the command's last line waits until this script has said what it wrote: a closing line
        # (`heading_f1=…`, `cer_fleet=…`) stays the last line a make target prints
        held = ""
        for line in proc.stdout:
            sys.stdout.write(held)
            held = line
            lines.append(ANSI.sub("", line.rstrip("\n")))
    output = "\n".join(lines).strip()
    # a benchmark that ran but whose checks failed (`pagefleet eval` exits 2) is a result worth keeping;
    # a crash, a signal or no output is not
    if (
        proc.returncode not in (0, 1, 2)
        or not output
        or "Traceback (most recent call last)" in output
    ):
        print(
            f"bench.page: the command exited {proc.returncode}; {page} is left as it was",
            file=sys.stderr,
        )
        sys.stdout.write(held)
        return proc.returncode or 1
    shown = " ".join(shlex.quote(a) for a in command)
    write(
        page,
        output if raw else "```text\n" + output + "\n```",
        shown + (f"   # exit status {proc.returncode}" if proc.returncode else ""),
    )
    print(f"wrote {page}")
    sys.stdout.write(held)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
