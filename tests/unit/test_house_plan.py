"""The house plan (DESIGN.md "Layout", docs/architecture.md), enforced: dependencies point one way,
modules stay small. The three parts of the one import package, `pagefleet`:

    pagefleet/tasks/ ──► pagefleet/workers/ ──► pagefleet/routing/
    pagefleet/routing/ is pure: no pagefleet/workers/, no pagefleet/tasks/, no celery
    only pagefleet/workers/app.py and pagefleet/tasks/ import celery; pagefleet/workers/ never
    imports pagefleet/tasks/
    no module over 400 lines, no function over 60
    at most 10 modules at the top of pagefleet/workers/ (the rest lives in its stage's folder)
    no import loop, not even through imports inside functions
    every module imports only the parts docs/architecture.toml allows its part (the doc draws it)
    no scheme check ("s3://", an isinstance on a storage class) outside pagefleet/workers/store/
    no file in pagefleet/tasks/ over 80 lines: a task picks what runs and maps the outcome; no task
    imports another task module's private names
    no two modules under pagefleet/routing/, pagefleet/workers/ and pagefleet/tasks/ share a file
    name
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "pagefleet"  # the one import package
PACKAGES = ("routing", "workers", "tasks")  # its parts
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
MAX_TOP_MODULES = 10
MAX_TASK_LINES = 80
LOOP_FOLDERS = ("pagefleet", "bench")  # the import package (all of it) and the benchmarks
SCHEMES = ("s3://", "file://")
STORAGE_CLASSES = {"Storage", "LocalStorage", "S3Storage"}


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def _modules(package: str) -> list[Path]:
    """The modules of one part of the pagefleet package ("routing", "workers", "tasks")."""
    return _files(PKG / package)


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
    """The part of pagefleet a module belongs to (`pagefleet.workers.app`: "workers"), or the
    top-level package of any other module (`celery.signals`: "celery")."""
    parts = name.split(".")
    return parts[1] if parts[0] == "pagefleet" and len(parts) > 1 else parts[0]


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_routing_is_pure() -> None:
    bad = {
        _rel(p): sorted(
            m for m in _imports(p) if _top(m) in ("workers", "tasks", "celery", "kombu", "redis")
        )
        for p in _modules("routing")
    }
    assert not {k: v for k, v in bad.items() if v}, (
        "pagefleet/routing/ must not import pagefleet/workers/, pagefleet/tasks/ or do I/O"
    )


def test_workers_never_import_tasks() -> None:
    bad = {
        _rel(p): sorted(m for m in _imports(p) if _top(m) == "tasks") for p in _modules("workers")
    }
    assert not {k: v for k, v in bad.items() if v}, (
        "pagefleet/workers/ must not import pagefleet/tasks/ (dependencies point down)"
    )


def test_only_app_and_tasks_import_celery() -> None:
    # the app, and the bootsteps it adds
    allowed = {"pagefleet/workers/app.py", "pagefleet/workers/fleet/steps.py"}
    offenders = [
        _rel(p)
        for pkg in ("routing", "workers")
        for p in _modules(pkg)
        if _rel(p) not in allowed and any(_top(m) == "celery" for m in _imports(p))
    ]
    assert offenders == [], (
        f"celery imported outside pagefleet/workers/app.py, its bootsteps and pagefleet/tasks/: {offenders}"
    )
    assert any(_top(m) == "celery" for m in _imports(PKG / "workers" / "app.py"))


@pytest.mark.parametrize("package", PACKAGES)
def test_modules_are_small(package: str) -> None:
    big = {
        _rel(p): n
        for p in _modules(package)
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
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
    assert not (ROOT / "pagefleet" / "workers" / "engines" / "tiny_models.py").exists()
    assert (ROOT / "tests" / "support" / "tiny_models.py").exists()


def test_the_top_of_workers_is_small() -> None:
    top = sorted(p.stem for p in (PKG / "workers").glob("*.py") if p.stem != "__init__")
    assert len(top) <= MAX_TOP_MODULES, (
        f"{len(top)} modules at the top of pagefleet/workers/ (stage code goes in its folder): {top}"
    )


def test_tasks_are_thin() -> None:
    long = {
        _rel(p): n
        for p in _modules("tasks")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_TASK_LINES
    }
    assert long == {}, (
        f"pagefleet/tasks/ files over {MAX_TASK_LINES} lines (the work belongs in its stage folder): {long}"
    )


def test_no_task_imports_another_tasks_private_names() -> None:
    found = {}
    for path in _modules("tasks"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and _top(node.module or "") == "tasks":
                private = [a.name for a in node.names if a.name.startswith("_")]
                if private:
                    found[f"{_rel(path)}:{node.lineno}"] = private
    assert found == {}, (
        f"tasks import each other's private names (the work belongs in pagefleet/workers/): {found}"
    )


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """Module -> the modules of this tree it imports, anywhere in the file (inside functions and
    `if TYPE_CHECKING:` too): `from a import b` names a.b where that is a module, else a."""
    paths = {_module_name(p): p for folder in LOOP_FOLDERS for p in _files(ROOT / folder)}

    def known(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(known(alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                found.update(
                    f"{base}.{a.name}" if f"{base}.{a.name}" in paths else known(base)
                    for a in node.names
                )
        graph[name] = {m for m in found if m and m != name}
    return graph


def _loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    loops: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph.get(step, ())))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    loops.append(sorted(component))
    return loops


def test_no_import_loops_not_even_inside_functions() -> None:
    loops = _loops(_import_graph())
    assert loops == [], f"import loops (function-level imports count): {loops}"


def test_the_loop_finder_finds_a_loop_through_a_function_level_import() -> None:
    assert _loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _loops({"a": {"b"}, "b": set()}) == []


def _is_scheme(node: ast.AST) -> bool:
    if isinstance(node, ast.Tuple):
        return any(_is_scheme(e) for e in node.elts)
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith(SCHEMES)
    )


def _scheme_checks(tree: ast.AST) -> list[int]:
    """Lines that look at a URI's scheme: `x.startswith("s3://")` and the like, `len("s3://")`,
    `scheme == "s3"`, or an isinstance on a storage class."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else ""
            )
            if name in ("startswith", "endswith", "removeprefix", "partition", "len") and any(
                map(_is_scheme, node.args)
            ):
                found.append(node.lineno)
            elif name == "isinstance" and len(node.args) == 2:
                kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
                names = {
                    k.id
                    if isinstance(k, ast.Name)
                    else k.attr
                    if isinstance(k, ast.Attribute)
                    else ""
                    for k in kinds
                }
                if names & STORAGE_CLASSES:
                    found.append(node.lineno)
        elif isinstance(node, ast.Compare) and all(
            isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops
        ):
            sides = [node.left, *node.comparators]
            if any(
                isinstance(s, ast.Constant) and s.value in ("s3", "file", *SCHEMES) for s in sides
            ):
                found.append(node.lineno)
    return sorted(found)


def test_only_the_store_knows_a_uris_scheme() -> None:
    found = {
        _rel(p): lines
        for pkg in PACKAGES
        for p in _modules(pkg)
        if "store" not in p.relative_to(PKG).parts[1:2]
        and (lines := _scheme_checks(ast.parse(p.read_text(encoding="utf-8"))))
    }
    assert found == {}, (
        "scheme checks outside pagefleet/workers/store/ (use pagefleet.workers.store.uri, "
        f"Storage.local_root): {found}"
    )


def test_the_scheme_finder_finds_checks() -> None:
    code = (
        "a.startswith('s3://')\nlen('file://')\nu.scheme == 's3'\nisinstance(s, (LocalStorage, X))\n"
        "f'{x}'\nprint('s3://bucket')\n's3' in record\n"
    )
    assert _scheme_checks(ast.parse(code)) == [1, 2, 3, 4]


ARCHITECTURE = ROOT / "docs" / "architecture.toml"
EVERYONE = ("Core", "Routing")  # the parts every part but Routing may import


def _architecture() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    data = tomllib.loads(ARCHITECTURE.read_text(encoding="utf-8"))
    return data["parts"], data["arrows"]


def _part_of(module: str, parts: dict[str, list[str]]) -> str | None:
    """The part holding `module` (a dotted name of this tree): its file or its longest folder."""
    path = module.replace(".", "/")
    best, length = None, -1
    for part, places in parts.items():
        for place in places:
            name = place.removesuffix(".py").removesuffix("/__init__")
            if place.endswith(".py") and path in (name, name + "/__init__"):
                return part
            if (
                not place.endswith(".py")
                and (path == name or path.startswith(name + "/"))
                and len(name) > length
            ):
                best, length = part, len(name)
    return best


def _architecture_breaches(
    graph: dict[str, set[str]], parts: dict[str, list[str]], arrows: dict[str, list[str]]
) -> list[str]:
    breaches = []
    for module, imports in sorted(graph.items()):
        source = _part_of(module, parts)
        if source is None:
            continue
        allowed = {source, *arrows[source], *(EVERYONE if source != "Routing" else ())}
        for target in sorted(imports):
            part = _part_of(target, parts)
            if part is not None and part not in allowed:
                breaches.append(f"{module} ({source}) -> {target} ({part})")
    return breaches


def test_every_module_belongs_to_a_part() -> None:
    parts, arrows = _architecture()
    assert set(parts) == set(arrows)
    lost = [
        name for name in _import_graph() if _top(name) != "bench" and _part_of(name, parts) is None
    ]
    assert lost == [], f"modules in no part of docs/architecture.toml: {lost}"


def test_parts_import_only_what_the_architecture_allows() -> None:
    parts, arrows = _architecture()
    breaches = _architecture_breaches(_import_graph(), parts, arrows)
    assert breaches == [], (
        f"imports the architecture (docs/architecture.toml) does not allow: {breaches}"
    )


def test_the_architecture_check_finds_a_breach() -> None:
    parts, arrows = _architecture()
    graph = {
        "pagefleet.workers.store.keys": {
            "pagefleet.workers.ladder.ocr_stage",
            "pagefleet.workers.settings",
        },
        "pagefleet.routing.chains": {"pagefleet.workers.model"},
    }
    assert _architecture_breaches(graph, parts, arrows) == [
        "pagefleet.routing.chains (Routing) -> pagefleet.workers.model (Core)",
        "pagefleet.workers.store.keys (Store) -> pagefleet.workers.ladder.ocr_stage (Ladder)",
    ]


def test_the_stages_form_no_loop() -> None:
    """Between the stage parts the arrows point one way (Core and App are the fleet's plumbing)."""
    _, arrows = _architecture()
    plumbing = ("Core", "App")
    stages = {
        p: {q for q in targets if q not in plumbing}
        for p, targets in arrows.items()
        if p not in plumbing
    }
    assert _loops(stages) == []


def test_the_picture_draws_the_table() -> None:
    """docs/architecture.md's Mermaid picture draws exactly the arrows of the table."""
    _, arrows = _architecture()
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    picture = text.split("```mermaid", 1)[1].split("```", 1)[0]
    drawn = set()
    for line in picture.splitlines():
        if "-->" in line:
            source, _, targets = line.partition("-->")
            drawn |= {(source.strip(), t.strip()) for t in targets.split("&")}
    assert drawn == {(p, q) for p, targets in arrows.items() for q in targets}


def test_no_two_modules_share_a_name() -> None:
    """A module's file name says what it holds, once: `pagefleet/routing/visual_order.py`, not a third `order.py`."""
    seen: dict[str, list[str]] = {}
    for package in PACKAGES:
        for path in _modules(package):
            if path.name != "__init__.py":
                seen.setdefault(path.name, []).append(_rel(path))
    shared = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert shared == {}, f"modules sharing a file name: {shared}"
