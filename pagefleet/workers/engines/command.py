"""`command:NAME` — a site's own OCR program as an engine (seed 001's `--ocr-command` contract).

    the program is run as   ARGV... /absolute/path/to/source.pdf PAGE      (PAGE 1-based)
    and prints              the page as Markdown (UTF-8) on stdout, exit status 0

It runs sandboxed like every other reader of an untrusted PDF (`pagefleet.workers.pdf.sandbox.run_tool`:
RLIMIT_AS, RLIMIT_CPU, no core dumps, a wall-clock timeout, stdin closed) in a scratch working
directory, with a clean environment: PATH, LANG, HOME (the scratch directory), the rendered page
as `PAGEFLEET_PAGE_IMAGE`, the routed script as `PAGEFLEET_SCRIPT`, the configured `env`, and the
worker's variables named in `pass_env` (an API key for a cloud OCR) — never the broker's or the
object store's secrets. Its output goes through the same quality gate as every engine's: nothing
is trusted because a command printed it.

Configuration, one entry per NAME (`Settings().ocr.commands`, env `PAGEFLEET_OCR__COMMANDS`):

    PAGEFLEET_OCR__COMMANDS='{"cloud": {"argv": ["/opt/ocr/cloud-ocr", "--format", "md"],
                                       "timeout_s": 120, "pass_env": ["CLOUD_OCR_KEY"]}}'
    PAGEFLEET_OCR__CHAINS__HE='["command:cloud", "tesseract:heb+eng"]'     # per chain, like any engine

This is how a site plugs in a cloud OCR or its own model without a code change.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from typing import Any

from pagefleet.workers.engines.base import (
    ALL_SCRIPTS,
    Engine,
    EngineHealth,
    EngineOutput,
    PageImage,
    register,
)
from pagefleet.workers.errors import EngineCrashed, EngineTimeout, EngineUnavailable
from pagefleet.workers.settings import OcrCommand, get_settings


def configured(name: str) -> OcrCommand:
    commands = get_settings().ocr.commands
    if name not in commands:
        known = ", ".join(sorted(commands)) or "none"
        raise EngineUnavailable(
            f"command:{name}: no such entry in PAGEFLEET_OCR__COMMANDS (configured: {known})"
        )
    return commands[name]


@register("command")
class CommandEngine(Engine):
    name = "command"
    scripts = ALL_SCRIPTS  # what the configured program reads is its own business
    structure = True

    def __init__(self, variant: str | None = None, **options: Any) -> None:
        super().__init__(variant, **options)
        if not variant:
            raise EngineUnavailable("command: name the configured program, e.g. command:cloud")
        self.spec = (
            OcrCommand.model_validate(options["spec"]) if "spec" in options else configured(variant)
        )
        self.device = self.spec.device

    def _executable(self) -> str | None:
        program = self.spec.argv[0]
        return (
            shutil.which(program)
            if not os.path.isabs(program)
            else (program if os.access(program, os.X_OK) else None)
        )

    def health(self) -> EngineHealth:
        found = self._executable()
        if found is None:
            return EngineHealth(
                self.label, False, f"{self.spec.argv[0]} is not an executable program", self.device
            )
        return EngineHealth(
            self.label, True, f"runs {found} (timeout {self.spec.timeout_s:g}s)", self.device
        )

    def _environment(self, scratch: str, page: PageImage, script: str) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "HOME": scratch,
            "PAGEFLEET_PAGE_IMAGE": page.path,
            "PAGEFLEET_SCRIPT": script,
        }
        env.update({k: os.environ[k] for k in self.spec.pass_env if k in os.environ})
        env.update(self.spec.env)
        return env

    def read(self, images: list[PageImage], *, script: str) -> list[EngineOutput]:
        if self._executable() is None:
            raise EngineUnavailable(
                f"{self.label}: {self.spec.argv[0]} is not an executable program"
            )
        return [self._read_one(page, script) for page in images]

    def _read_one(self, page: PageImage, script: str) -> EngineOutput:
        if not page.pdf:
            raise EngineUnavailable(f"{self.label}: the page came without its source PDF path")
        argv = [*self.spec.argv, os.path.abspath(page.pdf), str(page.page)]
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="pagefleet-cmd-") as scratch:
            try:
                proc = _run(argv, self.spec, self._environment(scratch, page, script), scratch)
            except subprocess.TimeoutExpired as e:
                raise EngineTimeout(
                    f"{self.label}: no answer within {self.spec.timeout_s:g}s on page {page.page}"
                ) from e
        if proc.returncode != 0:
            last = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [
                f"exit status {proc.returncode}"
            ]
            reason = (
                f"killed by signal {-proc.returncode}" if proc.returncode < 0 else last[0][:300]
            )
            raise EngineCrashed(f"{self.label}: failed on page {page.page}: {reason}")
        text = proc.stdout.decode(
            "utf-8", "replace"
        )  # undecodable bytes become U+FFFD: the gate refuses them
        return EngineOutput(
            text=text.strip(),
            engine=self.label,
            seconds=time.monotonic() - started,
            details={"program": self.spec.argv[0], "bytes": len(proc.stdout)},
        )


def _run(
    argv: list[str], spec: OcrCommand, env: dict[str, str], cwd: str
) -> subprocess.CompletedProcess[bytes]:
    from pagefleet.workers.pdf.sandbox import run_tool

    return run_tool(argv, timeout_s=spec.timeout_s, memory_mb=spec.memory_mb, env=env, cwd=cwd)
