"""Tesseract in the worker process (tesserocr, the C++ API): the language models stay loaded between
pages, so a read pays no process start and no model load (≈ 0.1–0.15 s per call with the CLI, and a
page makes up to 20 calls when coverage re-reads its gaps). `make eval-ocr` measures it.

    recognise(image, langs, psm, dpi) ─► one API per thread, language set and page segmentation mode
                                     ─► (text, TSV with the CLI's header row)

A read that runs past the timeout is cancelled inside Tesseract (its progress monitor's deadline)
and raises `EngineTimeout`; a crash of the library kills the worker process, which Celery's late
acknowledgement redelivers, up to `max_page_attempts` (see pagefleet/tasks/ocr.py). Where tesserocr cannot be
imported the engine uses the `tesseract` command (tesseract.py), the same output.
"""

from __future__ import annotations

import functools
import os
import threading
from typing import Any

import numpy as np

from pagefleet.workers.errors import EngineCrashed, EngineTimeout

TSV_HEADER = (
    "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext"
)
_LOCAL = threading.local()
_MAX_APIS = (
    6  # language sets × modes one thread keeps loaded (each a few MB with Debian's fast models)
)


@functools.lru_cache(maxsize=1)
def available() -> bool:
    from pagefleet.workers.settings import get_settings

    # Tesseract's own threads are slower than one thread per page with pages in parallel (tesseract.py)
    os.environ.setdefault("OMP_THREAD_LIMIT", str(get_settings().ocr.omp_thread_limit))
    try:
        import tesserocr  # noqa: F401
    except ImportError:
        return False
    return True


@functools.lru_cache(maxsize=1)
def tessdata() -> str | None:
    """The folder holding the installed language data (Debian's, or TESSDATA_PREFIX)."""
    candidates = [
        os.environ.get("TESSDATA_PREFIX", ""),
        "/usr/share/tesseract-ocr/5/tessdata",
        "/usr/share/tesseract-ocr/4.00/tessdata",
        "/usr/share/tessdata",
        "/usr/local/share/tessdata",
    ]
    for folder in candidates:
        if folder and os.path.isfile(os.path.join(folder, "eng.traineddata")):
            return folder.rstrip("/") + "/"
    return None


def _api(langs: str, psm: int) -> Any:
    import tesserocr

    apis: dict[tuple[str, int], Any] = getattr(_LOCAL, "apis", None) or {}
    _LOCAL.apis = apis
    key = (langs, psm)
    if key not in apis:
        if len(apis) >= _MAX_APIS:
            oldest = next(iter(apis))
            apis.pop(oldest).End()
        folder = tessdata()
        if folder is None:
            raise EngineCrashed("tesseract language data not found (set TESSDATA_PREFIX)")
        try:
            api = tesserocr.PyTessBaseAPI(path=folder, lang=langs, psm=psm, init=True)
        except RuntimeError as exc:
            raise EngineCrashed(f"tesseract could not load {langs!r}: {exc}") from exc
        apis[key] = api
    return apis[key]


def recognise(
    image: str | np.ndarray,
    langs: str,
    psm: int,
    dpi: int,
    *,
    timeout_s: float,
    invert: bool = True,
) -> tuple[str, str]:
    """One recognition pass over an image file or a grey uint8 array: the text and the TSV (word
    boxes and confidences), as the CLI writes. An array goes in as raw bytes (no encode, no decode;
    the same reading as its file, tested)."""
    api = _api(langs, psm)
    api.SetVariable("tessedit_do_invert", "1" if invert else "0")
    try:
        if isinstance(image, np.ndarray):
            if image.ndim != 2 or 0 in image.shape:
                raise ValueError(
                    f"expected a non-empty grey image (2-D array), got shape {image.shape}"
                )
            grey = np.ascontiguousarray(image, dtype=np.uint8)
            api.SetImageBytes(grey.tobytes(), grey.shape[1], grey.shape[0], 1, grey.shape[1])
        else:
            api.SetImageFile(
                image
            )  # Leptonica reads the file: no PIL decode and re-encode (≈ 0.2 s a page)
    except (RuntimeError, OSError, ValueError) as exc:
        raise EngineCrashed(f"tesseract could not read the image: {exc}") from exc
    api.SetSourceResolution(int(dpi))
    try:
        finished = api.Recognize(int(timeout_s * 1000))
        if not finished:
            raise EngineTimeout(f"tesseract timed out after {timeout_s:.0f}s")
        text = api.GetUTF8Text() or ""
        rows = api.GetTSVText(0) or ""
    finally:
        api.Clear()
    return text, TSV_HEADER + "\n" + rows
