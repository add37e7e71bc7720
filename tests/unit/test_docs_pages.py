"""The docs as a user meets them: the README stays a front page, every benchmark page says the
command that rewrites it and holds one run (bench/page.py keeps the page's hand-written part and
replaces its latest run), and no page narrates the project's history."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from bench import page

ROOT = Path(__file__).resolve().parents[2]
ROUND = re.compile(
    r"\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|"
    r"thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|"
    r"thirtieth|fortieth|(twenty|thirty)-(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth))"
    r"[- ]round|\bround [0-9]+",
    re.IGNORECASE,
)


def test_the_readme_is_a_front_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    for target in re.findall(r"\]\(((?:docs/|CHANGELOG)[^)#]*)", readme):
        assert (ROOT / target).exists(), target
    assert "make run" in readme and "make test" in readme and "docs/benchmarks/index.md" in readme


def test_no_page_or_comment_in_the_repository_mentions_a_numbered_round() -> None:
    """Every document, source and configuration file the repository holds."""
    files = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "Makefile", ROOT / "pyproject.toml"]
    for folder in (
        "docs",
        "bench",
        "scripts",
        "tests",
        "docker",
        "k8s",
        "pagefleet",
        "fixtures",
    ):
        files += [
            p
            for p in (ROOT / folder).rglob("*")
            if p.suffix in (".md", ".py", ".yaml", ".yml", ".c")
        ]
    hits = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in files
        if p.is_file()
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if ROUND.search(line)
    ]
    assert hits == []


def test_every_benchmark_page_names_its_command_and_holds_one_run() -> None:
    pages = sorted((ROOT / "docs" / "benchmarks").glob("*.md"))
    assert len(pages) >= 8
    for path in pages:
        text = path.read_text(encoding="utf-8")
        if path.name in (
            "index.md",
            "producers.md",
        ):  # producers.md is written whole by make eval-producers
            continue
        assert "```sh" in text.split(page.MARKER)[0], f"{path.name}: no command to regenerate it"
        assert text.count(page.MARKER) == 1, path.name


def test_a_run_replaces_the_last_one_and_keeps_the_page(tmp_path: Path) -> None:
    target = tmp_path / "bench.md"
    target.write_text(
        "# A bench\n\nWhat it measures.\n\n```sh\nmake bench\n```\n", encoding="utf-8"
    )
    page.write(target, "| a |\n|---|\n| 1 |", "python bench/x.py")
    page.write(target, "| a |\n|---|\n| 2 |", "python bench/x.py --quick")
    text = target.read_text(encoding="utf-8")
    assert text.startswith("# A bench\n\nWhat it measures.\n\n```sh\nmake bench\n```\n")
    assert text.count(page.MARKER) == 1 and "| 2 |" in text and "| 1 |" not in text
    assert "python bench/x.py --quick" in text and "Last run: " in text


def test_the_page_command_writes_a_commands_output_and_leaves_a_failure_alone(
    tmp_path: Path,
) -> None:
    target = tmp_path / "p.md"
    assert page.main([str(target), "--", "echo", "closing_line=1"]) == 0
    assert "closing_line=1" in target.read_text(encoding="utf-8")
    before = target.read_text(encoding="utf-8")
    assert page.main([str(target), "--", "false"]) == 1  # no output: nothing to show
    crash = [
        sys.executable,
        "-c",
        "raise SystemExit(__import__('traceback').print_stack() or 'Traceback "
        "(most recent call last): boom')",
    ]
    assert page.main([str(target), "--", *crash]) == 1
    killed = [
        sys.executable,
        "-c",
        "import os, signal; print('half'); os.kill(os.getpid(), signal.SIGKILL)",
    ]
    assert page.main([str(target), "--", *killed]) != 0
    assert target.read_text(encoding="utf-8") == before
    checks_failed = [sys.executable, "-c", "print('verdicts: 58/59'); raise SystemExit(2)"]
    assert page.main([str(target), "--", *checks_failed]) == 2
    assert (
        "verdicts: 58/59" in target.read_text(encoding="utf-8")
        and "# exit status 2" in target.read_text()
    )
    assert page.main([str(target)]) == 64
