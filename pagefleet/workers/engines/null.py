"""Engines for tests and drills: `null` reads nothing, `crash` always fails, `echo` returns fixed text.

Shipped with the product (as OCRmyPDF ships its null engine) so chains and failure handling can
be exercised without any model: a chain `crash → tesseract` must fall through to Tesseract.
"""

from __future__ import annotations

import os
import signal
import time

from pagefleet.workers.engines.base import (
    ALL_SCRIPTS,
    Engine,
    EngineHealth,
    EngineOutput,
    PageImage,
    register,
)
from pagefleet.workers.errors import EngineCrashed


@register("null")
class NullEngine(Engine):
    name = "null"
    scripts = ALL_SCRIPTS
    structure = True

    def health(self) -> EngineHealth:
        return EngineHealth(self.name, True, "reads nothing")

    def read(self, images: list[PageImage], *, script: str) -> list[EngineOutput]:
        return [EngineOutput(text="", engine=self.label, seconds=0.0) for _ in images]


@register("crash")
class CrashEngine(Engine):
    name = "crash"
    scripts = ALL_SCRIPTS
    structure = True

    def health(self) -> EngineHealth:
        return EngineHealth(self.name, True, "always crashes (drills)")

    def read(self, images: list[PageImage], *, script: str) -> list[EngineOutput]:
        raise EngineCrashed(
            f"{self.label}: deliberate crash on page {images[0].page if images else '?'}"
        )


@register("echo")
class EchoEngine(Engine):
    """Returns its variant as the page text: `echo:שלום עולם`. For routing tests."""

    name = "echo"
    scripts = ALL_SCRIPTS
    structure = True  # its text is read as Markdown, as a VLM's

    def health(self) -> EngineHealth:
        return EngineHealth(self.name, True, "returns its variant")

    def read(self, images: list[PageImage], *, script: str) -> list[EngineOutput]:
        started = time.monotonic()
        return [
            EngineOutput(
                text=self.variant or "", engine=self.label, seconds=time.monotonic() - started
            )
            for _ in images
        ]


@register("die")
class DieEngine(Engine):
    """Kills its own process, as a PDF that segfaults MuPDF or Tesseract would. For drills of the
    redelivery cap: the page must end `failed` and dead-lettered, not be redelivered forever."""

    name = "die"
    scripts = ALL_SCRIPTS
    structure = True

    def health(self) -> EngineHealth:
        return EngineHealth(self.name, True, "kills its process (drills)")

    def read(self, images: list[PageImage], *, script: str) -> list[EngineOutput]:
        os.kill(os.getpid(), signal.SIGKILL)
        raise EngineCrashed("unreachable")  # pragma: no cover
