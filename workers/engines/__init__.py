"""OCR engines. `base` holds the interface and registry; each module registers its engines.

Modules must not import heavy packages (torch, transformers, onnxruntime) at import time: they
load them lazily inside the engine, once per process, so a CPU worker never pays for them.
"""

from __future__ import annotations

import importlib

BUILTIN_MODULES = (
    "workers.engines.null",
    "workers.engines.tesseract",
    "workers.engines.paddle",
    "workers.engines.vlm",
    "workers.engines.http",
    "workers.engines.command",
)
_loaded = False
_FAILED: dict[str, str] = {}


def load_builtin() -> None:
    """Import every built-in engine module once. A module that fails to import (something it needs
    is missing or broken) registers nothing and is remembered: its engines are then unavailable,
    with the reason (`import_failures`), instead of failing whatever asked for an engine."""
    global _loaded
    if _loaded:
        return
    for module in BUILTIN_MODULES:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            if isinstance(exc, ModuleNotFoundError) and exc.name == module:
                continue  # not shipped in this build
            _FAILED[module] = f"{type(exc).__name__}: {exc}"
    _loaded = True


def import_failures() -> dict[str, str]:
    return dict(_FAILED)
