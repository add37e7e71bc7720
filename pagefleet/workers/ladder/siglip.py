"""The SigLIP2 zero-shot visual router (seed 003): which script does a page image look like?

Not an OCR engine: `SiglipRouter.classify(paths)` returns one `VisualVerdict` per image. Each image is
scored against a prompt per label (defaults in `settings.ocr.router`: "this is a photo of English
text." → `latin`, "this is a photo of Arabic text." → `ar`) with the model's sigmoid
probabilities. margin = p(first label) − max p(other labels); margin > threshold → the first
label, otherwise the most probable other label (seed 003: borderline pages go to the
multilingual chain). With the seed's prompt pair the threshold is negative (−0.028).

The default checkpoint google/siglip2-base-patch16-224 is a FixRes SigLIP2 model: its config
says `siglip`, so AutoModel gives `SiglipModel`; NaFlex checkpoints (`siglip2-*-naflex`) load as
`Siglip2Model`. Both go through AutoModel + AutoProcessor. Loaded lazily, once per process
(cache keyed by class, model id, device); `EngineUnavailable` when the weights are not on disk. Loading is shared with the VLM
engines (`pagefleet.workers.engines.hf`).
An image that cannot be opened gets `VisualVerdict(None, 0.0, {})`: the caller falls back to OSD or
the default chain, the document goes on.

Preprocessing is the router's cost, not the model (bench/gpu_bench.py on an H200: the forward
pass runs 2 000 pages/s at batch 16, the processor on full pages 33 pages/s): a page image is
box-reduced to at least `THUMB_SIDE` px on its short side before the processor's resize (a 300-DPI
page 231 → 91 ms here), and a batch's images are decoded on threads (PIL releases the GIL).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pagefleet.workers.engines.base import EngineHealth
from pagefleet.workers.engines.hf import (
    LoadedModel,
    cached_load,
    load_kwargs,
    loading,
    missing_packages,
    pick_device,
    resolve,
    to_device,
    weights_present,
)
from pagefleet.workers.errors import EngineCrashed, EngineUnavailable
from pagefleet.workers.settings import get_settings

log = logging.getLogger(__name__)
THUMB_SIDE = (
    448  # twice the model's 224 px: a box reduce to here, then the processor's bicubic resize
)
_DECODERS: dict[
    int, ThreadPoolExecutor
] = {}  # per process: a pool made before a fork has no threads after it
_DECODERS_LOCK = threading.Lock()


def _decoders() -> ThreadPoolExecutor:
    pool = _DECODERS.get(os.getpid())
    if pool is None:
        with _DECODERS_LOCK:  # a gpu worker's task threads classify at once
            pool = _DECODERS.get(os.getpid())
            if pool is None:
                _DECODERS.clear()
                pool = _DECODERS[os.getpid()] = ThreadPoolExecutor(
                    min(8, os.cpu_count() or 1), "siglip-decode"
                )
    return pool


@dataclass(frozen=True)
class VisualVerdict:
    script: str | None  # a label, or None when the image could not be classified
    margin: float  # p(first label) − max p(other labels)
    probs: dict[str, float] = field(default_factory=dict)  # sigmoid probability per label


class SiglipRouter:
    """Zero-shot script classification of page images with a SigLIP/SigLIP2 checkpoint."""

    name = "siglip2"

    def __init__(
        self,
        *,
        model: str | None = None,
        prompts: list[str] | None = None,
        labels: list[str] | None = None,
        threshold: float | None = None,
        batch_size: int | None = None,
        device: str | None = None,
        local_files_only: bool | None = None,
    ) -> None:
        router = get_settings().ocr.router
        self.model_id = model or router.siglip_model
        self.prompts = list(prompts or router.siglip_prompts)
        self.labels = list(labels or router.siglip_labels)
        if len(self.prompts) != len(self.labels) or len(self.labels) < 2:
            raise ValueError(
                f"need one prompt per label and at least two labels: {self.prompts} / {self.labels}"
            )
        self.threshold = router.siglip_threshold if threshold is None else float(threshold)
        self.batch_size = max(1, int(batch_size or router.siglip_batch_size))
        self.requested_device = device
        # settings.ocr.router.local_files_only, once settings have it; until then offline by default
        default_local = router.local_files_only
        self.local_files_only = default_local if local_files_only is None else local_files_only

    def health(self) -> EngineHealth:
        """Installed, weights on disk? Never loads the model."""
        missing = missing_packages("torch", "transformers")
        if missing:
            return EngineHealth(self.name, False, f"not installed: {', '.join(missing)}", "gpu")
        present, detail = weights_present(self.model_id)
        if not present and not self.local_files_only:
            return EngineHealth(
                self.name, True, f"{detail}; will be downloaded on first use", "gpu"
            )
        return EngineHealth(self.name, present, detail, "gpu")

    def load(self) -> LoadedModel:
        missing = missing_packages("torch", "transformers")
        if missing:
            raise EngineUnavailable(f"{self.name}: not installed: {', '.join(missing)}")
        device = pick_device(self.requested_device)
        return cached_load(("AutoModel[siglip]", self.model_id, device), lambda: self._load(device))

    def _load(self, device: str) -> LoadedModel:
        import transformers

        started = time.monotonic()
        path = resolve(self.model_id)
        with loading(self.name, self.model_id, device):
            present, detail = weights_present(self.model_id)
            if not present and self.local_files_only:
                raise EngineUnavailable(
                    f"{self.name}: cannot load {self.model_id} on {device}: {detail}"
                )
            processor = transformers.AutoProcessor.from_pretrained(
                path, local_files_only=self.local_files_only
            )
            model = transformers.AutoModel.from_pretrained(
                path, **load_kwargs(device, self.local_files_only)
            )
            model.eval()
        return LoadedModel(
            model,
            processor,
            device,
            type(model).__name__,
            self.model_id,
            time.monotonic() - started,
        )

    def classify(self, image_paths: list[str]) -> list[VisualVerdict]:
        """One verdict per path, same order; images are scored `batch_size` at a time."""
        if not image_paths:
            return []
        loaded = self.load()
        verdicts: list[VisualVerdict] = []
        for start in range(0, len(image_paths), self.batch_size):
            verdicts.extend(
                self._classify_batch(loaded, image_paths[start : start + self.batch_size])
            )
        return verdicts

    def _classify_batch(self, loaded: LoadedModel, paths: list[str]) -> list[VisualVerdict]:
        images: list[Any] = []
        readable: list[int] = []
        for i, image in enumerate(_decoders().map(open_thumbnail, paths)):
            if image is not None:
                images.append(image)
                readable.append(i)
        verdicts = [VisualVerdict(None, 0.0, {}) for _ in paths]
        if not images:
            return verdicts
        for i, probs in zip(readable, self.probabilities(loaded, images)):
            verdicts[i] = self.verdict(probs)
        return verdicts

    def probabilities(self, loaded: LoadedModel, images: list[Any]) -> list[list[float]]:
        """Sigmoid probability of each prompt for each image (rows: images)."""
        import torch

        text_positions = getattr(loaded.model.config.text_config, "max_position_embeddings", 64)
        try:
            inputs = loaded.processor(
                text=self.prompts,
                images=images,
                padding="max_length",
                max_length=text_positions,
                truncation=True,
                return_tensors="pt",
            )
            moved = to_device(dict(inputs), loaded.device)
            with (
                loaded.busy,
                torch.inference_mode(),
            ):  # one batch at a time (a gpu worker's threads)
                logits = loaded.model(**moved).logits_per_image
        except torch.cuda.OutOfMemoryError as e:
            raise EngineCrashed(f"{self.name}: CUDA out of memory at batch {len(images)}") from e
        except (RuntimeError, ValueError, KeyError, TypeError) as e:
            raise EngineCrashed(f"{self.name}: classification failed: {e}") from e
        return torch.sigmoid(logits.float()).cpu().tolist()

    def verdict(self, probs: list[float]) -> VisualVerdict:
        """Seed 003's rule: margin = p(first) − max p(others); margin > threshold → first label."""
        by_label = dict(zip(self.labels, probs))
        others = sorted(self.labels[1:], key=lambda label: by_label[label], reverse=True)
        margin = by_label[self.labels[0]] - by_label[others[0]]
        script = self.labels[0] if margin > self.threshold else others[0]
        return VisualVerdict(script, float(margin), {k: float(v) for k, v in by_label.items()})


def open_thumbnail(path: str) -> Any:
    """The image in RGB, box-reduced by an integer factor to a short side ≥ THUMB_SIDE (JPEG: decoded
    at that scale); None when it cannot be read."""
    from PIL import Image

    try:
        with Image.open(path) as raw:
            raw.draft("RGB", (THUMB_SIDE, THUMB_SIDE))
            image = raw.convert("RGB")
        factor = min(image.size) // THUMB_SIDE
        return image.reduce(factor) if factor > 1 else image
    except (OSError, ValueError) as e:
        log.warning("siglip router: cannot open %s: %s", path, e)
        return None
