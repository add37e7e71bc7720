"""Scan preparation before Tesseract: skew estimate and correction, binarisation, upscaling of
low-resolution scans. numpy + Pillow only; every function takes and returns a grayscale array.

    page image ─► estimate_skew (projection profile on a 100 DPI copy) ─► deskew (|angle| ≥ 0.3°)
               ─► upscale (below `min_dpi`, Lanczos) ─► the image Tesseract reads

Skew is found the classic way: rotate the ink pixels' coordinates by each candidate angle and keep
the angle whose horizontal projection is sharpest (text lines become narrow dense bands).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

MAX_SKEW = 5.0  # degrees searched either way
MIN_SKEW = 1.2  # smaller angles are left alone: Tesseract copes, resampling thin strokes costs more (measured)
PROBE_DPI = 100


def load_gray(path: str) -> np.ndarray:
    with Image.open(path) as img:
        return np.asarray(img.convert("L"), dtype=np.uint8)


def save_gray(img: np.ndarray, path: str, dpi: int) -> None:
    Image.fromarray(img).save(
        path, dpi=(dpi, dpi), compress_level=1
    )  # read back at once: speed over size


def grey_histogram(img: np.ndarray) -> np.ndarray:
    """Pixels per grey level (256 counts): PIL's C histogram, ≈ 6× faster than np.bincount on a page."""
    return np.asarray(
        Image.fromarray(np.ascontiguousarray(img, dtype=np.uint8)).histogram(), dtype=np.int64
    )


def otsu_threshold(img: np.ndarray) -> int:
    """Otsu's global threshold: the grey level that best separates ink from paper."""
    hist = grey_histogram(img).astype(np.float64)
    total = hist.sum()
    levels = np.arange(256, dtype=np.float64)
    weight_bg = np.cumsum(hist)
    weight_fg = total - weight_bg
    mean_cum = np.cumsum(hist * levels)
    mean_bg = mean_cum / np.maximum(weight_bg, 1)
    mean_fg = (mean_cum[-1] - mean_cum) / np.maximum(weight_fg, 1)
    between = weight_bg * weight_fg * (mean_bg - mean_fg) ** 2
    return int(np.argmax(between[:-1]))


def ink_mask(img: np.ndarray) -> np.ndarray:
    """True where there is ink (darker than Otsu's threshold)."""
    return img <= otsu_threshold(img)


def block_reduce(img: np.ndarray, step: int, combine: np.ufunc) -> np.ndarray:
    """`combine` (np.minimum, np.add, …) over each step×step block (the ragged edge dropped), by
    strided passes: ≈ 10–20× faster than a reshape and a reduction over two axes. The result has
    `img`'s dtype (a sum must fit in it)."""
    h, w = (img.shape[0] // step) * step, (img.shape[1] // step) * step
    rows = img[0:h:step, :w]
    for i in range(1, step):
        rows = combine(rows, img[i:h:step, :w])
    out = rows[:, 0:w:step]
    for j in range(1, step):
        out = combine(out, rows[:, j:w:step])
    return np.ascontiguousarray(out)


def _shrink(img: np.ndarray, dpi: int, target: int = PROBE_DPI) -> np.ndarray:
    step = max(1, round(dpi / target))
    if step == 1:
        return img
    return block_reduce(img, step, np.minimum)  # the darkest pixel of each block: thin strokes stay


def _sharpness(ys: np.ndarray, xs: np.ndarray, angle: float, rows: int) -> float:
    rad = np.deg2rad(angle)
    projected = ys * np.cos(rad) + xs * np.sin(rad)
    hist = np.bincount(np.clip(projected, 0, rows - 1).astype(np.int64), minlength=rows).astype(
        np.float64
    )
    return float(np.sum(np.diff(hist) ** 2))


def estimate_skew(img: np.ndarray, dpi: int) -> float:
    """Degrees the text lines rise to the right (counter-clockwise); 0.0 when there is too little ink."""
    small = _shrink(img, dpi)
    ys, xs = np.nonzero(ink_mask(small))
    if len(ys) < 200:
        return 0.0
    rows = small.shape[0] + small.shape[1]
    ys = ys.astype(np.float64) + small.shape[1]
    xs = xs.astype(np.float64)
    best = 0.0
    for step, span in ((0.5, MAX_SKEW), (0.1, 0.5), (0.02, 0.1)):
        candidates = np.arange(best - span, best + span + step / 2, step)
        scores = [_sharpness(ys, xs, float(a), rows) for a in candidates]
        best = float(candidates[int(np.argmax(scores))])
    return round(best, 2)


def paper_level(img: np.ndarray) -> int:
    """The grey of the paper: the 90th percentile of the page's levels."""
    cumulative = np.cumsum(grey_histogram(img))
    return int(np.searchsorted(cumulative, 0.9 * cumulative[-1]))


def rotate(img: np.ndarray, angle: float) -> np.ndarray:
    """Turn the image by `angle` degrees counter-clockwise, filling with the paper's grey."""
    pil = Image.fromarray(img)
    return np.asarray(
        pil.rotate(angle, resample=Image.Resampling.BILINEAR, fillcolor=paper_level(img)),
        dtype=np.uint8,
    )


def upscale(img: np.ndarray, factor: float) -> np.ndarray:
    pil = Image.fromarray(img)
    size = (round(img.shape[1] * factor), round(img.shape[0] * factor))
    return np.asarray(pil.resize(size, Image.Resampling.LANCZOS), dtype=np.uint8)


@dataclass(frozen=True)
class Prepared:
    image: np.ndarray
    dpi: int
    skew: float  # degrees corrected (0.0 when left alone)
    scale: float  # upscaling factor applied


def prepare(img: np.ndarray, dpi: int, *, deskew: bool = True, min_dpi: int = 0) -> Prepared:
    """Deskew when the page leans by at least MIN_SKEW, upscale when below `min_dpi`."""
    skew = estimate_skew(img, dpi) if deskew else 0.0
    if abs(skew) >= MIN_SKEW:
        img = rotate(img, -skew)
    else:
        skew = 0.0
    scale = 1.0
    if min_dpi and dpi < min_dpi:
        scale = min_dpi / dpi
        img, dpi = upscale(img, scale), min_dpi
    return Prepared(img, dpi, skew, scale)
