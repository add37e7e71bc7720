"""Rung 2: an independent text extractor (Poppler's pdftotext) for one page.

Tried only when MuPDF found too little text on a page that visibly holds some; its output passes
the same gate as any candidate. Garbage from a broken font map is the same garbage here, so the
gate, not this rung, keeps it out.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import time

from pagefleet.workers.errors import EngineCrashed, EngineTimeout, EngineUnavailable
from pagefleet.workers.pdf.sandbox import run_tool
from pagefleet.workers.settings import get_settings

log = logging.getLogger(__name__)
ENGINE = "pdftotext"
INSTALL_HINT = "install it: apt-get install poppler-utils"
# Rung-1 reasons that say "MuPDF saw too little", where another extractor may see more.
WORTH_TRYING = frozenset({"too_little_text", "text_below_visible"})


def available() -> bool:
    return shutil.which("pdftotext") is not None


def extract_page(
    pdf: str,
    page: int,
    *,
    timeout_s: float = 30.0,
    memory_mb: int | None = None,
    args: tuple[str, ...] = (),
    last: int | None = None,
) -> tuple[str, float]:
    """pdftotext on one page, sandboxed like every other parser of an untrusted PDF (memory and CPU
    limits, timeout); a run killed by a limit is an `engine_crashed` attempt, never a dead worker.
    `args`: more pdftotext options (`-layout`, a crop box `-x -y -W -H`, `-tsv`); `last`: read the
    pages `page`..`last` (pdftotext stops at the document's last page)."""
    if not available():
        raise EngineUnavailable(f"pdftotext is not installed; {INSTALL_HINT}")
    memory_mb = memory_mb or get_settings().limits.sandbox_memory_mb
    started = time.monotonic()
    argv = [
        "pdftotext",
        "-f",
        str(page),
        "-l",
        str(last or page),
        "-enc",
        "UTF-8",
        "-q",
        *args,
        pdf,
        "-",
    ]
    try:
        proc = run_tool(argv, timeout_s=timeout_s, memory_mb=memory_mb)
    except subprocess.TimeoutExpired as exc:
        raise EngineTimeout(f"pdftotext timed out after {timeout_s:.0f}s") from exc
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()
        why = (
            f"killed by signal {-proc.returncode} (memory or CPU limit?)"
            if proc.returncode < 0
            else err[-200:]
        )
        raise EngineCrashed(f"pdftotext exit {proc.returncode}: {why}")
    text = proc.stdout.decode("utf-8", "replace").replace("\f", "")
    return text, time.monotonic() - started
