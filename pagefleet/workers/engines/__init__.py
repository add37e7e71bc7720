"""OCR engines. `base` holds the interface and registry; each module registers its engines.

Every module of this package is imported the first time an engine is asked for (`load_builtin`),
so a new engine is one module here: nothing else lists it. Modules must not import heavy packages
(torch, transformers, onnxruntime) at import time: they load them lazily inside the engine, once
per process, so a CPU worker never pays for them.
"""

from __future__ import annotations

import importlib
import pkgutil

_loaded = False
_FAILED: dict[str, str] = {}


def engine_modules() -> list[str]:
    """Every module of this package (the engines and the helpers they share), in name order."""
    return sorted(
        f"{__name__}.{m.name}" for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")
    )


def load_builtin() -> None:
    """Import every module of this package once. A module that fails to import (something it needs
    is missing or broken) registers nothing and is remembered: its engines are then unavailable,
    with the reason (`import_failures`), instead of failing whatever asked for an engine."""
    global _loaded
    if _loaded:
        return
    for module in engine_modules():
        try:
            importlib.import_module(module)
        except ImportError as exc:
            _FAILED[module] = f"{type(exc).__name__}: {exc}"
    _loaded = True


def import_failures() -> dict[str, str]:
    return dict(_FAILED)
