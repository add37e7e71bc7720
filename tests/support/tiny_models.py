"""Tiny randomly initialised checkpoints of the real architectures, built offline, for tests.

Each `save_tiny_*` writes a directory that the adapters load by path exactly like a real checkpoint
(`config.json`, safetensors weights, tokenizer, image processor or processor, chat template):

    save_tiny_lightonocr   LightOnOcrForConditionalGeneration (Pixtral vision + Qwen3 text) + LightOnOcrProcessor
    save_tiny_qwen2_5_vl   Qwen2_5_VLForConditionalGeneration + Qwen2-VL image processor
    save_tiny_dots         the same Qwen2.5-VL architecture with dots.ocr's special tokens and chat
                           format; the closest native stand-in: the real dots.ocr ships its own
                           modeling code (NaViT vision encoder + Qwen2 LM) loaded with trust_remote_code.
                           remote_code=True mimics that layout (auto_map + modeling files in the dir)
    save_tiny_siglip       SiglipModel: the FixRes architecture of google/siglip2-base-patch16-224
    save_tiny_siglip2      Siglip2Model: the NaFlex architecture (siglip2-*-naflex)

Tokenizers are byte-level BPE without merges (every UTF-8 byte is a token, so Hebrew and Arabic
round-trip) plus the special tokens each chat template needs; nothing is downloaded. The `*_config`
builders take sizes, so `bench/gpu_bench.py` builds realistic sizes from the same code.

`looping=True` zeroes the output head: every logit is 0, greedy decoding emits token 0 forever —
a deterministic repetition loop for testing the stopper.
"""

from __future__ import annotations

import json
import os
from typing import Any

QWEN_TOKENS = {
    "pad": "<|endoftext|>",
    "bos": "<|im_start|>",
    "eos": "<|im_end|>",
    "vision_start": "<|vision_start|>",
    "vision_end": "<|vision_end|>",
    "image": "<|image_pad|>",
    "video": "<|video_pad|>",
}
DOTS_TOKENS = {
    "pad": "<|endoftext|>",
    "bos": "<|user|>",
    "eos": "<|endofassistant|>",
    "vision_start": "<|img|>",
    "vision_end": "<|endofimg|>",
    "image": "<|imgpad|>",
    "video": "<|video_pad|>",
}
QWEN_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
DOTS_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'user' %}<|user|>{% else %}<|assistant|>{% endif %}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<|img|><|imgpad|><|endofimg|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
    "{% if message['role'] == 'user' %}<|endofuser|>{% else %}<|endofassistant|>{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
LIGHTON_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<|image_pad|>{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def byte_tokenizer(
    specials: list[str],
    *,
    eos: str,
    pad: str,
    extra: dict[str, str] | None = None,
    chat_template: str | None = None,
    model_max_length: int = 32768,
    padding_side: str = "left",
) -> Any:
    """A byte-level BPE tokenizer (256 byte tokens + `<unk>` + `specials`), as a PreTrainedTokenizerFast."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {char: i for i, char in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    vocab["<unk>"] = len(vocab)
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.add_special_tokens(list(dict.fromkeys([pad, eos, *specials])))
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token=eos,
        pad_token=pad,
        unk_token="<unk>",
        padding_side=padding_side,
        chat_template=chat_template,
        extra_special_tokens=extra or {},
        model_max_length=model_max_length,
    )


def _qwen_tokenizer(
    tokens: dict[str, str], template: str, extra_specials: tuple[str, ...] = ()
) -> Any:
    names = ("bos", "eos", "vision_start", "vision_end", "image", "video")
    specials = [tokens[k] for k in names] + list(extra_specials)
    extra = {
        "image_token": tokens["image"],
        "video_token": tokens["video"],
        "vision_start_token": tokens["vision_start"],
        "vision_end_token": tokens["vision_end"],
    }
    return byte_tokenizer(
        specials, eos=tokens["eos"], pad=tokens["pad"], extra=extra, chat_template=template
    )


def qwen2_5_vl_config(
    tokenizer: Any,
    tokens: dict[str, str] = QWEN_TOKENS,
    *,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    intermediate: int = 128,
    vision_depth: int = 2,
    vision_hidden: int = 32,
    vision_heads: int = 2,
    vision_intermediate: int = 64,
) -> Any:
    """A Qwen2_5_VLConfig sized by the arguments (defaults: tiny), wired to `tokenizer`'s ids."""
    from transformers import Qwen2_5_VLConfig

    ids = {k: tokenizer.convert_tokens_to_ids(v) for k, v in tokens.items()}
    half_head = hidden // heads // 2  # mrope splits the rotary half of each head over (t, h, w)
    section = [half_head - 2 * (half_head // 3), half_head // 3, half_head // 3]
    return Qwen2_5_VLConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": hidden,
            "intermediate_size": intermediate,
            "num_hidden_layers": layers,
            "num_attention_heads": heads,
            "num_key_value_heads": kv_heads,
            "max_position_embeddings": 32768,
            "max_window_layers": layers,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 1_000_000.0,
                "mrope_section": section,
            },
            "bos_token_id": ids["pad"],
            "eos_token_id": ids["eos"],
            "pad_token_id": ids["pad"],
        },
        vision_config={
            "depth": vision_depth,
            "hidden_size": vision_hidden,
            "intermediate_size": vision_intermediate,
            "num_heads": vision_heads,
            "out_hidden_size": hidden,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "window_size": 112,
            "fullatt_block_indexes": [vision_depth - 1],
        },
        image_token_id=ids["image"],
        video_token_id=ids["video"],
        vision_start_token_id=ids["vision_start"],
        vision_end_token_id=ids["vision_end"],
    )


def _save_qwen_family(
    path: str,
    tokens: dict[str, str],
    template: str,
    *,
    looping: bool,
    seed: int,
    extra_specials: tuple[str, ...] = (),
) -> Any:
    import torch
    from transformers import Qwen2_5_VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    tokenizer = _qwen_tokenizer(tokens, template, extra_specials)
    images = Qwen2VLImageProcessorPil(
        size={"shortest_edge": 56 * 56, "longest_edge": 28 * 28 * 16},
        patch_size=14,
        temporal_patch_size=2,
        merge_size=2,
    )
    torch.manual_seed(seed)
    model = Qwen2_5_VLForConditionalGeneration(qwen2_5_vl_config(tokenizer, tokens)).eval()
    _finish(model, looping, tokenizer)
    os.makedirs(path, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    images.save_pretrained(path)
    _save_full_processor(path, tokenizer, images, template)
    return model


def _save_full_processor(path: str, tokenizer: Any, images: Any, template: str) -> None:
    """With torchvision the real Qwen2_5_VLProcessor can be built and saved too."""
    from transformers.utils import is_torchvision_available

    if not is_torchvision_available():
        return
    from transformers import Qwen2_5_VLProcessor, Qwen2VLVideoProcessor

    video = Qwen2VLVideoProcessor(patch_size=14, temporal_patch_size=2, merge_size=2)
    Qwen2_5_VLProcessor(images, tokenizer, video, chat_template=template).save_pretrained(path)


def _finish(model: Any, looping: bool, tokenizer: Any) -> None:
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    if looping:
        import torch

        with torch.no_grad():
            model.get_output_embeddings().weight.zero_()


def save_tiny_qwen2_5_vl(path: str, *, looping: bool = False, seed: int = 0) -> str:
    """A ~0.2M-parameter Qwen2.5-VL checkpoint in `path` (for the `qwen` engine)."""
    _save_qwen_family(path, QWEN_TOKENS, QWEN_TEMPLATE, looping=looping, seed=seed)
    return path


DOTS_CONFIG_CODE = """from transformers import Qwen2_5_VLConfig


class DotsOCRConfig(Qwen2_5_VLConfig):
    model_type = "dots_ocr"
"""
DOTS_MODELING_CODE = """from transformers import Qwen2_5_VLForConditionalGeneration

from .configuration_dots import DotsOCRConfig


class DotsOCRForCausalLM(Qwen2_5_VLForConditionalGeneration):
    config_class = DotsOCRConfig
"""


def save_tiny_dots(
    path: str, *, looping: bool = False, seed: int = 1, remote_code: bool = False
) -> str:
    """The `dots` stand-in: Qwen2.5-VL architecture with dots.ocr's tokens (`<|imgpad|>`, `<|user|>`…).

    remote_code=True lays it out like the hub checkpoint: config.json says model_type `dots_ocr`
    with an `auto_map` to `DotsOCRForCausalLM` in modeling files inside the directory, so only
    trust_remote_code loads it (here the "remote" class is a thin Qwen2.5-VL subclass)."""
    extra = ("<|endofuser|>", "<|assistant|>")
    model = _save_qwen_family(
        path, DOTS_TOKENS, DOTS_TEMPLATE, looping=looping, seed=seed, extra_specials=extra
    )
    if remote_code:
        from safetensors.torch import save_file

        # custom code gets no key conversion: store the module's own parameter names
        weights = {k: v.contiguous() for k, v in model.state_dict().items()}
        save_file(weights, os.path.join(path, "model.safetensors"), metadata={"format": "pt"})
        with open(os.path.join(path, "configuration_dots.py"), "w", encoding="utf-8") as f:
            f.write(DOTS_CONFIG_CODE)
        with open(os.path.join(path, "modeling_dots_ocr.py"), "w", encoding="utf-8") as f:
            f.write(DOTS_MODELING_CODE)
        config_path = os.path.join(path, "config.json")
        with open(config_path, encoding="utf-8") as f:
            config = json.load(f)
        config.update(
            model_type="dots_ocr",
            architectures=["DotsOCRForCausalLM"],
            auto_map={
                "AutoConfig": "configuration_dots.DotsOCRConfig",
                "AutoModelForCausalLM": "modeling_dots_ocr.DotsOCRForCausalLM",
            },
        )
        with open(config_path, "w", encoding="utf-8") as f:
            json.dump(config, f, indent=2)
    return path


def lightonocr_config(
    tokenizer: Any,
    *,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    intermediate: int = 128,
    head_dim: int | None = None,
    vocab_size: int | None = None,
    vision_hidden: int = 32,
    vision_layers: int = 1,
    vision_heads: int = 2,
    vision_intermediate: int = 64,
    image_size: int = 112,
) -> Any:
    """A LightOnOcrConfig (Pixtral vision, Qwen3 text) sized by the arguments (defaults: tiny).
    LightOnOCR-2-1B: hidden 1024, layers 28, heads 16, kv_heads 8, intermediate 3072, head_dim 128,
    vocab 151936; vision 1024 / 24 layers / 16 heads / 4096; image 1540."""
    from transformers import LightOnOcrConfig

    pad, eos, image = (
        tokenizer.convert_tokens_to_ids(t) for t in ("<|endoftext|>", "<|im_end|>", "<|image_pad|>")
    )
    return LightOnOcrConfig(
        vision_config={
            "model_type": "pixtral",
            "hidden_size": vision_hidden,
            "intermediate_size": vision_intermediate,
            "num_hidden_layers": vision_layers,
            "num_attention_heads": vision_heads,
            "head_dim": vision_hidden // vision_heads,
            "patch_size": 14,
            "image_size": image_size,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
        },
        text_config={
            "model_type": "qwen3",
            "hidden_size": hidden,
            "intermediate_size": intermediate,
            "num_hidden_layers": layers,
            "num_attention_heads": heads,
            "num_key_value_heads": kv_heads,
            "head_dim": head_dim or hidden // heads,
            "vocab_size": vocab_size or len(tokenizer),
            "max_position_embeddings": 32768,
            "bos_token_id": pad,
            "eos_token_id": eos,
            "pad_token_id": pad,
        },
        image_token_id=image,
        spatial_merge_size=2,
    )


def lightonocr_tokenizer() -> Any:
    specials = ["<|im_start|>", "<|im_end|>", "<|image_pad|>", "<|vision_pad|>", "<|vision_end|>"]
    extra = {
        "image_token": "<|image_pad|>",
        "image_break_token": "<|vision_pad|>",
        "image_end_token": "<|vision_end|>",
    }
    return byte_tokenizer(
        specials, eos="<|im_end|>", pad="<|endoftext|>", extra=extra, chat_template=LIGHTON_TEMPLATE
    )


def save_tiny_lightonocr(
    path: str, *, looping: bool = False, seed: int = 2, image_size: int = 112
) -> str:
    """A ~0.1M-parameter LightOnOCR checkpoint with its LightOnOcrProcessor in `path`."""
    import torch
    from transformers import LightOnOcrForConditionalGeneration, LightOnOcrProcessor
    from transformers.models.pixtral.image_processing_pil_pixtral import PixtralImageProcessorPil

    tokenizer = lightonocr_tokenizer()
    images = PixtralImageProcessorPil(size={"longest_edge": image_size}, patch_size=14)
    processor = LightOnOcrProcessor(
        image_processor=images,
        tokenizer=tokenizer,
        patch_size=14,
        spatial_merge_size=2,
        chat_template=LIGHTON_TEMPLATE,
    )
    torch.manual_seed(seed)
    model = LightOnOcrForConditionalGeneration(
        lightonocr_config(tokenizer, image_size=image_size)
    ).eval()
    _finish(model, looping, tokenizer)
    os.makedirs(path, exist_ok=True)
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return path


def siglip_config(
    vocab_size: int,
    *,
    hidden: int = 32,
    layers: int = 1,
    heads: int = 2,
    intermediate: int = 64,
    image_size: int = 32,
    patch_size: int = 8,
    text_positions: int = 64,
    pad_id: int = 0,
    eos_id: int = 1,
) -> Any:
    """A SiglipConfig (FixRes) sized by the arguments; google/siglip2-base-patch16-224 is
    hidden 768, layers 12, heads 12, intermediate 3072, image 224, patch 16, vocab 256000."""
    from transformers import SiglipConfig

    tower = {
        "hidden_size": hidden,
        "intermediate_size": intermediate,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
    }
    text = {
        **tower,
        "vocab_size": vocab_size,
        "max_position_embeddings": text_positions,
        "projection_size": hidden,
        "pad_token_id": pad_id,
        "bos_token_id": eos_id,
        "eos_token_id": eos_id,
    }
    return SiglipConfig(
        text_config=text,
        vision_config={**tower, "image_size": image_size, "patch_size": patch_size},
    )


def siglip_tokenizer(max_length: int = 64) -> Any:
    return byte_tokenizer(
        ["</s>"], eos="</s>", pad="<pad>", model_max_length=max_length, padding_side="right"
    )


def save_tiny_siglip(path: str, *, seed: int = 3) -> str:
    """A tiny SiglipModel + SiglipProcessor (the FixRes architecture of the default router model)."""
    import torch
    from transformers import SiglipModel, SiglipProcessor
    from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

    tokenizer = siglip_tokenizer()
    images = SiglipImageProcessorPil(size={"height": 32, "width": 32})
    processor = SiglipProcessor(image_processor=images, tokenizer=tokenizer)
    torch.manual_seed(seed)
    pad, eos = tokenizer.pad_token_id, tokenizer.eos_token_id
    model = SiglipModel(siglip_config(len(tokenizer), pad_id=pad, eos_id=eos)).eval()
    os.makedirs(path, exist_ok=True)
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return path


def save_tiny_siglip2(path: str, *, seed: int = 4) -> str:
    """A tiny Siglip2Model + Siglip2Processor (the NaFlex architecture; 16-px patches, ≤ 256 of them)."""
    import torch
    from transformers import Siglip2Config, Siglip2Model, Siglip2Processor
    from transformers.models.siglip2.image_processing_pil_siglip2 import Siglip2ImageProcessorPil

    tokenizer = siglip_tokenizer()
    images = Siglip2ImageProcessorPil(patch_size=16, max_num_patches=256)
    processor = Siglip2Processor(image_processor=images, tokenizer=tokenizer)
    tower = {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
    }
    pad, eos = tokenizer.pad_token_id, tokenizer.eos_token_id
    config = Siglip2Config(
        text_config={
            **tower,
            "vocab_size": len(tokenizer),
            "max_position_embeddings": 64,
            "projection_size": 32,
            "pad_token_id": pad,
            "bos_token_id": eos,
            "eos_token_id": eos,
        },
        vision_config={**tower, "num_patches": 256, "patch_size": 16},
    )
    torch.manual_seed(seed)
    model = Siglip2Model(config).eval()
    os.makedirs(path, exist_ok=True)
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return path
