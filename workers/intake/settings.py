"""Configuration of the bucket-event receiver (`pagefleet events`), env prefix `PAGEFLEET_EVENTS_`.

Kept apart from `workers.settings.Settings` so the receiver's knobs do not leak into workers;
the broker, S3 endpoint and keys still come from `workers.settings` (`PAGEFLEET_BROKER_URL`, …).

    PAGEFLEET_EVENTS_TOKEN            bearer token MinIO sends (MINIO_NOTIFY_WEBHOOK_AUTH_TOKEN_*)
    PAGEFLEET_EVENTS_OUTPUT           s3://bucket/prefix for artifacts (required)
    PAGEFLEET_EVENTS_SUFFIX_FILTERS   JSON list, e.g. '[".pdf"]' (case-insensitive)
    PAGEFLEET_EVENTS_PREFIX_FILTERS   JSON list, e.g. '["incoming/"]'
    PAGEFLEET_EVENTS_CALLBACK_URL     POSTed a completion notice per job (optional)
    PAGEFLEET_EVENTS_OPTIONS__OCR     auto | off | force (part of the job id)
    PAGEFLEET_EVENTS_REDIS_BRIDGE_LIST  also drain MinIO's Redis target (`access` format) list
"""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from workers.settings import Options


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
    options: Options = Field(default_factory=Options)
    dedup_ttl_s: int = Field(7 * 86400, ge=60, description="how long an enqueued upload is remembered")
    claim_ttl_s: int = Field(120, ge=5, le=3600, description="how long an in-flight enqueue holds its claim")
    max_body_bytes: int = Field(1024 * 1024, ge=1024, le=64 * 1024 * 1024)
    stat_missing_etag: bool = Field(True, description="HEAD the object when an event carries no ETag")
    redis_bridge_list: str | None = Field(None, description="MinIO Redis target key (format=access)")
    redis_bridge_url: str | None = Field(None, description="Redis holding that list (default: broker)")

    @field_validator("output")
    @classmethod
    def _storage_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("s3://", "file://")):
            raise ValueError("output must be s3://bucket/prefix or file:///dir")
        if value is not None and value.startswith("s3://") and not value[len("s3://"):].split("/", 1)[0]:
            raise ValueError("output needs a bucket: s3://bucket/prefix")
        return value.rstrip("/") if value else value
