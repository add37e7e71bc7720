"""The house plan (DESIGN.md "Layout"), enforced: dependencies point one way, modules stay small.

    tasks/ ──► workers/ ──► routing/        routing/ is pure: no workers/, no tasks/, no celery
    only workers/app.py and tasks/ import celery; workers/ never imports tasks/
    no module over 400 lines, no function over 60
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("routing", "workers", "tasks")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def _modules(package: str) -> list[Path]:
    return sorted(p for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts)


def _imports(path: Path) -> set[str]:
    """Every module named by an import anywhere in the file (function-level imports included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _top(name: str) -> str:
    return name.split(".", 1)[0]


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_routing_is_pure() -> None:
    bad = {_rel(p): sorted(m for m in _imports(p) if _top(m) in ("workers", "tasks", "celery", "kombu", "redis"))
           for p in _modules("routing")}
    assert not {k: v for k, v in bad.items() if v}, "routing/ must not import workers/, tasks/ or do I/O"


def test_workers_never_import_tasks() -> None:
    bad = {_rel(p): sorted(m for m in _imports(p) if _top(m) == "tasks") for p in _modules("workers")}
    assert not {k: v for k, v in bad.items() if v}, "workers/ must not import tasks/ (dependencies point down)"


def test_only_app_and_tasks_import_celery() -> None:
    allowed = {"workers/app.py"}
    offenders = [_rel(p) for pkg in ("routing", "workers") for p in _modules(pkg)
                 if _rel(p) not in allowed and any(_top(m) == "celery" for m in _imports(p))]
    assert offenders == [], f"celery imported outside workers/app.py and tasks/: {offenders}"
    assert any(_top(m) == "celery" for m in _imports(ROOT / "workers" / "app.py"))


@pytest.mark.parametrize("package", PACKAGES)
def test_modules_are_small(package: str) -> None:
    big = {_rel(p): n for p in _modules(package)
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert big == {}, f"modules over {MAX_MODULE_LINES} lines: {big}"


@pytest.mark.parametrize("package", PACKAGES)
def test_functions_are_short(package: str) -> None:
    long = {}
    for path in _modules(package):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long[f"{_rel(path)}:{node.lineno} {node.name}"] = length
    assert long == {}, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_test_only_code_lives_under_tests() -> None:
    assert not (ROOT / "workers" / "engines" / "tiny_models.py").exists()
    assert (ROOT / "tests" / "support" / "tiny_models.py").exists()
