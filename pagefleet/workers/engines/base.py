"""The one small interface every OCR engine implements, and the registry that names them.

An engine reads rendered page images and returns one `EngineOutput` per image. It raises only
`EngineError` subclasses (translated where third-party errors enter); the OCR stage turns those into
rejected attempts on the page record, never into a failed document.

Engines register by name (`tesseract`, `paddle`, `lightonocr`, `dots`, `qwen`, `http`, `null`,
`crash`); a chain entry is `name` or `name:variant` (e.g. `tesseract:heb+eng`). Heavy engines load
their models lazily, once per process.

Adding an engine is one module in `pagefleet/workers/engines/` (every module there is imported when an
engine is first asked for) plus its test. The module subclasses `Engine`, decorates the class with
`@register(name)`, and declares on the class what the rest of the fleet asks of it:

    name        the chain entry's name
    device      cpu | gpu | remote: the queue and rung the engine runs on
    scripts     the routed scripts (latin, he, ar) it reads; `reads(variant)` when a variant changes that
    languages   `languages(variant)`: the languages it reads (ISO 639-3, as Tesseract names them)
    structure   True when its text is Markdown whose headings, lists and tables are the page's
                structure (the collector parses it); False for plain lines of text

Routing never imports an engine: the caller hands it `scripts_by_entry(...)` as data.
"""

from __future__ import annotations

import abc
import functools
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from pagefleet.workers.errors import EngineCrashed, EngineError, EngineUnavailable

log = logging.getLogger(__name__)
# What third-party engine code raises besides our own errors. An import that fails (a missing or
# broken library: paddle, OpenCV without libGL) makes the engine unavailable; the rest crash this
# engine's attempt on these pages. Translated at the engine's boundary, so neither can fail a task
# (Celery's SoftTimeLimitExceeded is none of these and passes through).
IMPORT_ERRORS: tuple[type[BaseException], ...] = (ImportError,)
RUNTIME_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    RuntimeError,
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    AttributeError,
    ArithmeticError,
)


@dataclass(frozen=True)
class PageImage:
    """A rendered page on local disk (PNG, grayscale or RGB)."""

    path: str
    page: int
    dpi: int = 300
    pdf: str | None = (
        None  # the source PDF on local disk, for engines that read it themselves (`command`)
    )


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


ALL_SCRIPTS = frozenset({"latin", "he", "ar"})  # the scripts routing decides between


class Engine(abc.ABC):
    """Base class. Subclasses set the class attributes below and implement `health` and `read`.

    The class attributes are the engine's declaration, read without creating the engine (routing's
    checks, the collector's structure parsing, the rung a failed start is recorded on):
    `scripts` and `structure` default to a plain-text engine that reads Latin script only.
    """

    name: str = "engine"
    device: Literal["cpu", "gpu", "remote"] = "cpu"
    scripts: frozenset[str] = frozenset({"latin"})  # routed scripts read with no variant
    structure: bool = False  # the text is Markdown carrying the page's structure

    @classmethod
    def reads(cls, variant: str | None) -> frozenset[str]:
        """The routed scripts (`latin`, `he`, `ar`) this engine reads with `variant`. Override
        when a variant changes them (Tesseract's language packs, `paddle:arabic`)."""
        return cls.scripts

    @classmethod
    def languages(cls, variant: str | None) -> frozenset[str]:
        """The languages this engine reads with `variant` (ISO 639-3 codes, as Tesseract names
        them); empty when the engine does not say (a VLM reads whatever its scripts hold)."""
        return frozenset()

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
            raise EngineUnavailable(
                f"{self.label}: cannot import what it needs: {type(e).__name__}: {e}"
            ) from e
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
            return EngineHealth(
                self.label, False, f"health check failed: {type(e).__name__}: {e}", self.device
            )

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


def declared(entry: str) -> Any:
    """The registered class (or factory) of a chain entry, None when no engine has that name."""
    from pagefleet.workers.engines import load_builtin

    load_builtin()
    return _REGISTRY.get(parse_entry(entry)[0])


def device_of(entry: str) -> str:
    """Where an engine runs, known before (or without) creating it: for recording a failed start."""
    return str(getattr(declared(entry), "device", "cpu"))


def scripts_read(entry: str) -> frozenset[str]:
    """The routed scripts a chain entry reads, as its engine declares (empty: no such engine)."""
    reads = getattr(declared(entry), "reads", None)
    return frozenset(reads(parse_entry(entry)[1])) if callable(reads) else frozenset()


def scripts_by_entry(entries: Iterable[str]) -> dict[str, frozenset[str]]:
    """Chain entry -> the scripts it reads: the data routing's checks are given."""
    return {entry: scripts_read(entry) for entry in entries}


def gives_structure(entry: str) -> bool:
    """Whether a chain entry's text is Markdown carrying the page's structure."""
    return bool(getattr(declared(entry), "structure", False))


def create(entry: str, **options: Any) -> Engine:
    name, variant = parse_entry(entry)
    factory = declared(entry)  # registers the built-in engines on first use
    if factory is None:
        from pagefleet.workers.engines import import_failures

        broken = "; ".join(f"{m}: {why}" for m, why in import_failures().items())
        raise EngineUnavailable(
            f"no engine named {name!r} (known: {', '.join(registered())})"
            + (f"; modules that failed to import: {broken}" if broken else "")
        )
    try:
        return factory(variant=variant, **options)
    except EngineError:
        raise
    except (*IMPORT_ERRORS, *RUNTIME_ERRORS) as e:
        raise EngineUnavailable(f"{entry}: cannot start: {type(e).__name__}: {e}") from e
