"""The warm sandbox server: a fresh forked child per command, limits and timeouts still hold, and a
dead server is replaced on the next call."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from workers.errors import SandboxError
from workers.pdf.forkserver import CLIENT
from workers.pdf.sandbox import run_child

LIMITS = {"timeout_s": 60.0, "memory_mb": 3072}


@pytest.fixture
def pdf(tmp_path: Path) -> str:
    path = tmp_path / "three.pdf"
    with pymupdf.open() as doc:
        for i in range(3):
            doc.new_page().insert_text((72, 72), f"page {i + 1} hello world")
        doc.save(path)
    return str(path)


def test_commands_share_one_warm_server(pdf: str) -> None:
    first = run_child("probe", pdf, {}, **LIMITS)
    server = CLIENT._proc.pid if CLIENT._proc else None
    pages = run_child("extract", pdf, {"first": 1, "last": 3}, **LIMITS)["pages"]
    assert first["page_count"] == 3 and [p["number"] for p in pages] == [1, 2, 3]
    assert "page 2 hello world" in pages[1]["text"]
    assert server is not None and CLIENT._proc is not None and CLIENT._proc.pid == server


def test_a_dead_server_is_replaced(pdf: str) -> None:
    run_child("probe", pdf, {}, **LIMITS)
    assert CLIENT._proc is not None
    CLIENT._proc.kill()
    CLIENT._proc.wait()
    assert run_child("probe", pdf, {}, **LIMITS)["page_count"] == 3


def test_a_child_over_its_memory_limit_is_a_sandbox_error(pdf: str, tmp_path: Path) -> None:
    params = {"page": 1, "dpi": 600, "png": str(tmp_path / "big.png")}  # a 33-megapixel page
    with pytest.raises(SandboxError):
        run_child("render", pdf, params, timeout_s=60.0, memory_mb=16)
    assert run_child("probe", pdf, {}, **LIMITS)["page_count"] == 3  # the server itself lives on


def test_a_command_past_its_timeout_is_killed(tmp_path: Path) -> None:
    path = tmp_path / "many.pdf"
    with pymupdf.open() as doc:
        for _ in range(400):
            doc.new_page().insert_text((72, 72), "שלום עולם " * 40)
        doc.save(path)
    with pytest.raises(SandboxError, match="timed out"):
        run_child("extract", str(path), {"first": 1, "last": 400}, timeout_s=0.05, memory_mb=3072)


def test_unknown_command_fails_cleanly(pdf: str) -> None:
    with pytest.raises(SandboxError, match="unknown sandbox command"):
        run_child("nope", pdf, {}, **LIMITS)
