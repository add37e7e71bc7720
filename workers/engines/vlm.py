"""VLM OCR engines through Hugging Face transformers: `lightonocr`, `dots`, `qwen`.

    engine       default checkpoint (settings.vlm)      transformers class
    lightonocr   lightonai/LightOnOCR-2-1B              LightOnOcrForConditionalGeneration + AutoProcessor
    qwen         Qwen/Qwen2.5-VL-7B-Instruct            Qwen2_5_VLForConditionalGeneration + AutoProcessor
    dots         rednote-hilab/dots.ocr                 native config → AutoModelForImageTextToText;
                                                        otherwise (the hub checkpoint, model_type
                                                        `dots_ocr`) AutoModelForCausalLM with
                                                        trust_remote_code=True

A chain entry may name another checkpoint as its variant (`qwen:Qwen/Qwen2.5-VL-3B-Instruct`);
the constructor option `model=` (a hub id or a local directory) wins over both.

Models load lazily, once per process, into a module-level cache keyed by (class, model id,
device): cuda when available (bf16), else cpu (float32). `local_files_only=True` is the default,
so a missing checkpoint is an `EngineUnavailable`, never a download. Pages are read in batches
(`settings.vlm.batch_size`) with greedy decoding and a stop-on-repetition criterion: a sequence
stops when its tail is one 1–32-token unit repeated over ≥ 64 tokens (see `repetition_period`).

Without torchvision, transformers 5 cannot build the Qwen2-VL family's processor (it insists on a
video processor); the engines then pair the checkpoint's tokenizer and image processor themselves
(`_PairedProcessor`) and expand image placeholders exactly as `Qwen2_5_VLProcessor` does.

Nothing heavy is imported at module level: torch and transformers load inside the engine.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from workers.engines.base import Engine, EngineHealth, EngineOutput, PageImage, register
from workers.errors import EngineCrashed, EngineTimeout, EngineUnavailable
from workers.settings import get_settings

log = logging.getLogger(__name__)

DEFAULT_MAX_PIXELS = 1540 * 1540  # LightOnOCR-2's training resolution; a 300-DPI A4 page is ~8.7 Mpx
SCRIPT_HINTS = {"he": "Hebrew", "ar": "Arabic"}
_KNOWN_OPTIONS = {
    "model", "max_new_tokens", "batch_size", "local_files_only", "device", "max_pixels", "timeout_s",
    "trust_remote_code", "max_period", "min_span", "min_repeats", "attn_implementation",
}


@dataclass(frozen=True)
class VlmSpec:
    """What differs between the three models."""

    name: str
    settings_field: str  # attribute of `VlmSettings` with the default checkpoint
    model_class: str | None  # transformers class; None: decided from the checkpoint's config
    prompt: str | None  # the model card's OCR prompt; None: the image alone (LightOnOCR)
    qwen2vl_processor: bool  # processor expands one placeholder per merged patch (Qwen2-VL family)
    image_token: str = "<|image_pad|>"
    trust_remote_code: bool = False
    script_hint: bool = False  # append "The text is in Hebrew…" for he/ar pages


SPECS: dict[str, VlmSpec] = {
    "lightonocr": VlmSpec("lightonocr", "lightonocr_model", "LightOnOcrForConditionalGeneration", None, False),
    "dots": VlmSpec(
        "dots", "dots_model", None, "Extract the text content from this image.", True,
        image_token="<|imgpad|>", trust_remote_code=True,
    ),
    "qwen": VlmSpec(
        "qwen", "qwen_model", "Qwen2_5_VLForConditionalGeneration", "Read all the text in the image.", True,
        script_hint=True,
    ),
}


def ocr_prompt(engine: str, script: str | None) -> str | None:
    """The text part of the OCR request for `engine` (None: send the image alone)."""
    spec = SPECS[engine]
    if spec.prompt is None:
        return None
    language = SCRIPT_HINTS.get(script or "")
    if spec.script_hint and language:
        return (
            f"{spec.prompt} The text is in {language}: write it in logical (reading) order, exactly as "
            "printed, without translating."
        )
    return spec.prompt


# ---------------------------------------------------------------- repetition stopping


@dataclass(frozen=True)
class RepetitionPolicy:
    """A tail that is one `period`-token unit (1..max_period) repeated over max(min_span,
    period*min_repeats) tokens is a loop."""

    max_period: int = 32
    min_span: int = 64
    min_repeats: int = 4

    def span(self, period: int) -> int:
        return max(self.min_span, period * self.min_repeats)


def repetition_period(
    tokens: Sequence[int], policy: RepetitionPolicy = RepetitionPolicy(), ignore: Sequence[int] = ()
) -> int | None:
    """The smallest period with which `tokens` ends in a loop, or None. Spans containing an
    `ignore` id (padding, end of sequence) never count."""
    ignored = set(ignore)
    for period in range(1, policy.max_period + 1):
        span = policy.span(period)
        if len(tokens) < span:
            break
        tail = list(tokens[-span:])
        if ignored.intersection(tail):
            continue
        if all(tail[i] == tail[i + period] for i in range(span - period)):
            return period
    return None


@lru_cache(maxsize=1)
def _criteria_class() -> type:
    """Build the StoppingCriteria subclass on first use (transformers is imported lazily)."""
    import torch
    from transformers import StoppingCriteria

    class RepetitionStoppingCriteria(StoppingCriteria):
        """Per sequence: done once its generated tail is a loop (see `repetition_period`)."""

        def __init__(
            self, prompt_len: int, policy: RepetitionPolicy, ignore_ids: Sequence[int] = (), check_every: int = 1
        ) -> None:
            self.prompt_len = prompt_len
            self.policy = policy
            self.ignore = torch.tensor(sorted(set(ignore_ids)), dtype=torch.long)
            self.check_every = max(1, check_every)
            self.flagged: torch.Tensor | None = None  # bool per sequence, on cpu
            self.periods: dict[int, int] = {}  # row → period of the loop that stopped it
            self._calls = 0

        def __call__(self, input_ids: torch.Tensor, scores: Any = None, **kwargs: Any) -> torch.Tensor:
            batch = input_ids.shape[0]
            if self.flagged is None:
                self.flagged = torch.zeros(batch, dtype=torch.bool)
            self._calls += 1
            if self._calls % self.check_every == 0:
                window = self.policy.span(self.policy.max_period)
                generated = input_ids[:, self.prompt_len :]
                self._check(generated[:, -window:].to("cpu"))
            return self.flagged.to(input_ids.device)

        def _check(self, tail: torch.Tensor) -> None:
            assert self.flagged is not None
            length = tail.shape[1]
            for period in range(1, self.policy.max_period + 1):
                span = self.policy.span(period)
                if length < span:
                    break
                part = tail[:, -span:]
                loop = (part[:, period:] == part[:, :-period]).all(dim=1)
                if self.ignore.numel():
                    loop &= ~torch.isin(part, self.ignore).any(dim=1)
                for row in torch.nonzero(loop & ~self.flagged).flatten().tolist():
                    self.periods[row] = period
                self.flagged |= loop

    return RepetitionStoppingCriteria


def make_repetition_criteria(
    prompt_len: int, policy: RepetitionPolicy = RepetitionPolicy(), ignore_ids: Sequence[int] = (),
    check_every: int = 1,
) -> Any:
    """A transformers `StoppingCriteria` that stops looping sequences; `.flagged` / `.periods` tell which."""
    return _criteria_class()(prompt_len, policy, ignore_ids, check_every)


# ---------------------------------------------------------------- loading, once per process


@dataclass
class LoadedModel:
    model: Any
    processor: Any  # a transformers processor or a `_PairedProcessor`
    device: str
    class_name: str
    model_id: str
    load_seconds: float


_CACHE: dict[tuple[str, str, str], LoadedModel] = {}
_CACHE_LOCK = threading.Lock()


def loaded_keys() -> list[tuple[str, str, str]]:
    """(class, model id, device) of every model this process holds."""
    return list(_CACHE)


def clear_cache() -> None:
    """Forget every loaded model (tests; a worker never needs it)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def missing_packages(*modules: str) -> list[str]:
    """Which of `modules` are not importable, checked without importing them."""
    return [m for m in modules if importlib.util.find_spec(m) is None]


def weights_present(model_id: str) -> tuple[bool, str]:
    """Is the checkpoint on local disk (a directory, or the hub cache)? Never downloads."""
    if os.path.isdir(model_id):
        if not os.path.isfile(os.path.join(model_id, "config.json")):
            return False, f"{model_id} has no config.json"
        if not any(n.endswith((".safetensors", ".bin", ".index.json")) for n in os.listdir(model_id)):
            return False, f"{model_id} has no weight files"
        return True, f"local directory {model_id}"
    if model_id.startswith(("/", ".", "~")) or model_id.count("/") != 1:
        return False, f"{model_id} is neither a local directory nor a hub id (owner/name)"
    from huggingface_hub import try_to_load_from_cache

    try:
        config = try_to_load_from_cache(model_id, "config.json")
        if not isinstance(config, str):
            return False, f"{model_id} is not in the local Hugging Face cache (no config.json)"
        for weights in ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin"):
            if isinstance(try_to_load_from_cache(model_id, weights), str):
                return True, f"cached checkpoint {model_id}"
    except ValueError as e:  # huggingface_hub's HFValidationError: not a valid repo id
        return False, f"{model_id}: {e}"
    return False, f"{model_id} is cached without its weights"


def pick_device(requested: str | None = None) -> str:
    import torch

    if requested:
        return requested
    return "cuda" if torch.cuda.is_available() else "cpu"


def torch_dtype(device: str) -> Any:
    import torch

    return torch.bfloat16 if device.startswith("cuda") else torch.float32


def cached_load(key: tuple[str, str, str], loader: Any) -> LoadedModel:
    """Return the cached entry for `key`, calling `loader()` once per process to build it."""
    entry = _CACHE.get(key)
    if entry is not None:
        return entry
    with _CACHE_LOCK:
        entry = _CACHE.get(key)
        if entry is None:
            entry = loader()
            _CACHE[key] = entry
            log.info("loaded %s %s on %s in %.1fs", key[0], key[1], key[2], entry.load_seconds)
        return entry


def _load_model(
    spec: VlmSpec, model_id: str, device: str, local_only: bool, trust_remote: bool, attention: str | None = None
) -> tuple[Any, str]:
    import transformers

    common: dict[str, Any] = {"local_files_only": local_only, "dtype": torch_dtype(device)}
    if attention:  # e.g. flash_attention_2: Pixtral's sdpa path builds an N×N block mask per batch
        common["attn_implementation"] = attention
    if spec.model_class is not None:
        cls = getattr(transformers, spec.model_class)
        return cls.from_pretrained(model_id, **common), spec.model_class
    try:  # dots: a checkpoint whose architecture transformers knows natively
        # trust_remote_code=False explicitly: None would prompt on stdin for up to 15 s
        transformers.AutoConfig.from_pretrained(model_id, local_files_only=local_only, trust_remote_code=False)
    except ValueError as native_error:  # unknown model_type: the hub checkpoint ships its own code
        if not trust_remote:
            raise EngineUnavailable(
                f"{spec.name}: {model_id} needs trust_remote_code=True ({native_error})"
            ) from native_error
        model = transformers.AutoModelForCausalLM.from_pretrained(model_id, trust_remote_code=True, **common)
        return model, f"AutoModelForCausalLM[remote:{type(model).__name__}]"
    model = transformers.AutoModelForImageTextToText.from_pretrained(model_id, **common)
    return model, f"AutoModelForImageTextToText[{type(model).__name__}]"


def _load_processor(spec: VlmSpec, model_id: str, local_only: bool, trust_remote: bool) -> Any:
    import transformers
    from transformers.utils import is_torchvision_available

    if spec.qwen2vl_processor and not is_torchvision_available():
        tokenizer = transformers.AutoTokenizer.from_pretrained(
            model_id, local_files_only=local_only, trust_remote_code=trust_remote
        )
        images = transformers.AutoImageProcessor.from_pretrained(
            model_id, local_files_only=local_only, trust_remote_code=trust_remote
        )
        image_token = getattr(tokenizer, "image_token", None) or spec.image_token
        processor: Any = _PairedProcessor(tokenizer, images, image_token)
    else:
        processor = transformers.AutoProcessor.from_pretrained(
            model_id, local_files_only=local_only, trust_remote_code=trust_remote
        )
    processor.tokenizer.padding_side = "left"  # batched generation continues every row at the right edge
    if processor.tokenizer.pad_token is None:
        processor.tokenizer.pad_token = processor.tokenizer.eos_token
    return processor


class _PairedProcessor:
    """Tokenizer + image processor of a Qwen2-VL-family checkpoint, used when transformers cannot
    build the checkpoint's own processor (no torchvision). Each image placeholder becomes
    grid_t·grid_h·grid_w / merge_size² copies, as in `Qwen2_5_VLProcessor`."""

    def __init__(self, tokenizer: Any, image_processor: Any, image_token: str) -> None:
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.image_token = image_token
        if getattr(tokenizer, "chat_template", None) is None:
            raise EngineUnavailable(f"{getattr(tokenizer, 'name_or_path', '')}: the tokenizer has no chat template")

    def apply_chat_template(self, conversation: list[dict[str, Any]], **kwargs: Any) -> Any:
        return self.tokenizer.apply_chat_template(conversation, **kwargs)

    def __call__(
        self, *, text: list[str], images: list[Any], padding: bool = True, return_tensors: str = "pt"
    ) -> dict[str, Any]:
        pixels = self.image_processor(images=images, return_tensors=return_tensors)
        merge = int(self.image_processor.merge_size) ** 2
        grids = iter(pixels["image_grid_thw"])
        expanded = []
        for prompt in text:
            head, *rest = prompt.split(self.image_token)
            for part in rest:
                head += self.image_token * (int(next(grids).prod()) // merge) + part
            expanded.append(head)
        encoded = self.tokenizer(expanded, padding=padding, return_tensors=return_tensors)
        return {**encoded, **pixels}

    def batch_decode(self, sequences: Any, **kwargs: Any) -> list[str]:
        return self.tokenizer.batch_decode(sequences, **kwargs)


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


def to_device(inputs: dict[str, Any], device: str) -> dict[str, Any]:
    """Tensors onto `device`; floating ones (pixels) in the model's dtype."""
    dtype = torch_dtype(device)
    moved: dict[str, Any] = {}
    for key, value in inputs.items():
        if hasattr(value, "is_floating_point"):
            value = value.to(device, dtype=dtype) if value.is_floating_point() else value.to(device)
        moved[key] = value
    return moved


def open_page_image(page: PageImage, max_pixels: int) -> Any:
    """The page as an RGB PIL image, downscaled to at most `max_pixels`."""
    from PIL import Image

    try:
        with Image.open(page.path) as raw:
            image = raw.convert("RGB")
    except (OSError, ValueError) as e:
        raise EngineCrashed(f"cannot open page image {page.path}: {e}") from e
    pixels = image.width * image.height
    if pixels > max_pixels:
        scale = (max_pixels / pixels) ** 0.5
        size = (max(28, int(image.width * scale)), max(28, int(image.height * scale)))
        image = image.resize(size, Image.Resampling.LANCZOS)
    return image


class VlmEngine(Engine):
    """One VLM OCR engine; subclasses only pick a `VlmSpec`."""

    device = "gpu"
    spec: VlmSpec

    def __init__(self, variant: str | None = None, **options: Any) -> None:
        super().__init__(variant, **options)
        unknown = set(options) - _KNOWN_OPTIONS
        if unknown:
            log.warning("%s: ignoring unknown options %s", self.name, sorted(unknown))
        vlm = get_settings().vlm
        self.model_id: str = options.get("model") or variant or getattr(vlm, self.spec.settings_field)
        self.max_new_tokens = int(options.get("max_new_tokens", vlm.max_new_tokens))
        self.batch_size = max(1, int(options.get("batch_size", vlm.batch_size)))
        self.local_files_only = bool(options.get("local_files_only", vlm.local_files_only))
        self.requested_device: str | None = options.get("device")
        self.max_pixels = int(options.get("max_pixels", DEFAULT_MAX_PIXELS))
        timeout = options.get("timeout_s")
        self.timeout_s: float | None = float(timeout) if timeout else None
        self.trust_remote_code = bool(options.get("trust_remote_code", self.spec.trust_remote_code))
        self.attention: str | None = options.get("attn_implementation")
        self.policy = RepetitionPolicy(
            int(options.get("max_period", 32)), int(options.get("min_span", 64)), int(options.get("min_repeats", 4))
        )

    def health(self) -> EngineHealth:
        missing = missing_packages("torch", "transformers")
        if missing:
            return EngineHealth(self.label, False, f"not installed: {', '.join(missing)}", self.device)
        present, detail = weights_present(self.model_id)
        if not present and not self.local_files_only:
            return EngineHealth(self.label, True, f"{detail}; will be downloaded on first use", self.device)
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
        try:
            model, class_name = _load_model(
                self.spec, self.model_id, device, self.local_files_only, self.trust_remote_code, self.attention
            )
            processor = _load_processor(self.spec, self.model_id, self.local_files_only, self.trust_remote_code)
            model.to(device).eval()
        except EngineUnavailable:
            raise
        except (OSError, ValueError, ImportError, KeyError, RuntimeError) as e:  # RuntimeError: bad shapes, OOM
            raise EngineUnavailable(f"{self.label}: cannot load {self.model_id} on {device}: {e}") from e
        return LoadedModel(model, processor, device, class_name, self.model_id, time.monotonic() - started)

    def read(self, images: list[PageImage], *, script: str) -> list[EngineOutput]:
        if not images:
            return []
        loaded = self.load()
        outputs: list[EngineOutput] = []
        for chunk in _chunks(images, self.batch_size):
            outputs.extend(self._read_batch(loaded, chunk, script))
        return outputs

    def _prepare(self, loaded: LoadedModel, pages: list[PageImage], script: str) -> dict[str, Any]:
        prompt = ocr_prompt(self.name, script)
        content: list[dict[str, str]] = [{"type": "image"}]
        if prompt:
            content.append({"type": "text", "text": prompt})
        conversation = [{"role": "user", "content": content}]
        text = loaded.processor.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)
        pictures = [open_page_image(page, self.max_pixels) for page in pages]
        try:
            inputs = loaded.processor(text=[text] * len(pages), images=pictures, padding=True, return_tensors="pt")
        except (ValueError, RuntimeError, KeyError, IndexError) as e:
            raise EngineCrashed(f"{self.label}: preprocessing failed: {e}") from e
        return to_device(dict(inputs), loaded.device)

    def _read_batch(self, loaded: LoadedModel, pages: list[PageImage], script: str) -> list[EngineOutput]:
        import torch

        wall_started = time.monotonic()
        inputs = self._prepare(loaded, pages, script)
        tokenizer = loaded.processor.tokenizer
        prompt_len = int(inputs["input_ids"].shape[1])
        stop_ids = _stop_ids(loaded.model, tokenizer)
        criteria = make_repetition_criteria(prompt_len, self.policy, stop_ids, check_every=2)
        kwargs: dict[str, Any] = {
            "max_new_tokens": self.max_new_tokens, "do_sample": False, "num_beams": 1,
            "stopping_criteria": [criteria], "pad_token_id": tokenizer.pad_token_id,
        }
        if self.timeout_s:
            kwargs["max_time"] = self.timeout_s
        started = time.monotonic()
        try:
            with torch.inference_mode():
                generated = loaded.model.generate(**inputs, **kwargs)[:, prompt_len:].to("cpu")
        except torch.cuda.OutOfMemoryError as e:
            if len(pages) == 1:
                raise EngineCrashed(f"{self.label}: CUDA out of memory on page {pages[0].page}") from e
            torch.cuda.empty_cache()
            half = len(pages) // 2
            log.warning("%s: out of memory at batch %d, splitting", self.label, len(pages))
            return self._read_batch(loaded, pages[:half], script) + self._read_batch(loaded, pages[half:], script)
        except (RuntimeError, ValueError, IndexError, TypeError) as e:
            raise EngineCrashed(f"{self.label}: generate failed: {e}") from e
        finished = time.monotonic()
        timing = (finished - wall_started, finished - started)
        return self._outputs(loaded, pages, generated, criteria, stop_ids, timing)

    def _outputs(
        self, loaded: LoadedModel, pages: list[PageImage], generated: Any, criteria: Any,
        stop_ids: list[int], timing: tuple[float, float],
    ) -> list[EngineOutput]:
        """One output per row; `timing` = (wall seconds incl. preprocessing, generate seconds)."""
        wall, seconds = timing
        rows = generated.tolist()
        stops = set(stop_ids)
        lengths = [next((i for i, t in enumerate(row) if t in stops), len(row)) for row in rows]
        total = sum(lengths)
        texts = loaded.processor.batch_decode(
            [row[:n] for row, n in zip(rows, lengths)], skip_special_tokens=True, clean_up_tokenization_spaces=False
        )
        flagged = criteria.flagged.tolist() if criteria.flagged is not None else [False] * len(rows)
        reasons = [
            "repetition" if looped else "stop" if n < len(row) else "length" if n >= self.max_new_tokens else "time"
            for row, n, looped in zip(rows, lengths, flagged)
        ]
        if self.timeout_s and "time" in reasons:
            raise EngineTimeout(f"{self.label}: generation passed {self.timeout_s:g}s on {len(pages)} page(s)")
        outputs = []
        for i, (text, n, reason) in enumerate(zip(texts, lengths, reasons)):
            details = {
                "model": loaded.model_id, "class": loaded.class_name, "device": loaded.device,
                "tokens": n, "finish_reason": reason, "repetition_stop": reason == "repetition",
                "repetition_period": criteria.periods.get(i), "batch_size": len(pages),
                "batch_seconds": round(wall, 4), "generate_seconds": round(seconds, 4),
                "tokens_per_s": round(total / seconds, 2) if seconds > 0 else None,
            }
            outputs.append(
                EngineOutput(text=text.strip(), engine=self.label, seconds=wall / len(pages), details=details)
            )
        return outputs


@register("lightonocr")
class LightOnOcrEngine(VlmEngine):
    name = "lightonocr"
    spec = SPECS["lightonocr"]


@register("dots")
class DotsOcrEngine(VlmEngine):
    name = "dots"
    spec = SPECS["dots"]


@register("qwen")
class QwenVlEngine(VlmEngine):
    name = "qwen"
    spec = SPECS["qwen"]
