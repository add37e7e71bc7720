"""CLI conventions: `--version`, usage errors exit 64 (2 means "needs review"), `--ocr` choices,
help text on every option of every command."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from pagefleet.workers.cli.main import EX_USAGE, main, parser, version


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pagefleet.workers.cli.main", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_version_and_usage_errors() -> None:
    shown = _cli("--version")
    assert shown.returncode == 0 and shown.stdout.strip() == f"pagefleet {version()}"
    for argv in (
        ["run"],
        ["no-such-command"],
        ["run", "a.pdf", "--out", "o", "--ocr", "sometimes"],
        ["worker", "--concurrency", "many", "--queues", "cpu"],
        ["models", "pull", "--bogus"],
    ):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == EX_USAGE, argv
    bad = _cli("submit", "x.pdf", "--storage", "file:///tmp/x", "--ocr", "maybe")
    assert bad.returncode == 64 and "invalid choice" in bad.stderr


def _walk(p: argparse.ArgumentParser, path: str = "pagefleet"):
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _walk(child, f"{path} {name}")
        else:
            yield path, action


def test_every_option_has_help() -> None:
    missing = [
        f"{path} {'/'.join(a.option_strings) or a.dest}"
        for path, a in _walk(parser())
        if not isinstance(a, argparse._HelpAction) and not (a.help and a.help.strip())
    ]
    assert not missing, missing


def test_ocr_has_choices_everywhere() -> None:
    ocr = [a for _, a in _walk(parser()) if "--ocr" in a.option_strings]
    assert ocr and all(tuple(a.choices) == ("auto", "off", "force") for a in ocr)
