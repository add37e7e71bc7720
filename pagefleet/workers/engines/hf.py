"""Hugging Face loading shared by the VLM engines and the SigLIP2 router: where a checkpoint is,
whether it is there, and loading it once per process.

    model id ─► resolve: PAGEFLEET_OCR__MODELS__DIR/<id> when pulled there (`pagefleet models pull`),
                else the id itself (a local directory, or a hub id in the local HF cache)
             ─► weights_present: config + weights on disk (never downloads); a models directory
                that lacks the id names the manifest it was pulled from
             ─► cached_load: once per process, keyed by (class, model id, device)

`load_kwargs` puts the weights straight onto their device (`device_map`) with
`low_cpu_mem_usage`, so a GPU worker's host RSS stays near the size of one shard, not the model
(transformers 5 always loads that way and ignores the flag; 4.x needs it). `loading` translates
what transformers/torch raise while loading into `EngineUnavailable` where it enters.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pagefleet.workers.engines.models_store import model_problem, models_dir
from pagefleet.workers.errors import EngineUnavailable

log = logging.getLogger(__name__)

# what loading a checkpoint raises: missing files, bad configs, missing libraries, shape errors, OOM
LOAD_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    ValueError,
    ImportError,
    KeyError,
    RuntimeError,
    TypeError,
)


@dataclass
class LoadedModel:
    model: Any
    processor: Any  # a transformers processor or the VLM engines' paired processor
    device: str
    class_name: str
    model_id: str
    load_seconds: float
    # one forward or generate call at a time on this model (a gpu worker's task threads share it:
    # two batches at once would each need the batch's memory)
    busy: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)


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


def resolve(model_id: str) -> str:
    """The directory a pulled model lives in, or the id unchanged."""
    root = models_dir()
    if root and not os.path.isabs(model_id):
        candidate = os.path.join(root, model_id)
        if os.path.isdir(candidate):
            return candidate
    return model_id


def _directory_problem(path: str) -> str | None:
    if not os.path.isfile(os.path.join(path, "config.json")):
        return f"{path} has no config.json"
    if not any(n.endswith((".safetensors", ".bin", ".index.json")) for n in os.listdir(path)):
        return f"{path} has no weight files"
    return None


def _hub_cache(model_id: str) -> tuple[bool, str]:
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


def weights_present(model_id: str) -> tuple[bool, str]:
    """Is the checkpoint on local disk (pulled, a directory, or the hub cache)? Never downloads."""
    path = resolve(model_id)
    if os.path.isdir(path):
        problem = _directory_problem(path) or model_problem(model_id, path)
        return (False, problem) if problem else (True, f"local directory {path}")
    pulled = model_problem(model_id, None)
    if pulled:
        return False, pulled
    if model_id.startswith(("/", ".", "~")) or model_id.count("/") != 1:
        return False, f"{model_id} is neither a local directory nor a hub id (owner/name)"
    return _hub_cache(model_id)


def pick_device(requested: str | None = None) -> str:
    import torch

    if requested:
        return requested
    return "cuda" if torch.cuda.is_available() else "cpu"


def torch_dtype(device: str) -> Any:
    import torch

    return torch.bfloat16 if device.startswith("cuda") else torch.float32


def load_kwargs(device: str, local_only: bool) -> dict[str, Any]:
    """from_pretrained arguments: weights loaded straight onto `device`, never via a full host copy."""
    return {
        "local_files_only": local_only,
        "dtype": torch_dtype(device),
        "device_map": device,
        "low_cpu_mem_usage": True,
    }


@contextlib.contextmanager
def loading(label: str, model_id: str, device: str) -> Iterator[None]:
    """Loading errors → `EngineUnavailable` naming the engine, the checkpoint and the device."""
    try:
        yield
    except EngineUnavailable:
        raise
    except LOAD_ERRORS as e:
        raise EngineUnavailable(f"{label}: cannot load {model_id} on {device}: {e}") from e


def cached_load(key: tuple[str, str, str], loader: Callable[[], LoadedModel]) -> LoadedModel:
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


def to_device(inputs: dict[str, Any], device: str) -> dict[str, Any]:
    """Tensors onto `device`; floating ones (pixels) in the model's dtype."""
    dtype = torch_dtype(device)
    moved: dict[str, Any] = {}
    for key, value in inputs.items():
        if hasattr(value, "is_floating_point"):
            value = value.to(device, dtype=dtype) if value.is_floating_point() else value.to(device)
        moved[key] = value
    return moved
