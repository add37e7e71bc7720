"""All configuration in one pydantic-settings class (env prefix `PAGEFLEET_`).

Nested values use `__` (e.g. `PAGEFLEET_CHAINS__HE='["dots","tesseract:heb+eng"]'`). Nothing else
in the code reads environment variables for configuration.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

PIPELINE_VERSION = "0.1.0"
QUEUES = ("split", "cpu", "gpu", "collect")  # the Celery queues, one Deployment/ScaledObject each


class Options(BaseModel):
    """Per-job options (what `pagefleet run/submit` accept). Part of the job id."""

    model_config = ConfigDict(extra="forbid")

    ocr: Literal["auto", "off", "force"] = Field("auto", description="OCR pages that fail the gate, never, or always")
    max_pages: int = Field(5000, ge=1, le=100_000, description="reject documents with more pages")
    max_bytes: int = Field(200 * 1024 * 1024, ge=1, le=4 * 1024**3, description="reject larger inputs")
    dpi: int = Field(300, ge=72, le=600, description="render resolution for OCR")


class Chains(BaseModel):
    """Engine chains per routed script; entries are `engine` or `engine:variant`."""

    model_config = ConfigDict(extra="forbid")

    latin: list[str] = ["lightonocr", "dots", "qwen", "paddle", "tesseract:eng"]
    he: list[str] = ["dots", "qwen", "tesseract:heb+eng"]
    ar: list[str] = ["dots", "qwen", "paddle:arabic", "tesseract:ara+eng"]
    default: list[str] = ["dots", "qwen", "tesseract:heb+ara+eng"]
    cpu_latin: list[str] = ["tesseract:eng"]
    cpu_he: list[str] = ["tesseract:heb+eng"]
    cpu_ar: list[str] = ["tesseract:ara+eng"]
    cpu_default: list[str] = ["tesseract:heb+ara+eng"]


class VlmSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    lightonocr_model: str = "lightonai/LightOnOCR-2-1B"
    dots_model: str = "rednote-hilab/dots.ocr"
    qwen_model: str = "Qwen/Qwen2.5-VL-7B-Instruct"
    max_new_tokens: int = Field(2048, ge=16, le=16384)
    batch_size: int = Field(8, ge=1, le=128)
    http_base_url: str | None = None  # an OpenAI-compatible server (vLLM) serving the same models
    http_model: str | None = None
    http_api_key: str | None = None
    http_timeout_s: float = Field(120.0, gt=0)
    local_files_only: bool = True  # never fetch weights at run time; images bake them in
    paddle_arabic_rec_model: str | None = None  # an Arabic PP-OCR recogniser (.onnx) for `paddle:arabic`
    paddle_arabic_rec_keys: str | None = None


class RouterSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    siglip_model: str = "google/siglip2-base-patch16-224"
    # seed 003's best pair (English vs Arabic) plus Hebrew; margin = p(first) - max p(others)
    siglip_prompts: list[str] = [
        "this is a photo of English text.", "this is a photo of Arabic text.", "this is a photo of Hebrew text.",
    ]
    siglip_labels: list[str] = ["latin", "ar", "he"]
    siglip_threshold: float = -0.028
    siglip_batch_size: int = Field(16, ge=1, le=256)
    local_files_only: bool = True  # never fetch weights at run time
    osd_min_confidence: float = Field(1.0, ge=0)
    # OSD says "Latin" for Hebrew tables at ~0.8: a Latin verdict must be surer before an
    # English-only chain reads the page; below it the recognition probe decides
    osd_min_confidence_latin: float = Field(4.0, ge=0)
    # before a SigLIP2 "latin" verdict sends a page to English-only engines, OSD (+ probe) must not
    # see Hebrew or Arabic on it: no RTL page is read by an English-only engine
    confirm_latin: bool = True
    # a scan with no trustworthy text layer is turned upright first when OSD is this sure
    min_orientation_confidence: float = Field(2.0, ge=0)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PAGEFLEET_", env_nested_delimiter="__", extra="ignore")

    broker_url: str = "redis://127.0.0.1:6379/0"
    result_backend: str | None = None  # defaults to broker_url
    s3_endpoint: str = "127.0.0.1:9000"
    s3_access_key: str = "minioadmin"
    s3_secret_key: str = "minioadmin"
    s3_secure: bool = False
    s3_region: str | None = None
    cache_dir: str = "/tmp/pagefleet-cache"

    gpu: bool = Field(False, description="route OCR to the gpu queue and its VLM chains")
    tesseract_cmd: str = "tesseract"
    tesseract_timeout_s: float = Field(180.0, gt=0)
    omp_thread_limit: int = Field(1, ge=1)
    sandbox_timeout_s: float = Field(120.0, gt=0)
    sandbox_memory_mb: int = Field(3072, ge=256)
    split_batch_pages: int = Field(200, ge=1)

    task_soft_time_limit: int = 600
    task_time_limit: int = 660
    max_page_attempts: int = Field(3, ge=1)
    job_deadline_s: int = Field(3600, ge=60)

    chains: Chains = Chains()
    vlm: VlmSettings = VlmSettings()
    router: RouterSettings = RouterSettings()


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
