"""Rung 1's checks compiled with mypyc (issue 15), and the guard that lets only a current build in.

The quality gate, the repair stages and the run-order and chunk code are plain typed Python; most
of their time is Python's own (calls, loops over lines and words), not the C-level string work.
`make setup` (target `compiled`) and the images compile the modules in `MODULES` with mypyc into
C extensions beside their sources (`build()`) and record each
source's sha256 in `STAMP`. The build decides every page as the sources do
(tests/unit/test_compiled.py compares both on every fixture page) with ~30 % less gate CPU, and
the whole suite passes against it. Where no C compiler or mypy is at hand the build is skipped and
nothing changes: the sources are imported as usual.

mypyc checks declared types when a compiled function is entered and keeps one type per local
name, so a value of the wrong type raises TypeError where the duck-typed source would have gone
on: evidence that crosses a process boundary or comes from a user (the sandbox child's layer, a
reviewer's edits) is checked for its type before it reaches a typed parameter.

An extension module is imported before its `.py`, so an edited source would silently run as its
old build. `guard()` (run by `routing/__init__.py`, which every process imports first) prevents
that: unless every source still matches the stamp, it puts a finder first on `sys.meta_path`
that loads all of `MODULES` from their sources (the build is one unit: compiled modules call
each other in C). `PAGEFLEET_COMPILED=0` does the same on purpose (benchmarks, the parity test).
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
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
STAMP = ROOT / "routing" / "_compiled.json"
MODULES = (
    "routing.charclass", "routing.scripts", "routing.mirrored_lines", "routing.visual_order", "routing.arabic",
    "routing.lam", "routing.spans", "routing.edits", "routing.normalize", "routing.evidence", "routing.detectors",
    "routing.quality",
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
            # info, not a warning: an edited checkout runs correctly from its sources, and a CLI's
            # stderr is its one-line error (a worker's ready log and `make bench` say which build runs)
            log.info("compiled gate modules older than their sources (%s): running the sources; "
                     "`make compiled` rebuilds them", ", ".join(changed[:3]))
        sys.meta_path.insert(0, SourceFirst())


def active() -> bool:
    """Whether this process runs the compiled build (the modules load from their extensions)."""
    return built() and not any(isinstance(f, SourceFirst) for f in sys.meta_path)


GROUP = "routing._gate"  # the shared library: routing/_gate__mypyc.*.so, importable wherever routing is
SETUP = """\
import sys
from setuptools import setup
from mypyc.build import mypycify
setup(name="pagefleet-gate", script_args=["build_ext", "--inplace", "--build-temp", sys.argv[1], "--build-lib", sys.argv[1]],
      ext_modules=mypycify(sys.argv[2:], group_name=%r, target_dir=sys.argv[1]))
"""


def extensions(modules: Sequence[str] = MODULES, root: Path = ROOT, group: str = GROUP) -> list[Path]:
    """Every file a build leaves beside the sources: each module's extension and the group's library."""
    found = [p for py in (source(m, root) for m in modules) for p in py.parent.glob(py.stem + ".cpython-*.so")]
    package, name = group.rsplit(".", 1)
    return found + sorted(root.joinpath(*package.split(".")).glob(name + "__mypyc.*.so"))


def build(root: Path = ROOT, modules: Sequence[str] = MODULES, group: str = GROUP) -> Path:
    """Compile `modules` with mypyc in `root`, then record the sources it compiled (read before
    the compiler starts: a source edited meanwhile no longer matches, and is not trusted).

    The modules form one group whose shared library lies inside its package, `routing/` (mypyc's default puts
    it at the top level under a hashed name, which only imports with the checkout's root on
    `sys.path`: an installed console script or a worker started elsewhere could not load it).
    A build that fails removes what it left: the sources run, and no process warns about a
    half-built gate."""
    stamp = root.joinpath(*group.split(".")[:-1]) / STAMP.name
    stamp.unlink(missing_ok=True)  # a failed or partial build is never taken for a current one
    sources = digests(modules, root)
    files = [str(source(m, root).relative_to(root)) for m in modules]
    with tempfile.TemporaryDirectory(prefix="pagefleet-mypyc-") as work:
        script = Path(work) / "setup_gate.py"
        script.write_text(SETUP % group, encoding="utf-8")
        try:
            subprocess.run([sys.executable, str(script), work, *files], cwd=root, check=True,
                           stdout=subprocess.DEVNULL)
        except (OSError, subprocess.CalledProcessError):
            for path in extensions(modules, root, group):
                path.unlink(missing_ok=True)
            raise
    tmp = stamp.with_suffix(".tmp")
    tmp.write_text(json.dumps({"sources": sources}, indent=1), encoding="utf-8")
    tmp.replace(stamp)
    return stamp
