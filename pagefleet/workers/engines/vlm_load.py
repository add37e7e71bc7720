"""Loading a VLM checkpoint and its processor for the OCR engines in `pagefleet.workers.engines.vlm`.

The model class comes from the engine's `VlmSpec`; dots.ocr's hub checkpoint (model_type
`dots_ocr`) is only loadable through its own code (`trust_remote_code`). Without torchvision,
transformers 5 cannot build the Qwen2-VL family's processor (it insists on a video processor);
`PairedProcessor` then pairs the checkpoint's tokenizer and image processor and expands image
placeholders exactly as `Qwen2_5_VLProcessor` does. Weights go straight to their device
(`hf.load_kwargs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pagefleet.workers.engines.hf import load_kwargs
from pagefleet.workers.errors import EngineUnavailable


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


def load_model(
    spec: VlmSpec,
    model_id: str,
    device: str,
    local_only: bool,
    trust_remote: bool,
    attention: str | None = None,
) -> tuple[Any, str]:
    import transformers

    common = load_kwargs(device, local_only)
    if attention:  # e.g. flash_attention_2: Pixtral's sdpa path builds an N×N block mask per batch
        common["attn_implementation"] = attention
    if spec.model_class is not None:
        cls = getattr(transformers, spec.model_class)
        return cls.from_pretrained(model_id, **common), spec.model_class
    try:  # dots: a checkpoint whose architecture transformers knows natively
        # trust_remote_code=False explicitly: None would prompt on stdin for up to 15 s
        transformers.AutoConfig.from_pretrained(
            model_id, local_files_only=local_only, trust_remote_code=False
        )
    except ValueError as native_error:  # unknown model_type: the hub checkpoint ships its own code
        if not trust_remote:
            raise EngineUnavailable(
                f"{spec.name}: {model_id} needs trust_remote_code=True ({native_error})"
            ) from native_error
        model = transformers.AutoModelForCausalLM.from_pretrained(
            model_id, trust_remote_code=True, **common
        )
        return model, f"AutoModelForCausalLM[remote:{type(model).__name__}]"
    model = transformers.AutoModelForImageTextToText.from_pretrained(model_id, **common)
    return model, f"AutoModelForImageTextToText[{type(model).__name__}]"


def load_processor(spec: VlmSpec, model_id: str, local_only: bool, trust_remote: bool) -> Any:
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
        processor: Any = PairedProcessor(tokenizer, images, image_token)
    else:
        processor = transformers.AutoProcessor.from_pretrained(
            model_id, local_files_only=local_only, trust_remote_code=trust_remote
        )
    processor.tokenizer.padding_side = (
        "left"  # batched generation continues every row at the right edge
    )
    if processor.tokenizer.pad_token is None:
        processor.tokenizer.pad_token = processor.tokenizer.eos_token
    return processor


class PairedProcessor:
    """Tokenizer + image processor of a Qwen2-VL-family checkpoint, used when transformers cannot
    build the checkpoint's own processor (no torchvision). Each image placeholder becomes
    grid_t·grid_h·grid_w / merge_size² copies, as in `Qwen2_5_VLProcessor`."""

    def __init__(self, tokenizer: Any, image_processor: Any, image_token: str) -> None:
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.image_token = image_token
        if getattr(tokenizer, "chat_template", None) is None:
            raise EngineUnavailable(
                f"{getattr(tokenizer, 'name_or_path', '')}: the tokenizer has no chat template"
            )

    def apply_chat_template(self, conversation: list[dict[str, Any]], **kwargs: Any) -> Any:
        return self.tokenizer.apply_chat_template(conversation, **kwargs)

    def __call__(
        self,
        *,
        text: list[str],
        images: list[Any],
        padding: bool = True,
        return_tensors: str = "pt",
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
