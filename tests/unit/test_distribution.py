"""What the distribution installs: one import package, `pagefleet` (`pagefleet.workers`,
`pagefleet.routing`, `pagefleet.tasks`), typed (`py.typed`), with the studio's templates and the C
text walk's source, runnable as `python -m pagefleet`. The wheel is built from a copy of the tree
as it lies (build outputs included), offline: no build isolation, the venv's own setuptools."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(
        ROOT / "pagefleet", src / "pagefleet", ignore=shutil.ignore_patterns("__pycache__")
    )
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index"]
        + ["--wheel-dir", str(work / "dist"), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (built,) = (work / "dist").glob("pagefleet-*.whl")
    return zipfile.ZipFile(built)


def test_the_wheel_installs_the_pagefleet_package_alone(wheel: zipfile.ZipFile) -> None:
    top = {name.split("/", 1)[0] for name in wheel.namelist()}
    info = {t for t in top if t.endswith(".dist-info")}
    assert len(info) == 1 and top - info == {"pagefleet"}, sorted(top)
    names = set(wheel.namelist())
    for part in ("workers", "routing", "tasks"):
        assert f"pagefleet/{part}/__init__.py" in names
    assert {"pagefleet/__init__.py", "pagefleet/__main__.py", "pagefleet/py.typed"} <= names
    (record,) = info
    assert "pagefleet = pagefleet.workers.cli.main:main" in wheel.read(
        f"{record}/entry_points.txt"
    ).decode("utf-8")


def test_the_wheel_holds_its_package_data_and_no_build_output(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    studio = ROOT / "pagefleet" / "workers" / "cli" / "studio"
    data = [p for folder in ("templates", "static") for p in (studio / folder).iterdir()]
    assert data, "the studio's templates and static files"
    assert {p.relative_to(ROOT).as_posix() for p in data} <= names
    assert "pagefleet/workers/pdf/stextwalk.c" in names
    # the C walk and the gate's mypyc build are made where the wheel is installed
    built = [n for n in names if n.endswith(".so") or "/_build/" in n or "_compiled.json" in n]
    assert built == []


def test_python_m_pagefleet_is_the_pagefleet_command(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pagefleet", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: pagefleet ")
    script = subprocess.run(
        [str(Path(sys.executable).parent / "pagefleet"), "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout == script.stdout
    usage = subprocess.run(
        [sys.executable, "-m", "pagefleet", "no-such-command"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert usage.returncode == 64 and "pagefleet: error:" in usage.stderr  # its exit status too


def test_importing_pagefleet_imports_none_of_its_parts(tmp_path: Path) -> None:
    code = (
        "import sys, pagefleet; "
        "print(sorted(m for m in sys.modules if m.startswith('pagefleet')), pagefleet.__version__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    from importlib.metadata import version

    assert done.stdout.split() == ["['pagefleet']", version("pagefleet")]


@pytest.mark.integration
def test_the_gate_compiles_where_the_wheel_is_installed(
    wheel: zipfile.ZipFile, tmp_path: Path
) -> None:
    """The images run `build()` on the installed package: its root is then site-packages, beside
    other top-level modules (`typing_extensions.py`) that mypy must not take for the program's."""
    site = tmp_path / "site"
    wheel.extractall(site)
    import typing_extensions

    shutil.copy2(typing_extensions.__file__, site / "typing_extensions.py")
    done = subprocess.run(
        [sys.executable, "-c", "from pagefleet.routing.compiled import build; build()"],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(site)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    built = site / "pagefleet" / "routing" / "_build" / "pagefleet" / "routing"
    assert (site / "pagefleet" / "routing" / "_compiled.json").exists()
    assert sorted(p.name.split(".")[0] for p in built.glob("quality.*.so")) == ["quality"]
