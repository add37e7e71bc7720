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
)
_loaded = False


def load_builtin() -> None:
    global _loaded
    if _loaded:
        return
    for module in BUILTIN_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:  # a module of ours that exists but needs something missing
                raise
    _loaded = True
