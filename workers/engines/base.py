"""The one small interface every OCR engine implements, and the registry that names them.

An engine reads rendered page images and returns one `EngineOutput` per image. It raises only
`EngineError` subclasses (translated where third-party errors enter); the OCR stage turns those into
rejected attempts on the page record, never into a failed document.

Engines register by name (`tesseract`, `paddle`, `lightonocr`, `dots`, `qwen`, `http`, `null`,
`crash`); a chain entry is `name` or `name:variant` (e.g. `tesseract:heb+eng`). Heavy engines load
their models lazily, once per process.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from workers.errors import EngineUnavailable


@dataclass(frozen=True)
class PageImage:
    """A rendered page on local disk (PNG, grayscale or RGB)."""

    path: str
    page: int
    dpi: int = 300


@dataclass
class EngineOutput:
    text: str
    engine: str
    seconds: float
    confidence: float | None = None  # mean word confidence 0..100 when the engine has one
    details: dict[str, Any] = field(default_factory=dict)  # tokens, finish reason, ...


@dataclass(frozen=True)
class EngineHealth:
    name: str
    available: bool
    detail: str = ""
    device: Literal["cpu", "gpu", "remote"] = "cpu"


class Engine(abc.ABC):
    """Base class. Subclasses set `name` and `device` and implement `health` and `read`."""

    name: str = "engine"
    device: Literal["cpu", "gpu", "remote"] = "cpu"

    def __init__(self, variant: str | None = None, **options: Any) -> None:
        self.variant = variant
        self.options = options

    @property
    def label(self) -> str:
        """What a page records as its `engine`: `name` or `name:variant`."""
        return f"{self.name}:{self.variant}" if self.variant else self.name

    @abc.abstractmethod
    def health(self) -> EngineHealth:
        """Is it installed, are its weights present? Cheap; never loads a model."""

    @abc.abstractmethod
    def read(self, images: list[PageImage], *, script: str) -> list[EngineOutput]:
        """Read every image (batched where the engine can); one output per image, same order."""


EngineFactory = Callable[..., Engine]
_REGISTRY: dict[str, EngineFactory] = {}


def register(name: str) -> Callable[[EngineFactory], EngineFactory]:
    def wrap(factory: EngineFactory) -> EngineFactory:
        _REGISTRY[name] = factory
        return factory

    return wrap


def registered() -> list[str]:
    return sorted(_REGISTRY)


def parse_entry(entry: str) -> tuple[str, str | None]:
    """`tesseract:heb+eng` → ("tesseract", "heb+eng"); `dots` → ("dots", None)."""
    name, _, variant = entry.partition(":")
    return name.strip(), (variant.strip() or None)


def device_of(entry: str) -> str:
    """Where an engine runs, known before (or without) creating it: for recording a failed start."""
    from workers.engines import load_builtin

    load_builtin()
    return str(getattr(_REGISTRY.get(parse_entry(entry)[0]), "device", "cpu"))


def create(entry: str, **options: Any) -> Engine:
    from workers.engines import load_builtin  # registers the built-in engines on first use

    load_builtin()
    name, variant = parse_entry(entry)
    factory = _REGISTRY.get(name)
    if factory is None:
        raise EngineUnavailable(f"no engine named {name!r} (known: {', '.join(registered())})")
    return factory(variant=variant, **options)
