"""What a VLM engine is asked: the prompt for a page's routed script and the page image, scaled
down to the engine's pixel budget. Shared by the local engines (`pagefleet.workers.engines.vlm`) and the
HTTP engine that asks a served model (`pagefleet.workers.engines.http`).
"""

from __future__ import annotations

from typing import Any

from pagefleet.workers.engines.base import PageImage, declared
from pagefleet.workers.engines.vlm_load import VlmSpec
from pagefleet.workers.errors import EngineCrashed

SCRIPT_HINTS = {"he": "Hebrew", "ar": "Arabic"}


def spec_of(name: str | None) -> VlmSpec | None:
    """The `VlmSpec` of the registered VLM engine called `name`, None when `name` is no VLM engine."""
    spec = getattr(declared(name), "spec", None) if name else None
    return spec if isinstance(spec, VlmSpec) else None


def ocr_prompt(engine: str, script: str | None) -> str | None:
    """The text part of the OCR request for the VLM engine `engine` (None: send the image alone)."""
    spec = spec_of(engine)
    if spec is None:
        raise KeyError(engine)
    if spec.prompt is None:
        return None
    language = SCRIPT_HINTS.get(script or "")
    if spec.script_hint and language:
        return (
            f"{spec.prompt} The text is in {language}: write it in logical (reading) order, exactly as "
            "printed, without translating."
        )
    return spec.prompt


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
