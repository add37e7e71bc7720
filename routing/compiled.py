"""Rung 1's checks compiled with mypyc (issue 15), and the guard that lets only a current build in.

The quality gate, the repair stages and the run-order and chunk code are plain typed Python; most
of their time is Python's own (calls, loops over lines and words), not the C-level string work.
`make compiled` (opt-in, not part of `make setup`) compiles the modules in `MODULES` with mypyc
into C extensions beside their sources (`routing.compiled.build()`) and records each source's
sha256 in `STAMP`. On the project's fixtures the build decides every page as the sources do
(tests/unit/test_compiled.py), with ~30 % less gate CPU; but the full suite against the build
still fails (13 failed, 23 errors: mypyc checks declared types at run time and keeps one type per
variable name), so it stays off until those are mended.

An extension module is imported before its `.py`, so an edited source would silently run as its
old build. `guard()` (run by `routing/__init__.py`, which every process imports first) prevents
that: unless every source still matches the stamp, it puts a finder first on `sys.meta_path`
that loads all of `MODULES` from their sources (the build is one unit: compiled modules call
each other in C). `PAGEFLEET_COMPILED=0` does the same on purpose (benchmarks, the parity test).
Without a build nothing changes: the sources are imported as usual.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import logging
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
STAMP = ROOT / "routing" / "_compiled.json"
MODULES = (
    "routing.charclass", "routing.scripts", "routing.rtl_order", "routing.order", "routing.arabic",
    "routing.lam", "routing.spans", "routing.edits", "routing.normalize", "routing.quality",
    "routing.structure.chunking", "routing.structure.offsets",
    "workers.pdf.runs", "workers.ladder.accept", "workers.ladder.textlayer",
)


def source(module: str, root: Path = ROOT) -> Path:
    return root.joinpath(*module.split(".")).with_suffix(".py")


def digests(modules: Sequence[str] = MODULES, root: Path = ROOT) -> dict[str, str]:
    return {m: hashlib.sha256(source(m, root).read_bytes()).hexdigest() for m in modules}


def built(modules: Sequence[str] = MODULES, root: Path = ROOT) -> bool:
    """Whether an extension of this interpreter lies beside any of the sources."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    return any(source(m, root).with_suffix(suffix).exists() for m in modules)


def stale(stamp: Path = STAMP, modules: Sequence[str] = MODULES, root: Path = ROOT) -> list[str]:
    """The modules whose source differs from what was compiled (all of them without a stamp)."""
    try:
        recorded = json.loads(stamp.read_text(encoding="utf-8")).get("sources", {})
    except (OSError, ValueError, AttributeError):
        return list(modules)
    return [m for m, digest in digests(modules, root).items() if recorded.get(m) != digest]


class SourceFirst(importlib.abc.MetaPathFinder):
    """Loads the named modules from their `.py` files, whatever extension lies beside them."""

    def __init__(self, modules: Sequence[str] = MODULES, root: Path = ROOT) -> None:
        self.paths = {m: source(m, root) for m in modules}

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        where = self.paths.get(name)
        return importlib.util.spec_from_file_location(name, where) if where is not None else None


def guard() -> None:
    """Run the sources instead of the build where the build is off or no longer matches them."""
    if not built() or any(isinstance(f, SourceFirst) for f in sys.meta_path):
        return
    off = os.environ.get("PAGEFLEET_COMPILED", "1").strip().lower() in ("0", "false", "no", "off")
    changed = [] if off else stale()
    if off or changed:
        if changed:
            log.warning("compiled gate modules older than their sources (%s): running the sources; "
                        "`make compiled` rebuilds them", ", ".join(changed[:3]))
        sys.meta_path.insert(0, SourceFirst())


def active() -> bool:
    """Whether this process runs the compiled build (the modules load from their extensions)."""
    return built() and not any(isinstance(f, SourceFirst) for f in sys.meta_path)


def build(root: Path = ROOT) -> Path:
    """Compile `MODULES` with mypyc in `root`, then record the sources it compiled (read before
    the compiler starts: a source edited meanwhile no longer matches, and is not trusted)."""
    STAMP.unlink(missing_ok=True)  # a failed or partial build is never taken for a current one
    sources = digests(root=root)
    subprocess.run([sys.executable, "-m", "mypyc", *(str(source(m, root).relative_to(root)) for m in MODULES)],
                   cwd=root, check=True, stdout=subprocess.DEVNULL)
    tmp = STAMP.with_suffix(".tmp")
    tmp.write_text(json.dumps({"sources": sources}, indent=1), encoding="utf-8")
    tmp.replace(STAMP)
    return STAMP

