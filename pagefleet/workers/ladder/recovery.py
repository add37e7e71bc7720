"""Structured recovery: a layout-aware extractor for the tables the text layer could not give.

A recoverer is registered by name (`--structured-recovery NAME`, `Options.structured_recovery`)
and returns tables as rows of cells as drawn (left to right) with their boxes; this module puts
them in logical order, builds the page's blocks with them, and holds them to the same check as
any table (Poppler's words, precision and recall ≥ 0.85). To add one (e.g. `wse`): write a
function `(pdf, page_number, timeout_s) -> list[RawTable]`, `register("wse")(fn)`, and add the
name to `Options.structured_recovery`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pagefleet.workers.errors import EngineCrashed, EngineTimeout
from pagefleet.workers.pdf.sandbox import run_tool
from pagefleet.workers.settings import get_settings

RawTable = dict[
    str, Any
]  # {"rows": [[cell, ...], ...] left to right as drawn, "bbox": [x0, y0, x1, y1]}
Recoverer = Callable[[str, int, float], list[RawTable]]
_RECOVERERS: dict[str, Recoverer] = {}


@dataclass
class Recovered:
    blocks: list[dict[str, Any]]
    metrics: dict[str, float] = field(default_factory=dict)


def register(name: str) -> Callable[[Recoverer], Recoverer]:
    def wrap(fn: Recoverer) -> Recoverer:
        _RECOVERERS[name] = fn
        return fn

    return wrap


def names() -> list[str]:
    return sorted(_RECOVERERS)


def recoverer(name: str) -> Recoverer | None:
    return _RECOVERERS.get(name)


def child_json(module: str, label: str, pdf: str, number: int, timeout_s: float) -> dict[str, Any]:
    """`python -m MODULE PDF PAGE` in a sandboxed child; its JSON (``{"tables": [...], ...}``)."""
    argv = [sys.executable, "-m", module, pdf, str(number)]
    try:
        proc = run_tool(
            argv, timeout_s=timeout_s, memory_mb=get_settings().limits.sandbox_memory_mb
        )
    except subprocess.TimeoutExpired as exc:
        raise EngineTimeout(f"{label} timed out after {timeout_s:.0f}s") from exc
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise EngineCrashed(f"{label} exit {proc.returncode}: {err[-1] if err else 'no output'}")
    try:
        data = json.loads(proc.stdout.decode("utf-8"))
        data["tables"] = list(data["tables"])
        return data
    except (ValueError, KeyError, TypeError) as exc:
        raise EngineCrashed(f"{label} gave no JSON: {exc}") from exc


@register("pymupdf4llm")
def pymupdf4llm_tables(pdf: str, number: int, timeout_s: float) -> list[RawTable]:
    return child_json(
        "pagefleet.workers.pdf.pymupdf4llm_child", "pymupdf4llm", pdf, number, timeout_s
    )["tables"]


@register("wse")
def wse_tables(pdf: str, number: int, timeout_s: float) -> list[RawTable]:
    """Word Shape Encoding (issue 10): the page mirrored with English tokens, read by pymupdf4llm,
    decoded (`pagefleet.workers.wse.child`)."""
    return child_json("pagefleet.workers.wse.child", "wse", pdf, number, timeout_s)["tables"]
