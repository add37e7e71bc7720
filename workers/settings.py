"""All configuration in one settings tree, `get_settings()` (env prefix `PAGEFLEET_`).

    Settings                    PAGEFLEET_*            broker, storage, limits, loglevel
      .options (per job)        Options                what `run/submit` accept; part of the job id
      .chains .vlm .router      PAGEFLEET_CHAINS__HE='["dots","tesseract:heb+eng"]', …
      .tesseract_read           PAGEFLEET_TESSERACT_READ__*  deskew, upscaling, coverage re-reads
      .events                   PAGEFLEET_EVENTS_*     the bucket-event receiver (`pagefleet events`)
      .heartbeat                PAGEFLEET_HEARTBEAT_*  probe files for containers
      .sentry                   PAGEFLEET_SENTRY_* / SENTRY_*  error reporting
      .reliability              PAGEFLEET_RELIABILITY__*  deadlines, re-dispatch, state TTLs, callbacks
      .studio                   PAGEFLEET_STUDIO_*     the review studio (`pagefleet review`)
      .models                   PAGEFLEET_MODELS_*     where pulled model weights live (`pagefleet models`)
      .ocr_commands             PAGEFLEET_OCR_COMMANDS='{"NAME": {"argv": [...]}}'  `command:NAME` engines

Sections that a separate process owns (the receiver, probes, Sentry) keep their own env prefix and
are read when the tree is built. Nothing else in the code reads environment variables for
configuration.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from workers.reliability import ReliabilitySettings
from workers.store.uri import is_s3, is_storage_url, s3_prefix

PIPELINE_VERSION = "0.3.0"  # 0.3: RTL rows read from their glyphs; 0.2: structure (blocks, chunks.jsonl)
QUEUES = ("split", "cpu", "gpu", "collect", "notify")  # the Celery queues, one Deployment/ScaledObject each


class Options(BaseModel):
    """Per-job options (what `pagefleet run/submit` accept). Part of the job id."""

    model_config = ConfigDict(extra="forbid")

    ocr: Literal["auto", "off", "force"] = Field("auto", description="OCR pages that fail the gate, never, or always")
    max_pages: int = Field(5000, ge=1, le=100_000, description="reject documents with more pages")
    max_bytes: int = Field(200 * 1024 * 1024, ge=1, le=4 * 1024**3, description="reject larger inputs")
    dpi: int = Field(300, ge=72, le=600, description="render resolution for OCR")
    structure: bool = Field(True, description="headings, lists, tables and chunks from the page layout")
    structured_recovery: Literal["off", "pymupdf4llm", "wse"] = Field(
        "off", description="a layout-aware extractor for tables the text layer could not give (seed 001); "
                           "wse: pymupdf4llm on the Word-Shape-Encoded page (seed 000)")
    chunk_chars: int = Field(1500, ge=200, le=20_000, description="largest chunk in chunks.jsonl (characters)")


class Chains(BaseModel):
    """Engine chains per routed script; entries are `engine` or `engine:variant`."""

    model_config = ConfigDict(extra="forbid")

    latin: list[str] = Field(["lightonocr", "dots", "qwen", "paddle", "tesseract:eng"],
                             description="GPU fleets: engines tried in turn on a page routed as Latin")
    he: list[str] = Field(["dots", "qwen", "tesseract:heb+eng"], description="GPU fleets: a page routed as Hebrew")
    ar: list[str] = Field(["dots", "qwen", "paddle:arabic", "tesseract:ara+eng"],
                          description="GPU fleets: a page routed as Arabic")
    default: list[str] = Field(["dots", "qwen", "tesseract:heb+ara+eng"],
                               description="GPU fleets: a page whose script no router could decide")
    # a page OSD calls Latin may be a mixed page whose RTL lines `eng` cannot read: its reading's low
    # confidence refuses it, and every script reads it again (issue 12, bench/eval_ocr.py)
    cpu_latin: list[str] = Field(["tesseract:eng", "tesseract:heb+ara+eng"],
                                 description="CPU fleets: a page routed as Latin")
    cpu_he: list[str] = Field(["tesseract:heb+eng"], description="CPU fleets: a page routed as Hebrew")
    cpu_ar: list[str] = Field(["tesseract:ara+eng"], description="CPU fleets: a page routed as Arabic")
    cpu_default: list[str] = Field(["tesseract:heb+ara+eng"], description="CPU fleets: a page of undecided script")


class VlmSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    lightonocr_model: str = Field("lightonai/LightOnOCR-2-1B", description="model id of the `lightonocr` engine")
    dots_model: str = Field("rednote-hilab/dots.ocr", description="model id of the `dots` engine")
    qwen_model: str = Field("Qwen/Qwen2.5-VL-7B-Instruct", description="model id of the `qwen` engine")
    max_new_tokens: int = Field(2048, ge=16, le=16384, description="most tokens a VLM writes for one page")
    # bench/gpu_bench.py on an H200 (LightOnOCR-sized, 1540-px pages, sdpa): peak 3.0 / 6.0 / 13.7 / 42.4 GiB
    # at batch 1 / 4 / 8 / 16 (Pixtral's block mask grows with the batch squared), 0.06 / 0.23 / 0.42 /
    # 0.65 pages/s; 8 fits a 24 GB card, 16 an 80 GB+ one (its `recommended:` line)
    batch_size: int = Field(8, ge=1, le=128, description="pages a VLM reads in one generate call; 8 fits a 24 GB "
                            "card, 16 an 80 GB one")
    static_cache: bool = Field(False, description="CUDA only: a static KV cache and a compiled decoding step")
    http_base_url: str | None = Field(None, description="the `http` engine: an OpenAI-compatible server (vLLM)")
    http_model: str | None = Field(None, description="the model name the `http` engine asks that server for")
    http_api_key: str | None = Field(None, description="bearer key for that server")
    http_timeout_s: float = Field(120.0, gt=0, description="the `http` engine gives up on a page after this")
    local_files_only: bool = Field(True, description="never fetch weights at run time (`pagefleet models pull` "
                                   "provisions them)")
    paddle_arabic_rec_model: str | None = Field(None, description="an Arabic PP-OCR recogniser (.onnx) for "
                                                "`paddle:arabic`")
    paddle_arabic_rec_keys: str | None = Field(None, description="the character list of that recogniser")


class TesseractReadSettings(BaseModel):
    """What the Tesseract engine does around its recognition pass (`workers.engines.tesseract_read`),
    each lever measured by `make eval-ocr`. Env: `PAGEFLEET_TESSERACT_READ__DESKEW=false`, …"""

    model_config = ConfigDict(extra="forbid")

    deskew: bool = Field(True, description="straighten pages leaning by 1.2° or more before reading")
    min_dpi: int = Field(0, ge=0, le=600, description="upscale scans below this resolution (0: read as scanned)")
    coverage: bool = Field(True, description="re-read ink no recognised word covers; unread → text_missing")
    reread_min_conf: float = Field(40.0, ge=0, le=100, description="a re-read gap is kept at this confidence")
    reread_below: float = Field(0.0, ge=0, le=100, description="re-read lines under this confidence (0: never)")
    detect_inverted: bool = Field(False, description="the page pass also tries doubtful lines inverted (white on "
                                  "black; ≈ 7 % slower; gap re-reads always do)")


class RouterSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    siglip_model: str = Field("google/siglip2-base-patch16-224", description="model id of the SigLIP2 visual router")
    # seed 003's best pair (English vs Arabic) plus Hebrew; margin = p(first) - max p(others)
    siglip_prompts: list[str] = Field([
        "this is a photo of English text.", "this is a photo of Arabic text.", "this is a photo of Hebrew text.",
    ], description="zero-shot prompts, one per label")
    siglip_labels: list[str] = Field(["latin", "ar", "he"], description="the script each prompt stands for")
    siglip_threshold: float = Field(-0.028, description="least margin (first label's probability minus the "
                                    "next best) for a SigLIP2 verdict")
    # bench/gpu_bench.py on an H200, SiglipRouter.classify on 64 page files: 19.5 / 65 / 107 / 122 / 137
    # pages/s at batch 1 / 8 / 16 / 32 / 64 (the forward pass alone: 2 000 pages/s at 16; CPU decode bounds it)
    siglip_batch_size: int = Field(32, ge=1, le=256, description="pages the visual router classifies in one batch")
    local_files_only: bool = Field(True, description="never fetch the router's weights at run time")
    osd_min_confidence: float = Field(1.0, ge=0, description="least Tesseract OSD script confidence for a verdict")
    # OSD says "Latin" for Hebrew tables at ~0.8: a Latin verdict must be surer before an
    # English-only chain reads the page; below it the recognition probe decides
    osd_min_confidence_latin: float = Field(4.0, ge=0, description="least OSD confidence for a Latin verdict "
                                            "(an English-only chain)")
    # before a SigLIP2 "latin" verdict sends a page to English-only engines, OSD (+ probe) must not
    # see Hebrew or Arabic on it: no RTL page is read by an English-only engine
    confirm_latin: bool = Field(True, description="a SigLIP2 Latin verdict is checked by OSD for RTL letters")
    # CPU pages with no text-layer hint: the default chain's multilingual Tesseract reads the page
    # first and the script of its reading routes it (OSD only where that reading is refused);
    # false: OSD (+ the recognition probe) before any reading (workers/ladder/ocr_stage.py, make eval-ocr)
    read_first: bool = Field(True, description="CPU pages without a hint: the multilingual reading routes the "
                             "page; false: OSD first")
    # a scan with no trustworthy text layer is turned upright first when OSD is this sure
    min_orientation_confidence: float = Field(2.0, ge=0, description="a scan is turned upright when OSD is this "
                                              "sure of its orientation")


# --- sections with their own env prefix ---------------------------------------------------------

class EventSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PAGEFLEET_EVENTS_", env_nested_delimiter="__", extra="ignore")

    host: str = Field("127.0.0.1", description="address to bind; 0.0.0.0 inside a container")
    port: int = Field(8080, ge=0, le=65535, description="0 picks a free port")
    token: SecretStr | None = Field(None, description="the bearer token MinIO/clients must send")
    output: str | None = Field(None, description="artifact storage: s3://bucket/prefix (or file:///dir)")
    prefix_template: str = Field("artifacts/{sha256}", description="artifact prefix inside the output")
    prefix_filters: list[str] = Field(default_factory=list, description="object key must start with one")
    suffix_filters: list[str] = Field(default_factory=list, description="object key must end with one")
    buckets: list[str] = Field(default_factory=list, description="only these source buckets (empty: any)")
    callback_url: str | None = Field(None, description="HTTP callback for completion notices")
    options: Options = Field(default_factory=Options, description="job options for the documents it enqueues")
    dedup_ttl_s: int = Field(7 * 86400, ge=60, description="how long an enqueued upload is remembered")
    claim_ttl_s: int = Field(120, ge=5, le=3600, description="how long an in-flight enqueue holds its claim")
    max_body_bytes: int = Field(1024 * 1024, ge=1024, le=64 * 1024 * 1024, description="larger event bodies get 413")
    head_objects: bool = Field(True, description="HEAD every object before answering: a missing one ends in "
                               "`source_missing` at once; one without an ETag gets the store's")
    redis_bridge_list: str | None = Field(None, description="MinIO Redis target key (format=access)")
    redis_bridge_url: str | None = Field(None, description="Redis holding that list (default: broker)")
    inbox_list: str | None = Field(None, description="queue POSTed events on this list of the broker, drained "
                                                     "in batches by a bridge in the receiver (2xx once queued)")
    gather_s: float = Field(0.5, ge=0, le=30, description="how long a bridge holds a burst's events for a batch "
                                                          "while split tasks wait on the broker; 0: never")
    max_concurrency: int = Field(64, ge=1, le=4096, description="event POSTs in flight; more get 503 + Retry-After")
    retry_after_s: int = Field(5, ge=1, le=3600, description="the Retry-After of a 503")

    @field_validator("output")
    @classmethod
    def _storage_url(cls, value: str | None) -> str | None:
        if value is not None and not is_storage_url(value):
            raise ValueError("output must be s3://bucket/prefix or file:///dir")
        if value is not None and is_s3(value) and not s3_prefix(value)[0]:
            raise ValueError("output needs a bucket: s3://bucket/prefix")
        return value.rstrip("/") if value else value


class ModelStoreSettings(BaseSettings):
    """Pulled model weights (`pagefleet models pull`, workers/engines/models_store.py)."""

    model_config = SettingsConfigDict(env_prefix="PAGEFLEET_MODELS_", extra="ignore", populate_by_name=True)

    dir: str | None = Field(None, description="where pulled models live; engines resolve model ids there")
    from_url: str | None = Field(None, validation_alias=AliasChoices("PAGEFLEET_MODELS_FROM", "from_url"),
                                 description="default pull source: s3://bucket/prefix, file:///dir or hf")


class OcrCommand(BaseModel):
    """A site's OCR program for the `command:NAME` engine (workers/engines/command.py)."""

    model_config = ConfigDict(extra="forbid")

    argv: list[str] = Field(min_length=1, description="the program and its fixed arguments; PDF and page are appended")
    timeout_s: float = Field(120.0, gt=0, le=3600, description="wall-clock limit per page")
    memory_mb: int = Field(2048, ge=64, description="address-space limit of the process")
    env: dict[str, str] = Field(default_factory=dict, description="extra environment for the program")
    pass_env: list[str] = Field(default_factory=list, description="worker variables passed through by name")
    device: Literal["cpu", "gpu", "remote"] = Field("cpu", description="what the program uses (shown on attempts)")


class HeartbeatSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PAGEFLEET_HEARTBEAT_", extra="ignore")

    dir: str | None = Field(None, description="where the files live; unset disables the heartbeat")
    interval_s: float = Field(10.0, gt=0, le=300, description="how often a worker touches its files")
    max_age_s: float = Field(120.0, gt=0, description="liveness fails when `alive` is older")


class SentrySettings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    dsn: str | None = Field(None, validation_alias=AliasChoices("PAGEFLEET_SENTRY_DSN", "SENTRY_DSN"),
                            description="where errors are reported; unset: Sentry off")
    environment: str | None = Field(None, validation_alias=AliasChoices("PAGEFLEET_SENTRY_ENVIRONMENT",
                                                                           "SENTRY_ENVIRONMENT"),
                                     description="the environment name events carry")
    traces_sample_rate: float = Field(0.0, ge=0.0, le=1.0,
                                      validation_alias=AliasChoices("PAGEFLEET_SENTRY_TRACES_SAMPLE_RATE"),
                                      description="share of tasks traced for performance (0: none)")


class StudioSettings(BaseSettings):
    """The review studio (`pagefleet review`); command-line values override these."""

    model_config = SettingsConfigDict(env_prefix="PAGEFLEET_STUDIO_", env_nested_delimiter="__", extra="ignore")

    host: str = Field("127.0.0.1", description="address to bind; anything but loopback needs a token")
    port: int = Field(4173, ge=0, le=65535, description="0 picks a free port")
    token: SecretStr | None = Field(None, description="required on every request when set")
    max_upload_bytes: int = Field(50 * 1024 * 1024, ge=1024, le=4 * 1024**3, description="upload size cap")
    low_confidence: float = Field(75.0, ge=0, le=100, description="OCR confidence below this is risky")
    image_dpi: int = Field(110, ge=36, le=300, description="resolution of the source page images")
    options: Options = Field(default_factory=Options, description="job options for uploaded PDFs")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PAGEFLEET_", env_nested_delimiter="__", extra="ignore")

    broker_url: str = Field("redis://127.0.0.1:6379/0", description="the Redis broker of the fleet")
    result_backend: str | None = Field(None, description="Celery result backend (default: broker_url)")
    s3_endpoint: str = Field("127.0.0.1:9000", description="S3 or MinIO endpoint, host:port")
    s3_access_key: str = Field("minioadmin", description="static S3 key; empty (with s3_secret_key) uses the "
                               "credential chain")
    s3_secret_key: str = Field("minioadmin", description="static S3 secret")
    s3_secure: bool = Field(False, description="HTTPS to the S3 endpoint")
    s3_region: str | None = Field(None, description="S3 region (default: asked of the endpoint)")
    s3_timeout_s: float = Field(60.0, gt=0, description="an S3 request's connect and read timeout: a stalled "
                                "connection fails (retried once, then StorageError) instead of waiting minio's 5 minutes")
    s3_lookup_timeout_s: float = Field(2.0, gt=0, le=60, description="a producer's HEAD of a source (`submit` "
                                       "of s3:// sources, all at once): its timeout, retried once")
    cache_dir: str = Field("/tmp/pagefleet-cache", description="where workers keep downloaded sources")

    gpu: bool = Field(False, description="route OCR to the gpu queue and its VLM chains")
    # a worker of the gpu queue alone: "threads" runs its tasks on threads whose pages share the
    # VLM's generate calls (workers/engines/batching.py; a task keeps its own soft time limit there,
    # workers/fleet/deadline.py); "prefork" one task at a time in a pool child
    gpu_pool: Literal["threads", "prefork"] = Field("threads", description="a gpu-queue worker's pool: threads "
                                                    "share generate calls; prefork runs one task at a time")
    tesseract_cmd: str = Field("tesseract", description="the tesseract command (where not run in the process)")
    tesseract_timeout_s: float = Field(180.0, gt=0, description="a Tesseract read is cancelled after this")
    # Tesseract's C++ API in the worker (tesserocr): models loaded once per process, no process
    # start per read; false: the `tesseract` command (workers/engines/tesseract_api.py)
    tesseract_inprocess: bool = Field(True, description="Tesseract's API in the worker (models loaded once); "
                                      "false: the tesseract command")
    omp_thread_limit: int = Field(1, ge=1, description="OpenMP threads of one Tesseract read")
    sandbox_timeout_s: float = Field(120.0, gt=0, description="a sandboxed PDF command is killed after this")
    sandbox_memory_mb: int = Field(3072, ge=256, description="address-space limit of a sandbox child")
    split_batch_pages: int = Field(200, ge=1, description="pages a split task reads in one sandbox command")
    # every sandbox command forks from a warm per-worker server (PyMuPDF imported once) instead of
    # starting an interpreter; off: one `python -m workers.pdf.sandbox` process per command
    sandbox_fork_server: bool = Field(True, description="sandbox commands fork from a warm per-worker server")
    # commands one forked sandbox child may run in turn (1: a fresh child per command, nothing shared
    # between documents; more saves the fork, ~12 ms of CPU, where uploads are trusted alike)
    sandbox_reuse: int = Field(1, ge=1, le=1000, description="commands one sandbox child may run in turn "
                               "(1: a fresh child per command)")
    # a child also runs every further command on the PDF of its first one (a big document's range
    # tasks in one worker process share it: no fork and no cold memory per range); it leaves when
    # a command for another file comes, after 2 s without one, or past half its memory limit
    sandbox_reuse_document: bool = Field(True, description="a child also runs the further commands on the file "
                                         "of its first one")
    # a reused child leaves after a command that leaves it holding more than this (RSS, MB; MuPDF's
    # store and a kept document's parsed objects grow with the pages read)
    sandbox_keep_mb: int = Field(320, ge=64, description="a reused child leaves once it holds more (RSS, MB)")
    # commands a child shared by one submission's small-document batches on one worker process runs
    # at most (`sandbox.shared_child`: a batch's documents, and its submission's next batches)
    sandbox_share_max: int = Field(256, ge=1, le=10_000, description="commands a child shared by one "
                                   "submission's batches runs at most")
    # a split batch's documents are probed this many to a sandbox command (`source.inspect_many`: one
    # round trip through the fork server and one result for all, ~0.3–0.5 ms of CPU a one-page
    # document); 1: a command each
    sandbox_probe_batch: int = Field(8, ge=1, le=64, description="a split batch's documents probed in one "
                                     "sandbox command (1: one each)")
    # where a worker process's two scratch files (a sandbox command's JSON result, its stderr) live:
    # "" picks /dev/shm where it is a RAM file system with sandbox_scratch_shm_mb free, else the
    # temp dir. On ext4 the result file, emptied before every command, cost ~0.2 ms of waiting a
    # command (truncating a file that holds data starts its writeback); a tmpfs has no such cost
    sandbox_scratch_dir: str = Field("", description="where a worker's sandbox scratch files live (empty: "
                                     "/dev/shm where it has room, else the temp dir)")
    sandbox_scratch_shm_mb: int = Field(256, ge=0, description="free MB /dev/shm needs to hold the scratch files")
    # rung 1's text walk in C (workers/pdf/stextwalk.c, built by `make setup`; the same answers as
    # the Python path, which runs where it is off or was not built)
    native_walk: bool = Field(True, description="rung 1's text walk in C where it was built (the same answers)")
    # rung 1 by page range: a document of more pages than split_range_pages is split into a chord of
    # range tasks (queue split_range_queue) so every core works on it; never more than split_max_ranges
    split_range_pages: int = Field(25, ge=1, description="a longer document is split into page-range tasks "
                                   "of this many pages")
    split_max_ranges: int = Field(64, ge=1, description="most range tasks one document is split into")
    # a document too short for about eight ranges of split_range_pages gets ranges down to this size
    # (26–192 pages): the last range runs alone while the other cores idle, so a shorter one wastes
    # less (workers/split/ranges.py)
    split_range_min_pages: int = Field(10, ge=1, description="shortest range when a document is too short for "
                                       "about eight full ones")
    split_range_queue: Literal["split", "cpu"] = Field("cpu", description="the queue range tasks go to")
    # a document of several ranges (structure off) is collected by its split task as the range tasks
    # store their ranges, not after the last one (`workers.collect.stream`); off: by `split_done`, after them
    stream_collect: bool = Field(True, description="a document of several ranges is collected while its ranges "
                                 "run (structure off)")
    # documents submitted together (`submit.enqueue_many`: a folder, `pagefleet run`, the bench) of
    # at most split_batch_max_bytes go to the split queue as batches of this many, one task each,
    # whose documents share a sandbox child (`sandbox.shared_child`); 1: one task per document
    split_batch_documents: int = Field(16, ge=1, le=256, description="small documents submitted together go "
                                       "as split tasks of this many (1: a task each)")
    # a submission of more than split_batch_spread batches of split_batch_documents gets bigger
    # batches, up to split_batch_max_documents, as many as split_batch_spread (`submit.batch_size`)
    split_batch_spread: int = Field(8, ge=1, le=1024, description="a big submission's batches grow to make "
                                    "about this many")
    split_batch_max_documents: int = Field(32, ge=1, le=256, description="largest batch of a big submission")
    split_batch_max_bytes: int = Field(2 * 1024 * 1024, ge=0, description="largest document that joins a batch")

    # bounded, so the visibility timeout (hard limit + reliability.visibility_margin_s = 9 min) can be
    # short: a dead worker's unacked pages come back in minutes (issue 9)
    task_soft_time_limit: int = Field(420, description="a task is asked to stop after this many seconds")
    task_time_limit: int = Field(480, description="a task is killed after this many seconds")
    max_page_attempts: int = Field(3, ge=1, description="deliveries of a page that kills its worker before it "
                                   "is `failed` and dead-lettered")
    job_deadline_s: int = Field(3600, ge=1, description="`pagefleet run` gives up waiting after this")
    reliability: ReliabilitySettings = Field(default_factory=ReliabilitySettings,
                                             description="deadlines, re-dispatch, state TTLs, callbacks")

    loglevel: str = Field("WARNING", description="log level of the CLI (workers take --loglevel)")
    log_format: Literal["plain", "json"] = Field("plain", description="json: one object a line with job id and page")

    chains: Chains = Field(Chains(), description="engine chains per routed script")
    vlm: VlmSettings = Field(VlmSettings(), description="VLM engines: model ids, batches, an HTTP server")
    router: RouterSettings = Field(RouterSettings(), description="the visual router: SigLIP2 and OSD")
    tesseract_read: TesseractReadSettings = Field(default_factory=TesseractReadSettings,
                                                  description="what the Tesseract engine does around its read")
    events: EventSettings = Field(default_factory=EventSettings, description="the bucket-event receiver")
    heartbeat: HeartbeatSettings = Field(default_factory=HeartbeatSettings, description="probe files for containers")
    sentry: SentrySettings = Field(default_factory=SentrySettings, description="error reporting")
    studio: StudioSettings = Field(default_factory=StudioSettings, description="the review studio")
    models: ModelStoreSettings = Field(default_factory=ModelStoreSettings, description="pulled model weights")
    ocr_commands: dict[str, OcrCommand] = Field(default_factory=dict, description="`command:NAME` engines by NAME")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()


def reliability(settings: Settings | None = None) -> ReliabilitySettings:
    """`settings.reliability` (of `get_settings()` by default)."""
    found = get_settings() if settings is None else settings
    return getattr(found, "reliability", None) or ReliabilitySettings()
