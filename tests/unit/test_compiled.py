"""The mypyc build of the gate (pagefleet/routing/compiled.py): importing routing loads the sources, `enable()`
lets only a build that matches its sources run, and the build decides every page of the project's
fixtures exactly as the sources do."""

from __future__ import annotations

import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pagefleet.routing import compiled

ROOT = Path(__file__).resolve().parents[2]


def _package(tmp_path: Path) -> tuple[Path, list[str]]:
    pkg = tmp_path / "pfx_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "one.py").write_text("WHERE = 'source one'\n", encoding="utf-8")
    (pkg / "two.py").write_text("WHERE = 'source two'\n", encoding="utf-8")
    return tmp_path, ["pfx_pkg.one", "pfx_pkg.two"]


def test_a_stamp_names_the_sources_that_changed_since_the_build(tmp_path: Path) -> None:
    root, modules = _package(tmp_path)
    stamp = tmp_path / "stamp.json"
    assert compiled.stale(stamp, modules, root) == modules  # no stamp: nothing is trusted
    stamp.write_text(json.dumps({"sources": compiled.digests(modules, root)}), encoding="utf-8")
    assert compiled.stale(stamp, modules, root) == []
    (root / "pfx_pkg" / "two.py").write_text("WHERE = 'edited'\n", encoding="utf-8")
    assert compiled.stale(stamp, modules, root) == ["pfx_pkg.two"]
    stamp.write_text("not json", encoding="utf-8")
    assert compiled.stale(stamp, modules, root) == modules


def test_enable_runs_no_build_that_is_missing_or_older_than_its_sources(tmp_path: Path) -> None:
    root, modules = _package(tmp_path)
    before = list(sys.meta_path)
    assert not compiled.enable(modules, root, group="pfx_pkg._gate")  # nothing built
    lib = compiled.extension("pfx_pkg.one", root, group="pfx_pkg._gate")
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b"not a shared object")  # an import of it would fail
    assert compiled.built(modules, root, group="pfx_pkg._gate")
    assert not compiled.enable(modules, root, group="pfx_pkg._gate")  # no stamp: nothing is trusted
    assert sys.meta_path == before


def test_importing_routing_reads_nothing_and_runs_the_sources() -> None:
    code = (
        "import sys, os; import pagefleet.routing.quality as q; from pagefleet.routing import compiled; "
        "print(q.__file__.endswith('.py'), compiled.active(), 'PAGEFLEET_COMPILED' in os.environ)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=dict(os.environ, PAGEFLEET_COMPILED="1"),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.split() == ["True", "False", "True"]
    routing_sources = "".join(
        p.read_text(encoding="utf-8") for p in (ROOT / "pagefleet" / "routing").rglob("*.py")
    )
    assert "os.environ" not in routing_sources and "getenv" not in routing_sources


_DECIDE = """
import json, sys
from pathlib import Path
import pagefleet.workers  # the fleet's start-up: the compiled build, unless PAGEFLEET_COMPILED=0
from pagefleet.routing import compiled
from pagefleet.routing.structure.chunking import ChunkRules, iter_chunks
from pagefleet.workers.store.artifacts import ACCEPTED_ROUTES
from pagefleet.workers.collect.chunks import _page_in
from pagefleet.workers.ladder.textlayer import decide_page
from pagefleet.workers.model import PageRecord
from pagefleet.workers.pdf.mupdf import extract_range

out = {"compiled": compiled.active(), "documents": {}}
for path in sorted(Path(p) for folder in sys.argv[1:] for p in Path(folder).glob("*.pdf")):
    try:
        pages = extract_range(str(path), 1, 10_000)["pages"]
    except Exception as exc:  # a broken fixture: the same failure either way
        out["documents"][path.name] = type(exc).__name__
        continue
    records = [decide_page(p, ocr="auto", gpu=False) for p in pages]
    decided = [r.model_dump(mode="json") for r in records]
    for r in decided:
        r.get("layer", {}).pop("seconds", None)
        for a in r.get("attempts", []):
            a.pop("seconds", None)
    accepted = [_page_in(r, ACCEPTED_ROUTES) for r in records if isinstance(r, PageRecord)]
    chunks = list(iter_chunks(iter(accepted), {"doc_sha256": "x", "filename": path.name, "pipeline_version": "t"}, ChunkRules()))
    out["documents"][path.name] = {"pages": pages, "decided": decided, "chunks": chunks}
print(json.dumps(out, ensure_ascii=False, sort_keys=True, default=str))
"""


def _decisions(folders: list[Path], *, compiled_on: bool) -> dict:
    env = dict(os.environ, PAGEFLEET_COMPILED="1" if compiled_on else "0")
    done = subprocess.run(
        [sys.executable, "-c", _DECIDE, *map(str, folders)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(done.stdout)


@pytest.mark.skipif(
    not compiled.built() or bool(compiled.stale()), reason="no current mypyc build (make compiled)"
)
def test_the_build_decides_every_fixture_page_as_the_sources_do(
    fixtures_dir: Path, structure_dir: Path
) -> None:
    fast = _decisions([fixtures_dir, structure_dir], compiled_on=True)
    plain = _decisions([fixtures_dir, structure_dir], compiled_on=False)
    assert fast["compiled"] and not plain["compiled"]
    assert len(fast["documents"]) >= 20
    assert sum(len(d["decided"]) for d in fast["documents"].values() if isinstance(d, dict)) >= 40
    for name, doc in plain["documents"].items():
        assert fast["documents"][name] == doc, name


def _tiny(tmp_path: Path, body: str) -> tuple[Path, list[str]]:
    pkg = tmp_path / "pfx_tiny"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "calc.py").write_text(body, encoding="utf-8")
    return tmp_path, ["pfx_tiny.calc"]


def test_a_build_runs_where_enabled_from_any_directory(tmp_path: Path) -> None:
    """The build lies in its package's build folder; an import loads the source until `enable()`,
    and then the build, from whatever directory the process started in."""
    root, modules = _tiny(tmp_path / "src", "def twice(x: int) -> int:\n    return 2 * x\n")
    older = (
        root / "pfx_tiny" / f"calc{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    )  # an in-place build's
    older.write_bytes(b"older build")
    stamp = compiled.build(root, modules, group="pfx_tiny._gate")
    assert not older.exists()
    assert stamp == root / "pfx_tiny" / compiled.STAMP.name
    assert json.loads(stamp.read_text(encoding="utf-8"))["sources"] == compiled.digests(
        modules, root
    )
    made = compiled.extensions(modules, root, group="pfx_tiny._gate")
    assert {p.name.split(".")[0] for p in made} == {"calc", "_gate__mypyc"}
    assert all(p.is_relative_to(root / "pfx_tiny" / compiled.BUILD) for p in made)
    assert not list(root.glob("*.so")) and not list(
        (root / "pfx_tiny").glob("*.so")
    )  # nothing beside the sources
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = (
        "import sys; from pathlib import Path; from pagefleet.routing import compiled; import pfx_tiny.calc as c; "
        "print(c.__file__.endswith('.py')); del sys.modules['pfx_tiny.calc']; "
        f"print(compiled.enable({modules!r}, Path({str(root)!r}), 'pfx_tiny._gate')); "
        "import pfx_tiny.calc as c; print(c.__file__.endswith('.so'), c.twice(21))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=elsewhere,
        env=dict(os.environ, PYTHONPATH=f"{root}{os.pathsep}{ROOT}"),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.split() == ["True", "True", "True", "42"]


def test_a_failed_build_leaves_no_extension_and_no_stamp(tmp_path: Path) -> None:
    root, modules = _tiny(
        tmp_path, "def twice(x: int) -> int:\n    return 'two'\n"
    )  # mypy refuses it
    left = compiled.extension(
        "pfx_tiny.calc", root, group="pfx_tiny._gate"
    )  # an earlier, interrupted build
    left.parent.mkdir(parents=True)
    left.write_bytes(b"stale")
    with pytest.raises(subprocess.CalledProcessError):
        compiled.build(root, modules, group="pfx_tiny._gate")
    assert not left.exists() and not (root / "pfx_tiny" / compiled.STAMP.name).exists()
    assert not compiled.built(modules, root, group="pfx_tiny._gate")
