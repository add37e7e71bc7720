"""VLM OCR engines through Hugging Face transformers: `lightonocr`, `dots`, `qwen`.

    engine       default checkpoint (settings.gpu.vlm)      transformers class
    lightonocr   lightonai/LightOnOCR-2-1B              LightOnOcrForConditionalGeneration + AutoProcessor
    qwen         Qwen/Qwen2.5-VL-7B-Instruct            Qwen2_5_VLForConditionalGeneration + AutoProcessor
    dots         rednote-hilab/dots.ocr                 native config → AutoModelForImageTextToText;
                                                        otherwise (the hub checkpoint, model_type
                                                        `dots_ocr`) AutoModelForCausalLM with
                                                        trust_remote_code=True

A chain entry may name another checkpoint as its variant (`qwen:Qwen/Qwen2.5-VL-3B-Instruct`);
the constructor option `model=` (a hub id or a local directory) wins over both.

Models load lazily, once per process (`pagefleet.workers.engines.hf`: the loading shared with the SigLIP2
router), from the pulled copy under `PAGEFLEET_OCR__MODELS__DIR` when there is one, straight onto their
device (`device_map`, `low_cpu_mem_usage`): cuda when available (bf16), else cpu (float32).
`local_files_only=True` is the default, so a missing checkpoint is an `EngineUnavailable` with the
reason, never a download. Pages are read in batches (`settings.gpu.vlm.batch_size`) with greedy
decoding and a stop-on-repetition criterion (`pagefleet.workers.engines.repetition`). Checkpoint and
processor loading: `pagefleet.workers.engines.vlm_load`; the prompt and the page image: `pagefleet.workers.engines.vlm_request`.

Nothing heavy is imported at module level: torch and transformers load inside the engine.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

from pagefleet.workers.fleet import deadline
from pagefleet.workers.engines.base import (
    ALL_SCRIPTS,
    Engine,
    EngineHealth,
    EngineOutput,
    PageImage,
    register,
)
from pagefleet.workers.engines.batching import BATCHES
from pagefleet.workers.engines.hf import (
    LoadedModel,
    cached_load,
    loading,
    missing_packages,
    pick_device,
    resolve,
    to_device,
    weights_present,
)
from pagefleet.workers.engines.repetition import RepetitionPolicy, make_repetition_criteria
from pagefleet.workers.engines.vlm_load import VlmSpec, load_model, load_processor
from pagefleet.workers.engines.vlm_request import open_page_image, ocr_prompt
from pagefleet.workers.errors import EngineCrashed, EngineTimeout, EngineUnavailable
from pagefleet.workers.settings import get_settings

log = logging.getLogger(__name__)

DEFAULT_MAX_PIXELS = (
    1540 * 1540
)  # LightOnOCR-2's training resolution; a 300-DPI A4 page is ~8.7 Mpx
_KNOWN_OPTIONS = {
    "model",
    "max_new_tokens",
    "batch_size",
    "local_files_only",
    "device",
    "max_pixels",
    "timeout_s",
    "trust_remote_code",
    "max_period",
    "min_span",
    "min_repeats",
    "attn_implementation",
    "static_cache",
}


# ---------------------------------------------------------------- the engines


def _chunks(items: list[PageImage], size: int) -> Iterator[list[PageImage]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _stop_ids(model: Any, tokenizer: Any) -> list[int]:
    ids: set[int] = set()
    eos = getattr(model.generation_config, "eos_token_id", None)
    for value in (eos, tokenizer.eos_token_id, tokenizer.pad_token_id):
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, (list, tuple)):
            ids.update(int(v) for v in value)
    return sorted(ids)


class VlmEngine(Engine):
    """One VLM OCR engine; subclasses pick a `VlmSpec` and the scripts the model reads."""

    device = "gpu"
    structure = True  # the models write Markdown: headings, lists, tables
    spec: VlmSpec

    def __init__(self, variant: str | None = None, **options: Any) -> None:
        super().__init__(variant, **options)
        unknown = set(options) - _KNOWN_OPTIONS
        if unknown:
            log.warning("%s: ignoring unknown options %s", self.name, sorted(unknown))
        vlm = get_settings().gpu.vlm
        self.model_id: str = (
            options.get("model") or variant or getattr(vlm, self.spec.settings_field)
        )
        self.max_new_tokens = int(options.get("max_new_tokens", vlm.max_new_tokens))
        self.batch_size = max(1, int(options.get("batch_size", vlm.batch_size)))
        self.local_files_only = bool(options.get("local_files_only", vlm.local_files_only))
        self.requested_device: str | None = options.get("device")
        self.max_pixels = int(options.get("max_pixels", DEFAULT_MAX_PIXELS))
        timeout = options.get("timeout_s")
        self.timeout_s: float | None = float(timeout) if timeout else None
        self.trust_remote_code = bool(options.get("trust_remote_code", self.spec.trust_remote_code))
        self.attention: str | None = options.get("attn_implementation")
        # a static KV cache on CUDA makes transformers compile the decoding step (CUDA graphs):
        # the first batch of each shape pays the compile (bench/gpu_bench.py --parts static)
        self.static_cache = bool(options.get("static_cache", vlm.static_cache))
        self.policy = RepetitionPolicy(
            int(options.get("max_period", 32)),
            int(options.get("min_span", 64)),
            int(options.get("min_repeats", 4)),
        )

    def health(self) -> EngineHealth:
        missing = missing_packages("torch", "transformers")
        if missing:
            return EngineHealth(
                self.label, False, f"not installed: {', '.join(missing)}", self.device
            )
        present, detail = weights_present(self.model_id)
        if not present and not self.local_files_only:
            return EngineHealth(
                self.label, True, f"{detail}; will be downloaded on first use", self.device
            )
        return EngineHealth(self.label, present, detail, self.device)

    def load(self) -> LoadedModel:
        """The model and processor, loaded on first call and cached for the process."""
        missing = missing_packages("torch", "transformers")
        if missing:
            raise EngineUnavailable(f"{self.label}: not installed: {', '.join(missing)}")
        device = pick_device(self.requested_device)
        key = (self.spec.model_class or f"{self.name}-auto", self.model_id, device)
        return cached_load(key, lambda: self._load(device))

    def _load(self, device: str) -> LoadedModel:
        started = time.monotonic()
        path = resolve(
            self.model_id
        )  # the pulled copy under PAGEFLEET_OCR__MODELS__DIR, if there is one
        with loading(self.label, self.model_id, device):
            present, detail = weights_present(self.model_id)
            if not present and self.local_files_only:
                raise EngineUnavailable(
                    f"{self.label}: cannot load {self.model_id} on {device}: {detail}"
                )
            model, class_name = load_model(
                self.spec,
                path,
                device,
                self.local_files_only,
                self.trust_remote_code,
                self.attention,
            )
            processor = load_processor(
                self.spec, path, self.local_files_only, self.trust_remote_code
            )
            model.eval()
        return LoadedModel(
            model, processor, device, class_name, self.model_id, time.monotonic() - started
        )

    def read(self, images: list[PageImage], *, script: str) -> list[EngineOutput]:
        """The pages' outputs, in order. Concurrent reads of this process (a gpu worker's task
        threads) with the same model, prompt and options share generate calls (`batching`)."""
        if not images:
            return []
        loaded = self.load()
        key = (
            self.name,
            self.model_id,
            loaded.device,
            script,
            self.max_new_tokens,
            self.max_pixels,
            self.timeout_s,
            self.static_cache,
            self.policy,
        )
        return BATCHES.run(
            key, images, self.batch_size, lambda pages: self._read_pages(loaded, pages, script)
        )

    def _read_pages(
        self, loaded: LoadedModel, pages: list[PageImage], script: str
    ) -> list[EngineOutput]:
        outputs: list[EngineOutput] = []
        with (
            loaded.busy
        ):  # another prompt's batch on the same model waits (its memory, not two at once)
            for chunk in _chunks(pages, self.batch_size):
                outputs.extend(self._read_batch(loaded, chunk, script))
        return outputs

    def _prepare(self, loaded: LoadedModel, pages: list[PageImage], script: str) -> dict[str, Any]:
        prompt = ocr_prompt(self.name, script)
        content: list[dict[str, str]] = [{"type": "image"}]
        if prompt:
            content.append({"type": "text", "text": prompt})
        conversation = [{"role": "user", "content": content}]
        text = loaded.processor.apply_chat_template(
            conversation, add_generation_prompt=True, tokenize=False
        )
        pictures = [open_page_image(page, self.max_pixels) for page in pages]
        try:
            inputs = loaded.processor(
                text=[text] * len(pages), images=pictures, padding=True, return_tensors="pt"
            )
        except (ValueError, RuntimeError, KeyError, IndexError) as e:
            raise EngineCrashed(f"{self.label}: preprocessing failed: {e}") from e
        return to_device(dict(inputs), loaded.device)

    def _read_batch(
        self, loaded: LoadedModel, pages: list[PageImage], script: str
    ) -> list[EngineOutput]:
        import torch

        wall_started = time.monotonic()
        inputs = self._prepare(loaded, pages, script)
        tokenizer = loaded.processor.tokenizer
        prompt_len = int(inputs["input_ids"].shape[1])
        stop_ids = _stop_ids(loaded.model, tokenizer)
        criteria = make_repetition_criteria(prompt_len, self.policy, stop_ids, check_every=2)
        kwargs = self.generate_options(loaded.device, criteria, tokenizer.pad_token_id)
        started = time.monotonic()
        try:
            with torch.inference_mode():
                generated = loaded.model.generate(**inputs, **kwargs)[:, prompt_len:].to("cpu")
        except torch.cuda.OutOfMemoryError as e:
            if len(pages) == 1:
                raise EngineCrashed(
                    f"{self.label}: CUDA out of memory on page {pages[0].page}"
                ) from e
            torch.cuda.empty_cache()
            half = len(pages) // 2
            log.warning("%s: out of memory at batch %d, splitting", self.label, len(pages))
            return self._read_batch(loaded, pages[:half], script) + self._read_batch(
                loaded, pages[half:], script
            )
        except (RuntimeError, ValueError, IndexError, TypeError) as e:
            raise EngineCrashed(f"{self.label}: generate failed: {e}") from e
        finished = time.monotonic()
        timing = (finished - wall_started, finished - started)
        return self._outputs(loaded, pages, generated, criteria, stop_ids, timing)

    def generate_options(
        self, device: str, criteria: Any, pad_token_id: int | None
    ) -> dict[str, Any]:
        """`generate` arguments: greedy, the repetition stopper, the deadline, the static cache on CUDA."""
        kwargs: dict[str, Any] = {
            "max_new_tokens": self.max_new_tokens,
            "do_sample": False,
            "num_beams": 1,
            "stopping_criteria": [criteria],
            "pad_token_id": pad_token_id,
        }
        max_time = deadline.bounded(
            self.timeout_s, f"{self.label} on its pages"
        )  # a task on a thread: its deadline
        if max_time:
            kwargs["max_time"] = max_time
        if self.static_cache and device.startswith("cuda"):
            kwargs["cache_implementation"] = "static"
        return kwargs

    def _outputs(
        self,
        loaded: LoadedModel,
        pages: list[PageImage],
        generated: Any,
        criteria: Any,
        stop_ids: list[int],
        timing: tuple[float, float],
    ) -> list[EngineOutput]:
        """One output per row; `timing` = (wall seconds incl. preprocessing, generate seconds)."""
        wall, seconds = timing
        rows = generated.tolist()
        stops = set(stop_ids)
        lengths = [next((i for i, t in enumerate(row) if t in stops), len(row)) for row in rows]
        total = sum(lengths)
        texts = loaded.processor.batch_decode(
            [row[:n] for row, n in zip(rows, lengths)],
            skip_special_tokens=True,
            clean_up_tokenization_spaces=False,
        )
        flagged = criteria.flagged.tolist() if criteria.flagged is not None else [False] * len(rows)
        reasons = [
            "repetition"
            if looped
            else "stop"
            if n < len(row)
            else "length"
            if n >= self.max_new_tokens
            else "time"
            for row, n, looped in zip(rows, lengths, flagged)
        ]
        if "time" in reasons:  # stopped by max_time: the task's deadline, or the engine's timeout_s
            deadline.check(f"{self.label} on {len(pages)} page(s)")
            if self.timeout_s:
                raise EngineTimeout(
                    f"{self.label}: generation passed {self.timeout_s:g}s on {len(pages)} page(s)"
                )
        outputs = []
        for i, (text, n, reason) in enumerate(zip(texts, lengths, reasons)):
            details = {
                "model": loaded.model_id,
                "class": loaded.class_name,
                "device": loaded.device,
                "tokens": n,
                "finish_reason": reason,
                "repetition_stop": reason == "repetition",
                "repetition_period": criteria.periods.get(i),
                "batch_size": len(pages),
                "batch_seconds": round(wall, 4),
                "generate_seconds": round(seconds, 4),
                "tokens_per_s": round(total / seconds, 2) if seconds > 0 else None,
            }
            outputs.append(
                EngineOutput(
                    text=text.strip(), engine=self.label, seconds=wall / len(pages), details=details
                )
            )
        return outputs


@register("lightonocr")
class LightOnOcrEngine(VlmEngine):
    name = "lightonocr"
    scripts = frozenset({"latin"})  # trained on Latin-script documents: an RTL page is not for it
    spec = VlmSpec(
        "lightonocr", "lightonocr_model", "LightOnOcrForConditionalGeneration", None, False
    )


@register("dots")
class DotsOcrEngine(VlmEngine):
    name = "dots"
    scripts = ALL_SCRIPTS
    spec = VlmSpec(
        "dots",
        "dots_model",
        None,
        "Extract the text content from this image.",
        True,
        image_token="<|imgpad|>",
        trust_remote_code=True,
    )


@register("qwen")
class QwenVlEngine(VlmEngine):
    name = "qwen"
    scripts = ALL_SCRIPTS
    spec = VlmSpec(
        "qwen",
        "qwen_model",
        "Qwen2_5_VLForConditionalGeneration",
        "Read all the text in the image.",
        True,
        script_hint=True,
    )
