"""The environment the code reads is the settings tree: every `PAGEFLEET_` variable the pagefleet
package reads is a setting the configuration page documents, or a process switch with its reason;
the old spellings still work, and warn."""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from unittest import mock

import pytest

from pagefleet.workers.settings import Settings, spellings
from pagefleet.workers.settings.spellings import PROCESS_SWITCHES, env_names, new_name

ROOT = Path(__file__).resolve().parents[2]
READ = re.compile(
    r"""(?:environ\.get|getenv|environ\.setdefault)\(\s*["'](PAGEFLEET_\w+)["']"""
    r"""|environ\[\s*["'](PAGEFLEET_\w+)["']\s*\](?!\s*=[^=])"""
)


def _read_by_code() -> set[str]:
    found = set()
    for path in (ROOT / "pagefleet").rglob("*.py"):
        for match in READ.finditer(path.read_text(encoding="utf-8")):
            found.add(match.group(1) or match.group(2))
    return found


def test_every_variable_the_code_reads_is_in_the_tree_or_a_process_switch() -> None:
    tree = set(env_names(Settings))
    page = (ROOT / "docs" / "reference" / "configuration.md").read_text(encoding="utf-8")
    outside = _read_by_code() - tree - set(PROCESS_SWITCHES)
    assert outside == set(), f"read past the settings tree: {sorted(outside)}"
    assert set(PROCESS_SWITCHES) <= _read_by_code(), "a process switch nobody reads: drop it"
    # a section is documented by its fields (a whole section is also settable as JSON)
    undocumented = sorted(
        n
        for n in tree | set(PROCESS_SWITCHES)
        if f"`{n}`" not in page
        and f"`{n}__" not in page
        and not any(f"`{p}`" in page for p in _parents(n))
    )
    assert undocumented == [], f"not on docs/reference/configuration.md: {undocumented}"


def _parents(name: str) -> list[str]:
    parts = name.split("__")
    return ["__".join(parts[:i]) for i in range(1, len(parts))]


def test_routing_reads_no_environment() -> None:
    reads = re.compile(r"os\.environ|getenv\(")
    assert [
        p.name
        for p in (ROOT / "pagefleet" / "routing").rglob("*.py")
        if reads.search(p.read_text(encoding="utf-8"))
    ] == []


def test_no_new_name_reads_as_an_old_spelling() -> None:
    # `PAGEFLEET_GPU` was the switch and is now the section: its old meaning wins
    assert [n for n in env_names(Settings) if new_name(n) is not None] == ["PAGEFLEET_GPU"]


@pytest.mark.parametrize(
    ("old", "value", "holds"),
    [
        ("PAGEFLEET_BROKER_URL", "redis://old:1/0", lambda s: s.broker.url == "redis://old:1/0"),
        ("PAGEFLEET_EVENTS_GATHER_S", "0.75", lambda s: s.events.gather_s == 0.75),
        ("PAGEFLEET_RELIABILITY__MAX_REDISPATCH", "5", lambda s: s.limits.max_redispatch == 5),
        ("PAGEFLEET_GPU", "1", lambda s: s.gpu.enabled),
    ],
)
def test_an_old_spelling_still_works_and_warns_once_naming_the_new(
    old: str, value: str, holds
) -> None:
    spellings._warned.discard(old)
    env = {k: v for k, v in os.environ.items() if k != new_name(old)}
    with mock.patch.dict(os.environ, {**env, old: value}, clear=True):
        with pytest.warns(DeprecationWarning, match=f"{old} is deprecated.*: set {new_name(old)}"):
            assert holds(Settings())
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert holds(Settings())  # once


def test_the_new_spelling_wins_over_the_old() -> None:
    with mock.patch.dict(
        os.environ,
        {"PAGEFLEET_BROKER_URL": "redis://old:1/0", "PAGEFLEET_BROKER__URL": "redis://new:1/0"},
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert Settings().broker.url == "redis://new:1/0"


def test_a_variable_that_is_no_setting_is_left_alone() -> None:
    with mock.patch.dict(os.environ, {"PAGEFLEET_STUDIO_SCREENSHOTS": "/tmp/shots"}):
        assert Settings().studio.port == 4173
