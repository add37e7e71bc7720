"""Tesseract on the CPU: one recognition pass writes both the text and the TSV (word confidences).

`OMP_THREAD_LIMIT=1` (Tesseract's own threading is four times slower on our 2-core machines than one
thread per page with pages in parallel), a mandatory timeout, stderr logged, outputs checked to
exist. Also Tesseract OSD script detection for the CPU visual router.
"""

from __future__ import annotations

import csv
import functools
import logging
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pagefleet.workers.fleet import deadline
from pagefleet.workers.engines.base import Engine, EngineHealth, EngineOutput, PageImage, register
from pagefleet.workers.engines import tesseract_api
from pagefleet.workers.engines.scan_prep import save_gray
from pagefleet.workers.engines.tesseract_read import RTL_LANGUAGES, ReadPlan, read_prepared
from pagefleet.workers.errors import EngineCrashed, EngineTimeout, EngineUnavailable, SetupError
from pagefleet.workers.settings import get_settings

log = logging.getLogger(__name__)

INSTALL_HINT = "install it: apt-get install tesseract-ocr tesseract-ocr-heb tesseract-ocr-ara tesseract-ocr-osd"
DEFAULT_LANGUAGES = "heb+ara+eng"  # every script the fleet routes
OSD_SCRIPTS = {"Latin": "latin", "Hebrew": "he", "Arabic": "ar"}
# OSD classifies up to 5× this many characters (Tesseract's default 50): 20 costs 40 % less CPU per
# page and still leaves orientation confidence far above the router's floor (measured on
# bench/ocr_truth.py pages: 7–13 against 17–36; the floor is 2)
OSD_MIN_CHARACTERS = 20


def _env() -> dict[str, str]:
    return dict(os.environ, OMP_THREAD_LIMIT=str(get_settings().ocr.omp_thread_limit))


def _run(args: list[str], *, timeout_s: float) -> subprocess.CompletedProcess[bytes]:
    cmd = get_settings().ocr.tesseract_cmd
    try:
        proc = subprocess.run(
            [cmd, *args], capture_output=True, timeout=timeout_s, env=_env(), check=False
        )
    except FileNotFoundError as exc:
        raise EngineUnavailable(
            f"tesseract is not installed ({cmd!r} not found); {INSTALL_HINT}"
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise EngineTimeout(f"tesseract timed out after {timeout_s:.0f}s") from exc
    if proc.stderr:
        log.debug("tesseract stderr: %s", proc.stderr.decode("utf-8", "replace")[-1000:])
    return proc


@functools.lru_cache(maxsize=1)
def installed_languages() -> frozenset[str]:
    if shutil.which(get_settings().ocr.tesseract_cmd) is None:
        return frozenset()
    proc = _run(["--list-langs"], timeout_s=30)
    lines = proc.stdout.decode("utf-8", "replace").splitlines()
    return frozenset(line.strip() for line in lines[1:] if line.strip())


def require_tesseract(languages: tuple[str, ...] = ("eng", "heb", "ara", "osd")) -> str:
    """For the CLI: a clear one-line error naming what is missing and how to install it.
    Returns Tesseract's version."""
    import pytesseract

    pytesseract.pytesseract.tesseract_cmd = get_settings().ocr.tesseract_cmd
    try:
        version = str(pytesseract.get_tesseract_version())
    except pytesseract.TesseractNotFoundError as exc:
        raise SetupError(f"tesseract is not installed; {INSTALL_HINT}") from exc
    missing = [lang for lang in languages if lang not in installed_languages()]
    if missing:
        raise SetupError(f"tesseract language data missing: {', '.join(missing)}; {INSTALL_HINT}")
    return version


def mean_confidence(tsv: str) -> float | None:
    """Mean confidence of recognised words (level 5 rows with text), 0..100."""
    confs = []
    for row in csv.DictReader(tsv.splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE):
        if row.get("level") == "5" and (row.get("text") or "").strip():
            try:
                conf = float(row["conf"])
            except (TypeError, ValueError):
                continue
            if conf >= 0:
                confs.append(conf)
    return round(sum(confs) / len(confs), 2) if confs else None


@register("tesseract")
class TesseractEngine(Engine):
    name = "tesseract"
    device = "cpu"

    @classmethod
    def languages(cls, variant: str | None) -> frozenset[str]:
        """The language packs of the variant (`heb+eng`), every script's without one."""
        return frozenset((variant or DEFAULT_LANGUAGES).split("+"))

    @classmethod
    def reads(cls, variant: str | None) -> frozenset[str]:
        """Latin always; Hebrew or Arabic where the variant names their language pack."""
        return cls.scripts | {
            RTL_LANGUAGES[lang] for lang in cls.languages(variant) if lang in RTL_LANGUAGES
        }

    def __init__(self, variant: str | None = None, **options: object) -> None:
        super().__init__(variant or DEFAULT_LANGUAGES, **options)
        self.psm = int(options.get("psm", 3))  # type: ignore[call-overload]
        self.plan = ReadPlan.from_options(options)

    def health(self) -> EngineHealth:
        have = installed_languages()
        if not have:
            return EngineHealth(self.label, False, f"tesseract not installed; {INSTALL_HINT}")
        missing = [lang for lang in (self.variant or "").split("+") if lang not in have]
        if missing:
            return EngineHealth(self.label, False, f"language data missing: {', '.join(missing)}")
        return EngineHealth(self.label, True, "ok")

    def read(self, images: list[PageImage], *, script: str) -> list[EngineOutput]:
        return [self._read_one(image) for image in images]

    def _read_one(self, image: PageImage) -> EngineOutput:
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="pagefleet-tess-") as tmp:
            if self.plan.active:
                text, confidence, details = read_prepared(
                    image, self.variant or "eng", self.psm, self.plan, Path(tmp), recognise
                )
            else:
                text, tsv = recognise(
                    image.path,
                    self.variant or "eng",
                    self.psm,
                    image.dpi,
                    Path(tmp),
                    invert=self.plan.detect_inverted,
                )
                confidence, details = mean_confidence(tsv), {}
        text = text.replace("\f", "").rstrip() + ("\n" if text.strip() else "")
        return EngineOutput(
            text=text,
            engine=self.label,
            seconds=time.monotonic() - started,
            confidence=confidence,
            details=details,
        )


def recognise(
    image: str | np.ndarray,
    langs: str,
    psm: int,
    dpi: int,
    tmp: Path,
    name: str = "out",
    *,
    invert: bool = True,
) -> tuple[str, str]:
    """One Tesseract pass over an image file or a grey array, giving the text and the TSV (word boxes
    and confidences): in this process where tesserocr is installed (`tesseract_inprocess`), else the
    `tesseract` command (an array is written to `tmp` as PGM first). `invert`: Tesseract also tries
    each doubtful line inverted (white on black), which costs ≈ 7 % of a page."""
    settings = get_settings()
    try:
        return _recognise(
            image, langs, psm, dpi, tmp, name, invert, bounded(settings.ocr.tesseract_timeout_s)
        )
    except EngineTimeout:
        deadline.check(
            "tesseract"
        )  # cut by the task's deadline (a task on a thread), not its own timeout
        raise


def bounded(timeout_s: float) -> float:
    """A Tesseract or OSD pass's timeout, no later than the task's deadline where it keeps one."""
    return deadline.bounded(timeout_s, "tesseract") or timeout_s


def _recognise(
    image: str | np.ndarray,
    langs: str,
    psm: int,
    dpi: int,
    tmp: Path,
    name: str,
    invert: bool,
    timeout_s: float,
) -> tuple[str, str]:
    settings = get_settings()
    if settings.ocr.tesseract_inprocess and tesseract_api.available():
        return tesseract_api.recognise(image, langs, psm, dpi, timeout_s=timeout_s, invert=invert)
    if isinstance(image, np.ndarray):
        path = tmp / f"{name}.pgm"
        save_gray(image, str(path), dpi)
        image = str(path)
    base = tmp / name
    args = [image, str(base), "-l", langs, "--psm", str(psm), "--dpi", str(dpi)]
    args += ([] if invert else ["-c", "tessedit_do_invert=0"]) + ["txt", "tsv"]
    proc = _run(args, timeout_s=timeout_s)
    txt, tsv = base.with_suffix(".txt"), base.with_suffix(".tsv")
    if proc.returncode != 0 or not txt.exists():
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise EngineCrashed(f"tesseract exit {proc.returncode}: {err[-1] if err else 'no output'}")
    text = txt.read_text(encoding="utf-8", errors="replace")
    return text, tsv.read_text(encoding="utf-8", errors="replace") if tsv.exists() else ""


@dataclass(frozen=True)
class OsdResult:
    script: str | None  # latin | he | ar, or None for a script we have no chain for
    raw_script: str
    confidence: float
    rotate: int
    orientation_confidence: float = 0.0


def detect_script(png: str, *, timeout_s: float = 60.0, dpi: int = 300) -> OsdResult:
    """Tesseract OSD (`--psm 0`). Raises EngineError when OSD cannot decide (too few characters)."""
    proc = _run(
        [
            png,
            "stdout",
            "--psm",
            "0",
            "--dpi",
            str(dpi),
            "-c",
            f"min_characters_to_try={OSD_MIN_CHARACTERS}",
        ],
        timeout_s=timeout_s,
    )
    fields = {}
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    if proc.returncode != 0 or "Script" not in fields:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise EngineCrashed(f"tesseract OSD could not decide: {err[0] if err else 'no output'}")
    raw = fields["Script"]
    return OsdResult(
        script=OSD_SCRIPTS.get(raw),
        raw_script=raw,
        confidence=float(fields.get("Script confidence", 0.0)),
        rotate=int(float(fields.get("Rotate", 0))),
        orientation_confidence=float(fields.get("Orientation confidence", 0.0)),
    )
