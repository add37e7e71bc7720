"""The OCR group of the settings tree (`Settings().ocr`, env `PAGEFLEET_OCR__…`): the engine chains
per routed script, the visual router, Tesseract and what it does around its read, the site's OCR
commands, and where pulled model weights live; and the VLM engines of the GPU group
(`Settings().gpu.vlm`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Chains(BaseModel):
    """Engine chains per routed script; entries are `engine` or `engine:variant`."""

    model_config = ConfigDict(extra="forbid")

    latin: list[str] = Field(
        ["lightonocr", "dots", "qwen", "paddle", "tesseract:eng"],
        description="GPU fleets: engines tried in turn on a page routed as Latin",
    )
    he: list[str] = Field(
        ["dots", "qwen", "tesseract:heb+eng"], description="GPU fleets: a page routed as Hebrew"
    )
    ar: list[str] = Field(
        ["dots", "qwen", "paddle:arabic", "tesseract:ara+eng"],
        description="GPU fleets: a page routed as Arabic",
    )
    default: list[str] = Field(
        ["dots", "qwen", "tesseract:heb+ara+eng"],
        description="GPU fleets: a page whose script no router could decide",
    )
    # a page OSD calls Latin may be a mixed page whose RTL lines `eng` cannot read: its reading's low
    # confidence refuses it, and every script reads it again (`make eval-ocr`)
    cpu_latin: list[str] = Field(
        ["tesseract:eng", "tesseract:heb+ara+eng"], description="CPU fleets: a page routed as Latin"
    )
    cpu_he: list[str] = Field(
        ["tesseract:heb+eng"], description="CPU fleets: a page routed as Hebrew"
    )
    cpu_ar: list[str] = Field(
        ["tesseract:ara+eng"], description="CPU fleets: a page routed as Arabic"
    )
    cpu_default: list[str] = Field(
        ["tesseract:heb+ara+eng"], description="CPU fleets: a page of undecided script"
    )


class VlmSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    lightonocr_model: str = Field(
        "lightonai/LightOnOCR-2-1B", description="model id of the `lightonocr` engine"
    )
    dots_model: str = Field("rednote-hilab/dots.ocr", description="model id of the `dots` engine")
    qwen_model: str = Field(
        "Qwen/Qwen2.5-VL-7B-Instruct", description="model id of the `qwen` engine"
    )
    max_new_tokens: int = Field(
        2048, ge=16, le=16384, description="most tokens a VLM writes for one page"
    )
    # a VLM's memory grows with the batch squared (Pixtral's block mask): `bench/gpu_bench.py` prints
    # the batch a card fits as its `recommended:` line
    batch_size: int = Field(
        8,
        ge=1,
        le=128,
        description="pages a VLM reads in one generate call; 8 fits a 24 GB card, 16 an 80 GB one",
    )
    static_cache: bool = Field(
        False, description="CUDA only: a static KV cache and a compiled decoding step"
    )
    http_base_url: str | None = Field(
        None, description="the `http` engine: an OpenAI-compatible server (vLLM)"
    )
    http_model: str | None = Field(
        None, description="the model name the `http` engine asks that server for"
    )
    http_api_key: str | None = Field(None, description="bearer key for that server")
    http_timeout_s: float = Field(
        120.0, gt=0, description="the `http` engine gives up on a page after this"
    )
    local_files_only: bool = Field(
        True,
        description="never fetch weights at run time (`pagefleet models pull` provisions them)",
    )
    paddle_arabic_rec_model: str | None = Field(
        None, description="an Arabic PP-OCR recogniser (.onnx) for `paddle:arabic`"
    )
    paddle_arabic_rec_keys: str | None = Field(
        None, description="the character list of that recogniser"
    )


class TesseractReadSettings(BaseModel):
    """What the Tesseract engine does around its recognition pass (`pagefleet.workers.engines.tesseract_read`),
    each lever measured by `make eval-ocr`. Env: `PAGEFLEET_TESSERACT_READ__DESKEW=false`, …"""

    model_config = ConfigDict(extra="forbid")

    deskew: bool = Field(
        True, description="straighten pages leaning by 1.2° or more before reading"
    )
    min_dpi: int = Field(
        0, ge=0, le=600, description="upscale scans below this resolution (0: read as scanned)"
    )
    coverage: bool = Field(
        True, description="re-read ink no recognised word covers; unread → text_missing"
    )
    reread_min_conf: float = Field(
        40.0, ge=0, le=100, description="a re-read gap is kept at this confidence"
    )
    reread_below: float = Field(
        0.0, ge=0, le=100, description="re-read lines under this confidence (0: never)"
    )
    detect_inverted: bool = Field(
        False,
        description="the page pass also tries doubtful lines inverted (white on "
        "black; ≈ 7 % slower; gap re-reads always do)",
    )


class RouterSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    siglip_model: str = Field(
        "google/siglip2-base-patch16-224", description="model id of the SigLIP2 visual router"
    )
    # margin = p(first) - max p(others)
    siglip_prompts: list[str] = Field(
        [
            "this is a photo of English text.",
            "this is a photo of Arabic text.",
            "this is a photo of Hebrew text.",
        ],
        description="zero-shot prompts, one per label",
    )
    siglip_labels: list[str] = Field(
        ["latin", "ar", "he"], description="the script each prompt stands for"
    )
    siglip_threshold: float = Field(
        -0.028,
        description="least margin (first label's probability minus the "
        "next best) for a SigLIP2 verdict",
    )
    # the router's forward pass is cheap; decoding the page images on the CPU bounds a batch
    siglip_batch_size: int = Field(
        32, ge=1, le=256, description="pages the visual router classifies in one batch"
    )
    local_files_only: bool = Field(True, description="never fetch the router's weights at run time")
    osd_min_confidence: float = Field(
        1.0, ge=0, description="least Tesseract OSD script confidence for a verdict"
    )
    # OSD says "Latin" for Hebrew tables at ~0.8: a Latin verdict must be surer before an
    # English-only chain reads the page; below it the recognition probe decides
    osd_min_confidence_latin: float = Field(
        4.0, ge=0, description="least OSD confidence for a Latin verdict (an English-only chain)"
    )
    # before a SigLIP2 "latin" verdict sends a page to English-only engines, OSD (+ probe) must not
    # see Hebrew or Arabic on it: no RTL page is read by an English-only engine
    confirm_latin: bool = Field(
        True, description="a SigLIP2 Latin verdict is checked by OSD for RTL letters"
    )
    # CPU pages with no text-layer hint: the default chain's multilingual Tesseract reads the page
    # first and the script of its reading routes it (OSD only where that reading is refused);
    # false: OSD (+ the recognition probe) before any reading (pagefleet/workers/ladder/ocr_stage.py, make eval-ocr)
    read_first: bool = Field(
        True,
        description="CPU pages without a hint: the multilingual reading routes the "
        "page; false: OSD first",
    )
    # a scan with no trustworthy text layer is turned upright first when OSD is this sure
    min_orientation_confidence: float = Field(
        2.0, ge=0, description="a scan is turned upright when OSD is this sure of its orientation"
    )


class ModelStoreSettings(BaseModel):
    """Pulled model weights (`pagefleet models pull`, pagefleet/workers/engines/models_store.py)."""

    model_config = ConfigDict(extra="forbid")

    dir: str | None = Field(
        None, description="where pulled models live; engines resolve model ids there"
    )
    from_url: str | None = Field(
        None, description="default pull source: s3://bucket/prefix, file:///dir or hf"
    )


class OcrCommand(BaseModel):
    """A site's OCR program for the `command:NAME` engine (pagefleet/workers/engines/command.py)."""

    model_config = ConfigDict(extra="forbid")

    argv: list[str] = Field(
        min_length=1, description="the program and its fixed arguments; PDF and page are appended"
    )
    timeout_s: float = Field(120.0, gt=0, le=3600, description="wall-clock limit per page")
    memory_mb: int = Field(2048, ge=64, description="address-space limit of the process")
    env: dict[str, str] = Field(
        default_factory=dict, description="extra environment for the program"
    )
    pass_env: list[str] = Field(
        default_factory=list, description="worker variables passed through by name"
    )
    device: Literal["cpu", "gpu", "remote"] = Field(
        "cpu", description="what the program uses (shown on attempts)"
    )


class OcrSettings(BaseModel):
    """Which engines read a page, and how."""

    model_config = ConfigDict(extra="forbid")

    chains: Chains = Field(default_factory=Chains, description="engine chains per routed script")
    router: RouterSettings = Field(
        default_factory=RouterSettings, description="the visual router: SigLIP2 and OSD"
    )
    tesseract_cmd: str = Field(
        "tesseract", description="the tesseract command (where not run in the process)"
    )
    tesseract_timeout_s: float = Field(
        180.0, gt=0, description="a Tesseract read is cancelled after this"
    )
    # Tesseract's C++ API in the worker (tesserocr): models loaded once per process, no process
    # start per read; false: the `tesseract` command (pagefleet/workers/engines/tesseract_api.py)
    tesseract_inprocess: bool = Field(
        True,
        description="Tesseract's API in the worker (models loaded once); "
        "false: the tesseract command",
    )
    omp_thread_limit: int = Field(1, ge=1, description="OpenMP threads of one Tesseract read")
    tesseract_read: TesseractReadSettings = Field(
        default_factory=TesseractReadSettings,
        description="what the Tesseract engine does around its read",
    )
    commands: dict[str, OcrCommand] = Field(
        default_factory=dict, description="`command:NAME` engines by NAME"
    )
    models: ModelStoreSettings = Field(
        default_factory=ModelStoreSettings, description="pulled model weights"
    )
