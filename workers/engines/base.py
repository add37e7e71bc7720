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
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from workers.errors import EngineCrashed, EngineError, EngineUnavailable

log = logging.getLogger(__name__)
# What third-party engine code raises besides our own errors. An import that fails (a missing or
# broken library: paddle, OpenCV without libGL) makes the engine unavailable; the rest crash this
# engine's attempt on these pages. Translated at the engine's boundary, so neither can fail a task
# (Celery's SoftTimeLimitExceeded is none of these and passes through).
IMPORT_ERRORS: tuple[type[BaseException], ...] = (ImportError,)
RUNTIME_ERRORS: tuple[type[BaseException], ...] = (
    OSError, RuntimeError, ValueError, TypeError, KeyError, IndexError, AttributeError, ArithmeticError,
)


@dataclass(frozen=True)
class PageImage:
    """A rendered page on local disk (PNG, grayscale or RGB)."""

    path: str
    page: int
    dpi: int = 300
    pdf: str | None = None  # the source PDF on local disk, for engines that read it themselves (`command`)


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

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every engine's own `read` and `health` get the error boundary (`_guard_read`/`_guard_health`)."""
        super().__init_subclass__(**kwargs)
        if "read" in cls.__dict__:
            cls.read = _guard_read(cls.__dict__["read"])  # type: ignore[method-assign]
        if "health" in cls.__dict__:
            cls.health = _guard_health(cls.__dict__["health"])  # type: ignore[method-assign]

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


def _guard_read(read: Callable[..., list[EngineOutput]]) -> Callable[..., list[EngineOutput]]:
    @functools.wraps(read)
    def guarded(self: Engine, images: list[PageImage], *, script: str) -> list[EngineOutput]:
        try:
            return read(self, images, script=script)
        except EngineError:
            raise
        except IMPORT_ERRORS as e:
            raise EngineUnavailable(f"{self.label}: cannot import what it needs: {type(e).__name__}: {e}") from e
        except RUNTIME_ERRORS as e:
            raise EngineCrashed(f"{self.label}: {type(e).__name__}: {e}") from e

    return guarded


def _guard_health(health: Callable[..., EngineHealth]) -> Callable[..., EngineHealth]:
    @functools.wraps(health)
    def guarded(self: Engine) -> EngineHealth:
        try:
            return health(self)
        except (EngineError, *IMPORT_ERRORS, *RUNTIME_ERRORS) as e:
            log.warning("engine %s: health check failed: %s", self.label, e)
            return EngineHealth(self.label, False, f"health check failed: {type(e).__name__}: {e}", self.device)

    return guarded


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
        from workers.engines import import_failures

        broken = "; ".join(f"{m}: {why}" for m, why in import_failures().items())
        raise EngineUnavailable(f"no engine named {name!r} (known: {', '.join(registered())})"
                                + (f"; modules that failed to import: {broken}" if broken else ""))
    try:
        return factory(variant=variant, **options)
    except EngineError:
        raise
    except (*IMPORT_ERRORS, *RUNTIME_ERRORS) as e:
        raise EngineUnavailable(f"{entry}: cannot start: {type(e).__name__}: {e}") from e
