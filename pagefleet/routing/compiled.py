"""Rung 1's checks compiled with mypyc (issue 15), loaded only where asked for and only while the
build matches its sources.

The quality gate, the repair stages and the run-order and chunk code are plain typed Python; most
of their time is Python's own (calls, loops over lines and words), not the C-level string work.
`make setup` (target `compiled`) and the images compile the modules in `MODULES` with mypyc
(`build()`) into C extensions under `pagefleet/routing/_build/` and record each source's sha256 in `STAMP`.
The build decides every page as the sources do (tests/unit/test_compiled.py compares both on
every fixture page) with ~30 % less gate CPU, and the whole suite passes against it. Where no C
compiler or mypy is at hand the build is skipped and nothing changes.

Importing `pagefleet.routing` loads the sources and does nothing else: no file is read, no environment
variable looked at. Running the build is an explicit step, `enable()`, taken by the fleet's
start-up (`pagefleet/workers/__init__.py`, which reads `PAGEFLEET_COMPILED`) before any module of the
build is imported: while every source still matches the stamp it puts a finder first on
`sys.meta_path` that loads all of `MODULES` from the build (the build is one unit: compiled modules
call each other in C); an edited source, or a module of the build already loaded from its source,
leaves the sources running.

mypyc checks declared types when a compiled function is entered and keeps one type per local
name, so a value of the wrong type raises TypeError where the duck-typed source would have gone
on: evidence that crosses a process boundary or comes from a user (the sandbox child's layer, a
reviewer's edits) is checked for its type before it reaches a typed parameter.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import logging
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]  # the folder that holds the pagefleet package
STAMP = ROOT / "pagefleet" / "routing" / "_compiled.json"
BUILD = "_build"  # the build's folder inside the group's package: pagefleet/routing/_build/<module path>.so
MODULES = (
    "pagefleet.routing.charclass",
    "pagefleet.routing.scripts",
    "pagefleet.routing.mirrored_lines",
    "pagefleet.routing.visual_order",
    "pagefleet.routing.arabic",
    "pagefleet.routing.lam",
    "pagefleet.routing.spans",
    "pagefleet.routing.edits",
    "pagefleet.routing.edit_builder",
    "pagefleet.routing.brackets",
    "pagefleet.routing.normalize",
    "pagefleet.routing.evidence",
    "pagefleet.routing.detectors",
    "pagefleet.routing.quality",
    "pagefleet.routing.structure.chunking",
    "pagefleet.routing.structure.offsets",
    "pagefleet.workers.pdf.runs",
    "pagefleet.workers.ladder.accept",
    "pagefleet.workers.ladder.textlayer",
)
GROUP = "pagefleet.routing._gate"  # the shared library: pagefleet/routing/_build/pagefleet/routing/_gate__mypyc.*.so


def source(module: str, root: Path = ROOT) -> Path:
    return root.joinpath(*module.split(".")).with_suffix(".py")


def build_dir(root: Path = ROOT, group: str = GROUP) -> Path:
    return root.joinpath(*group.split(".")[:-1]) / BUILD


def extension(module: str, root: Path = ROOT, group: str = GROUP) -> Path:
    """Where the build puts `module`'s extension for this interpreter."""
    return (
        build_dir(root, group)
        .joinpath(*module.split("."))
        .with_name(module.rsplit(".", 1)[-1] + importlib.machinery.EXTENSION_SUFFIXES[0])
    )


def library(group: str = GROUP) -> str:
    """The module name of the group's shared library, which every compiled module imports."""
    return group + "__mypyc"


def digests(modules: Sequence[str] = MODULES, root: Path = ROOT) -> dict[str, str]:
    return {m: hashlib.sha256(source(m, root).read_bytes()).hexdigest() for m in modules}


def built(modules: Sequence[str] = MODULES, root: Path = ROOT, group: str = GROUP) -> bool:
    """Whether the build holds an extension of this interpreter for any of the modules."""
    return any(extension(m, root, group).exists() for m in modules)


def stale(stamp: Path = STAMP, modules: Sequence[str] = MODULES, root: Path = ROOT) -> list[str]:
    """The modules whose source differs from what was compiled (all of them without a stamp)."""
    try:
        recorded = json.loads(stamp.read_text(encoding="utf-8")).get("sources", {})
    except (OSError, ValueError, AttributeError):
        return list(modules)
    return [m for m, digest in digests(modules, root).items() if recorded.get(m) != digest]


class CompiledFirst(importlib.abc.MetaPathFinder):
    """Loads the named modules, and the group's shared library, from the build's extensions."""

    def __init__(
        self, modules: Sequence[str] = MODULES, root: Path = ROOT, group: str = GROUP
    ) -> None:
        self.paths = {m: extension(m, root, group) for m in (*modules, library(group))}

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        where = self.paths.get(name)
        if where is None or not where.exists():
            return None
        loader = importlib.machinery.ExtensionFileLoader(name, str(where))
        return importlib.util.spec_from_file_location(name, where, loader=loader)


def enable(modules: Sequence[str] = MODULES, root: Path = ROOT, group: str = GROUP) -> bool:
    """Run the compiled build from now on, where it matches its sources; whether it runs.

    Call it before any of `modules` is imported: one already loaded from its source keeps the
    sources running (a compiled module beside a source one would hold other classes)."""
    if any(isinstance(f, CompiledFirst) and set(modules) <= set(f.paths) for f in sys.meta_path):
        return True
    if not built(modules, root, group):
        return False
    stamp = build_dir(root, group).parent / STAMP.name
    changed = stale(stamp, modules, root)
    loaded = [m for m in modules if m in sys.modules]
    if changed or loaded:
        # info, not a warning: an edited checkout runs correctly from its sources, and a CLI's
        # stderr is its one-line error (a worker's ready log and `make bench` say which build runs)
        log.info(
            "compiled gate not used (%s %s): running the sources; `make compiled` rebuilds it",
            "sources changed:" if changed else "already imported:",
            ", ".join((changed or loaded)[:3]),
        )
        return False
    sys.meta_path.insert(0, CompiledFirst(modules, root, group))
    return True


def active() -> bool:
    """Whether this process runs the compiled build (the modules load from its extensions)."""
    return any(isinstance(f, CompiledFirst) for f in sys.meta_path)


SETUP = """\
import sys
from setuptools import setup
from mypyc.build import mypycify
setup(name="pagefleet-gate", script_args=["build_ext", "--build-temp", sys.argv[1], "--build-lib", sys.argv[2]],
      ext_modules=mypycify(sys.argv[3:], group_name=%r, target_dir=sys.argv[1]))
"""


def extensions(
    modules: Sequence[str] = MODULES, root: Path = ROOT, group: str = GROUP
) -> list[Path]:
    """Every extension the build holds: each module's and the group's shared library."""
    where = build_dir(root, group)
    return sorted(where.rglob("*.so")) if where.is_dir() else []


def beside_sources(
    modules: Sequence[str] = MODULES, root: Path = ROOT, group: str = GROUP
) -> list[Path]:
    """Extensions that builds of earlier versions left beside the sources, which Python's own
    finder would load before the source: `build()` removes them."""
    found = [
        p
        for py in (source(m, root) for m in modules)
        for p in py.parent.glob(py.stem + ".cpython-*.so")
    ]
    package, name = group.rsplit(".", 1)
    return found + sorted(root.joinpath(*package.split(".")).glob(name + "__mypyc.*.so"))


def build(root: Path = ROOT, modules: Sequence[str] = MODULES, group: str = GROUP) -> Path:
    """Compile `modules` with mypyc into the build folder of `group`'s package, then record the
    sources it compiled (read before the compiler starts: a source edited meanwhile no longer
    matches, and is not trusted).

    The modules form one group whose shared library lies in the build folder, under its package's
    path (`pagefleet/routing/_build/pagefleet/routing/_gate__mypyc.*.so`), where `enable()`'s finder loads it from, so
    a console script or worker started in any directory runs the build. A build that fails removes
    what it left: the sources run, and no process warns about a half-built gate."""
    stamp = build_dir(root, group).parent / STAMP.name
    stamp.unlink(missing_ok=True)  # a failed or partial build is never taken for a current one
    shutil.rmtree(build_dir(root, group), ignore_errors=True)
    for path in beside_sources(modules, root, group):
        path.unlink()  # an older build's: Python would import it before its source
    sources = digests(modules, root)
    files = [str(source(m, root).relative_to(root)) for m in modules]
    with tempfile.TemporaryDirectory(prefix="pagefleet-mypyc-") as work:
        script = Path(work) / "setup_gate.py"
        script.write_text(SETUP % group, encoding="utf-8")
        tree = _copy_packages(root, modules, Path(work) / "src")
        try:
            subprocess.run(
                [sys.executable, str(script), work, str(build_dir(root, group)), *files],
                cwd=tree,
                check=True,
                stdout=subprocess.DEVNULL,
            )
        except (OSError, subprocess.CalledProcessError):
            shutil.rmtree(build_dir(root, group), ignore_errors=True)
            raise
    tmp = stamp.with_suffix(".tmp")
    tmp.write_text(json.dumps({"sources": sources}, indent=1), encoding="utf-8")
    tmp.replace(stamp)
    return stamp


def _copy_packages(root: Path, modules: Sequence[str], into: Path) -> Path:
    """The Python sources of the modules' top-level packages copied to a folder of their own, where
    mypy reads them: in an installed wheel `root` is site-packages, whose other top-level modules
    (`typing_extensions.py`) mypy refuses to take for the program's own."""
    for top in sorted({m.split(".", 1)[0] for m in modules}):
        for path in (root / top).rglob("*.py"):
            target = into / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return into
