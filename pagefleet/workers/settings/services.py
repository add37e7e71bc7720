"""The job options, and the groups of the two services a user runs beside the workers: the
bucket-event receiver (`Settings().events`, `pagefleet events`) and the review studio
(`Settings().studio`, `pagefleet review`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from pagefleet.workers.store.uri import is_s3, is_storage_url, s3_prefix


class Options(BaseModel):
    """Per-job options (what `pagefleet run/submit` accept). Part of the job id."""

    model_config = ConfigDict(extra="forbid")

    ocr: Literal["auto", "off", "force"] = Field(
        "auto", description="OCR pages that fail the gate, never, or always"
    )
    max_pages: int = Field(5000, ge=1, le=100_000, description="reject documents with more pages")
    max_bytes: int = Field(
        200 * 1024 * 1024, ge=1, le=4 * 1024**3, description="reject larger inputs"
    )
    dpi: int = Field(300, ge=72, le=600, description="render resolution for OCR")
    structure: bool = Field(
        True, description="headings, lists, tables and chunks from the page layout"
    )
    structured_recovery: Literal["off", "pymupdf4llm", "wse"] = Field(
        "off",
        description="a layout-aware extractor for tables the text layer could not give; "
        "wse: pymupdf4llm on the Word-Shape-Encoded page",
    )
    chunk_chars: int = Field(
        1500, ge=200, le=20_000, description="largest chunk in chunks.jsonl (characters)"
    )


class EventSettings(BaseModel):
    """The bucket-event receiver (`pagefleet events`); command-line values override these."""

    model_config = ConfigDict(extra="forbid")

    host: str = Field("127.0.0.1", description="address to bind; 0.0.0.0 inside a container")
    port: int = Field(8080, ge=0, le=65535, description="0 picks a free port")
    token: SecretStr | None = Field(None, description="the bearer token MinIO/clients must send")
    output: str | None = Field(
        None, description="artifact storage: s3://bucket/prefix (or file:///dir)"
    )
    prefix_template: str = Field(
        "artifacts/{sha256}", description="artifact prefix inside the output"
    )
    prefix_filters: list[str] = Field(
        default_factory=list, description="object key must start with one"
    )
    suffix_filters: list[str] = Field(
        default_factory=list, description="object key must end with one"
    )
    buckets: list[str] = Field(
        default_factory=list, description="only these source buckets (empty: any)"
    )
    callback_url: str | None = Field(None, description="HTTP callback for completion notices")
    options: Options = Field(
        default_factory=Options, description="job options for the documents it enqueues"
    )
    dedup_ttl_s: int = Field(
        7 * 86400, ge=60, description="how long an enqueued upload is remembered"
    )
    claim_ttl_s: int = Field(
        120, ge=5, le=3600, description="how long an in-flight enqueue holds its claim"
    )
    max_body_bytes: int = Field(
        1024 * 1024, ge=1024, le=64 * 1024 * 1024, description="larger event bodies get 413"
    )
    head_objects: bool = Field(
        True,
        description="HEAD every object before answering: a missing one ends in "
        "`source_missing` at once; one without an ETag gets the store's",
    )
    redis_bridge_list: str | None = Field(
        None, description="MinIO Redis target key (format=access)"
    )
    redis_bridge_url: str | None = Field(
        None, description="Redis holding that list (default: broker)"
    )
    inbox_list: str | None = Field(
        None,
        description="queue POSTed events on this list of the broker, drained "
        "in batches by a bridge in the receiver (2xx once queued)",
    )
    gather_s: float = Field(
        0.5,
        ge=0,
        le=30,
        description="how long a bridge holds a burst's events for a batch "
        "while split tasks wait on the broker; 0: never",
    )
    max_concurrency: int = Field(
        64, ge=1, le=4096, description="event POSTs in flight; more get 503 + Retry-After"
    )
    retry_after_s: int = Field(5, ge=1, le=3600, description="the Retry-After of a 503")

    @field_validator("output")
    @classmethod
    def _storage_url(cls, value: str | None) -> str | None:
        if value is not None and not is_storage_url(value):
            raise ValueError("output must be s3://bucket/prefix or file:///dir")
        if value is not None and is_s3(value) and not s3_prefix(value)[0]:
            raise ValueError("output needs a bucket: s3://bucket/prefix")
        return value.rstrip("/") if value else value


class StudioSettings(BaseModel):
    """The review studio (`pagefleet review`); command-line values override these."""

    model_config = ConfigDict(extra="forbid")

    host: str = Field(
        "127.0.0.1", description="address to bind; anything but loopback needs a token"
    )
    port: int = Field(4173, ge=0, le=65535, description="0 picks a free port")
    token: SecretStr | None = Field(None, description="required on every request when set")
    max_upload_bytes: int = Field(
        50 * 1024 * 1024, ge=1024, le=4 * 1024**3, description="upload size cap"
    )
    low_confidence: float = Field(
        75.0, ge=0, le=100, description="OCR confidence below this is risky"
    )
    image_dpi: int = Field(110, ge=36, le=300, description="resolution of the source page images")
    options: Options = Field(default_factory=Options, description="job options for uploaded PDFs")
    reviewer: str | None = Field(
        None, description="the name reviews are signed with (default: the login name)"
    )
