"""PaddleOCR on CPU through ONNX Runtime (`rapidocr_onnxruntime`), registered as `paddle`.

`rapidocr_onnxruntime` 1.4.x ships its models inside the wheel (PP-OCRv4 Chinese/English detector
and recogniser, the mobile v2 angle classifier), so nothing is downloaded at run time. (`rapidocr`
3.x ships only its default PP-OCRv6 models and fetches every other language from the network on
first use: not usable on our machines.)

    entry            recogniser
    paddle           the shipped ch/en PP-OCRv4 model (Latin script, digits, Chinese)
    paddle:arabic    an Arabic PP-OCR recogniser: none ships with the wheel, so the engine needs
                     `rec_model_path=` (an ONNX export, e.g. arabic_PP-OCRv3_rec_infer.onnx) and
                     `rec_keys_path=` (its arabic_dict.txt); without them health() is unavailable.

PaddleOCR has no Hebrew recogniser. Text comes back as detected lines grouped into rows
(top to bottom), left to right within a row (right to left for `arabic`), rows joined by newlines;
`confidence` is the mean line score × 100. One ONNX pipeline per (recogniser, threads) is built
lazily and kept for the process.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

from pagefleet.workers.engines.base import Engine, EngineHealth, EngineOutput, PageImage, register
from pagefleet.workers.engines.hf import missing_packages
from pagefleet.workers.errors import EngineCrashed, EngineUnavailable
from pagefleet.workers.settings import get_settings

log = logging.getLogger(__name__)

SHIPPED_VARIANTS = {None, "ch", "en", "latin"}
RTL_VARIANTS = {"arabic"}
_PIPELINES: dict[tuple[str, str, int], Any] = {}
_LOCK = threading.Lock()

Line = tuple[list[list[float]], str, float]  # (4 corner points, text, score)


def order_lines(lines: list[Line], *, rtl: bool = False) -> list[list[Line]]:
    """Group detected lines into rows (vertical centres within half a line height) top to bottom,
    each row sorted by x (descending for right-to-left scripts)."""
    boxes = []
    for points, text, score in lines:
        ys = [p[1] for p in points]
        xs = [p[0] for p in points]
        boxes.append(
            ((min(ys) + max(ys)) / 2, max(1.0, max(ys) - min(ys)), min(xs), (points, text, score))
        )
    boxes.sort(key=lambda b: (b[0], b[2]))
    rows: list[list[tuple[float, float, float, Line]]] = []
    for box in boxes:
        row = rows[-1] if rows else None
        if row is not None and abs(box[0] - row[0][0]) <= max(box[1], row[0][1]) / 2:
            row.append(box)
        else:
            rows.append([box])
    return [[b[3] for b in sorted(row, key=lambda b: b[2], reverse=rtl)] for row in rows]


def lines_to_text(lines: list[Line], *, rtl: bool = False) -> tuple[str, float | None]:
    """Reading-order text and mean confidence ×100 (None when nothing was read)."""
    if not lines:
        return "", None
    rows = order_lines(lines, rtl=rtl)
    text = "\n".join(" ".join(line[1] for line in row) for row in rows)
    return text, 100.0 * sum(line[2] for line in lines) / len(lines)


@register("paddle")
class PaddleEngine(Engine):
    name = "paddle"
    device = "cpu"

    @classmethod
    def reads(cls, variant: str | None) -> frozenset[str]:
        """Latin with the bundled recogniser; Arabic too with `paddle:arabic`."""
        return cls.scripts | ({"ar"} if variant == "arabic" else set())

    def __init__(self, variant: str | None = None, **options: Any) -> None:
        super().__init__(variant, **options)
        vlm = get_settings().gpu.vlm
        arabic = self.variant == "arabic"
        self.rec_model_path: str | None = options.get("rec_model_path") or (
            vlm.paddle_arabic_rec_model if arabic else None
        )
        self.rec_keys_path: str | None = options.get("rec_keys_path") or (
            vlm.paddle_arabic_rec_keys if arabic else None
        )
        self.threads = int(options.get("threads", get_settings().ocr.omp_thread_limit))

    def _problem(self) -> str | None:
        """Why this variant cannot run here, or None."""
        if missing_packages("rapidocr_onnxruntime"):
            return "rapidocr_onnxruntime is not installed (pip install rapidocr_onnxruntime==1.4.4)"
        if self.variant in SHIPPED_VARIANTS and not self.rec_model_path:
            return None
        if self.variant not in SHIPPED_VARIANTS | RTL_VARIANTS:
            return f"unknown variant {self.variant!r} (known: paddle, paddle:arabic)"
        paths = {"rec_model_path": self.rec_model_path, "rec_keys_path": self.rec_keys_path}
        missing = [k for k, v in paths.items() if not v or not os.path.isfile(v)]
        if missing:
            return (
                f"{self.label}: rapidocr_onnxruntime ships only the ch/en recogniser; an "
                f"{self.variant or 'alternative'} PP-OCR recogniser needs {' and '.join(missing)} "
                "(an ONNX rec model and its dictionary) on local disk"
            )
        return None

    def health(self) -> EngineHealth:
        problem = self._problem()
        if problem:
            return EngineHealth(self.label, False, problem, self.device)
        rec = self.rec_model_path or "shipped PP-OCRv4 ch/en"
        return EngineHealth(
            self.label, True, f"rapidocr_onnxruntime, recogniser: {rec}", self.device
        )

    def _pipeline(self) -> Any:
        problem = self._problem()
        if problem:
            raise EngineUnavailable(problem)
        key = (self.rec_model_path or "", self.rec_keys_path or "", self.threads)
        with _LOCK:
            pipeline = _PIPELINES.get(key)
            if pipeline is None:
                pipeline = self._build()
                _PIPELINES[key] = pipeline
        return pipeline

    def _build(self) -> Any:
        kwargs: dict[str, Any] = {"intra_op_num_threads": self.threads, "inter_op_num_threads": 1}
        if self.rec_model_path:
            kwargs.update(rec_model_path=self.rec_model_path, rec_keys_path=self.rec_keys_path)
        started = time.monotonic()
        try:  # the import too: OpenCV without libGL, onnxruntime without its libraries fail here
            from rapidocr_onnxruntime import RapidOCR

            pipeline = RapidOCR(**kwargs)
        except Exception as e:  # onnxruntime / yaml / file errors, whatever their class
            raise EngineUnavailable(f"{self.label}: cannot build the ONNX pipeline: {e}") from e
        log.info("%s: ONNX pipeline ready in %.1fs", self.label, time.monotonic() - started)
        return pipeline

    def read(self, images: list[PageImage], *, script: str) -> list[EngineOutput]:
        if not images:
            return []
        pipeline = self._pipeline()
        rtl = self.variant in RTL_VARIANTS
        outputs = []
        for page in images:
            if not os.path.isfile(page.path):
                raise EngineCrashed(f"{self.label}: page image {page.path} does not exist")
            started = time.monotonic()
            try:
                result, _elapsed = pipeline(page.path)
            except (
                Exception
            ) as e:  # rapidocr raises cv2.error, LoadImageError, onnxruntime errors, ...
                raise EngineCrashed(f"{self.label}: failed on page {page.page}: {e}") from e
            lines: list[Line] = [
                (box, str(text), float(score)) for box, text, score in (result or [])
            ]
            text, confidence = lines_to_text(lines, rtl=rtl)
            outputs.append(
                EngineOutput(
                    text=text,
                    engine=self.label,
                    seconds=time.monotonic() - started,
                    confidence=confidence,
                    details={
                        "lines": len(lines),
                        "recogniser": self.rec_model_path or "PP-OCRv4 ch/en (shipped)",
                    },
                )
            )
        return outputs
