"""All configuration in one settings tree, `get_settings()`, read from the environment as
`PAGEFLEET_` and the setting's path, nested names joined by `__` (`PAGEFLEET_BROKER__URL`):

    Settings
      .broker          the Redis broker: url, timeouts, re-delivery, state TTLs
      .storage         S3/MinIO and the workers' source cache
      .ocr             chains per script, the router, Tesseract, OCR commands, pulled models
      .gpu             the GPU fleet: on/off, its pool, the VLM engines
      .events          the bucket-event receiver (`pagefleet events`)
      .studio          the review studio (`pagefleet review`)
      .limits          task time limits, the stall deadline, callbacks, the PDF sandbox
      .observability   logs, container probes, Sentry
      .advanced        the few tuning levers a site may move (the rest are constants in the code)
      .options         per job: what `run/submit` accept (`Options`); part of the job id

Old spellings still work and warn once (`pagefleet.workers.settings.spellings`). Nothing else in the code
reads environment variables for configuration; docs/reference/configuration.md lists every
variable (`scripts/gen_docs.py`).
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from pagefleet.workers.settings.reading import (
    Chains,
    ModelStoreSettings,
    OcrCommand,
    OcrSettings,
    RouterSettings,
    TesseractReadSettings,
    VlmSettings,
)
from pagefleet.workers.settings.sections import (
    AdvancedSettings,
    BrokerSettings,
    GpuSettings,
    HeartbeatSettings,
    LimitsSettings,
    ObservabilitySettings,
    SentrySettings,
    StorageSettings,
)
from pagefleet.workers.settings.services import EventSettings, Options, StudioSettings
from pagefleet.workers.settings.spellings import TreeEnvSource

__all__ = [
    "PIPELINE_VERSION",
    "QUEUES",
    "AdvancedSettings",
    "BrokerSettings",
    "Chains",
    "EventSettings",
    "GpuSettings",
    "HeartbeatSettings",
    "LimitsSettings",
    "ModelStoreSettings",
    "ObservabilitySettings",
    "OcrCommand",
    "OcrSettings",
    "Options",
    "RouterSettings",
    "SentrySettings",
    "Settings",
    "StorageSettings",
    "StudioSettings",
    "TesseractReadSettings",
    "VlmSettings",
    "get_settings",
]

PIPELINE_VERSION = (
    "0.3.0"  # 0.3: RTL rows read from their glyphs; 0.2: structure (blocks, chunks.jsonl)
)
QUEUES = (
    "split",
    "cpu",
    "gpu",
    "collect",
    "notify",
)  # the Celery queues, one Deployment/ScaledObject each


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="PAGEFLEET_", env_nested_delimiter="__", extra="ignore"
    )

    broker: BrokerSettings = Field(default_factory=BrokerSettings, description="the Redis broker")
    storage: StorageSettings = Field(
        default_factory=StorageSettings, description="object storage and the source cache"
    )
    ocr: OcrSettings = Field(
        default_factory=OcrSettings, description="which engines read a page, and how"
    )
    gpu: GpuSettings = Field(
        default_factory=GpuSettings, description="the GPU fleet and its VLM engines"
    )
    events: EventSettings = Field(
        default_factory=EventSettings, description="the bucket-event receiver"
    )
    studio: StudioSettings = Field(default_factory=StudioSettings, description="the review studio")
    limits: LimitsSettings = Field(
        default_factory=LimitsSettings,
        description="time limits, deadlines, retries, the PDF sandbox",
    )
    observability: ObservabilitySettings = Field(
        default_factory=ObservabilitySettings, description="logs, container probes, error reporting"
    )
    advanced: AdvancedSettings = Field(
        default_factory=AdvancedSettings,
        description="tuning levers a site may need; the defaults suit a fleet",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, TreeEnvSource(settings_cls), dotenv_settings, file_secret_settings


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
