"""The document model (`document.json`, schema_version 2: v1 + `blocks`) and the messages between stages.

A page is a typed record that each stage adds to: the split task fills it from the text layer
(rung 1) or leaves it pending; the OCR stage completes pending pages; the collector only assembles.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class Rung(StrEnum):
    """Where a reading of a page came from (an attempt's `rung`)."""

    TEXT_LAYER = "text_layer"
    FALLBACK_TEXT = "fallback_text"
    OCR = "ocr"
    GPU_OCR = "gpu_ocr"


Route = Literal[
    "text_layer",
    "text_layer_repaired",
    "fallback_text",
    "ocr",
    "no_text",
    "review_required",
    "failed",
    "reviewed",
    "rejected",
]  # reviewed, rejected: document.reviewed.json only (pagefleet.workers.review.reviewed)
RouterSource = Literal["text_layer", "siglip2", "osd", "default"]


class RouterInfo(BaseModel):
    source: RouterSource
    script: str
    margin: float | None = None
    detail: str | None = None


class Attempt(BaseModel):
    engine: str
    accepted: bool
    reasons: list[str] = []
    seconds: float = 0.0
    rung: Rung = Rung.OCR
    # why an engine was skipped or crashed (health, error message), or what it did beyond one reading
    detail: str | None = None


class Quality(BaseModel):
    ok: bool
    reasons: list[str] = []
    warnings: list[str] = []
    metrics: dict[str, float] = {}


class ReviewPreview(BaseModel):
    """The best rejected candidate. Lives in document.json only, never in Markdown or text.txt."""

    engine: str
    text: str
    markdown: str
    reasons: list[str] = []
    blocks: list[Block] = []


class EditMapInfo(BaseModel):
    target: Literal["text", "review_preview"] = "text"
    complete: bool = True
    gap: str | None = None


BlockType = Literal[
    "heading",
    "paragraph",
    "list_item",
    "table",
    "figure",
    "caption",
    "footnote",
    "header",
    "footer",
]


class TableData(BaseModel):
    rows: list[list[str]]  # cells in logical order: an RTL table's rightmost column first
    header_rows: int = 1
    markdown: str = ""  # GFM


class Block(BaseModel):
    """One block in reading order; `text == page.text[start:end]`, so it replays to raw_text."""

    type: BlockType
    text: str = ""
    bbox: list[float] | None = None
    direction: str = "ltr"
    start: int = 0
    end: int = 0
    level: int | None = None  # heading
    marker: str | None = None  # list_item, as written: "א.", "(ב)", "1.", "•"
    table: TableData | None = None


class PageRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    number: int
    script: str = "unknown"
    direction: str = "unknown"
    router: RouterInfo
    route: Route
    engine: str | None = None
    attempts: list[Attempt] = []
    text: str = ""
    markdown: str = ""
    raw_text: str = ""
    edits: list[dict[str, Any]] = []
    edit_map: EditMapInfo = EditMapInfo()
    quality: Quality
    needs_review: bool = False
    review_preview: ReviewPreview | None = None
    ocr_confidence: float | None = None
    layer: dict[str, Any] = {}  # what the text layer looked like: chars, images, coverage, kind
    seconds: float = 0.0
    blocks: list[Block] = []  # schema 2: structure in reading order (accepted pages)


class SourceInfo(BaseModel):
    filename: str
    bytes: int
    sha256: str
    uri: str | None = None


class DocumentRecord(BaseModel):
    schema_version: Literal[1, 2] = 2
    pipeline_version: str
    job_id: str
    source: SourceInfo
    status: Literal["accepted", "needs_review", "failed", "accepted_after_review"]
    page_count: int
    options: dict[str, Any] = {}
    pages: list[PageRecord]


class JobSpec(BaseModel):
    """What a producer enqueues: ids and keys only, never bytes."""

    model_config = ConfigDict(extra="forbid")

    job_id: str
    source: str  # local path (embedded mode) or s3://bucket/key
    filename: str
    sha256: str | None = None  # known up front for local files; S3 sources are hashed by split
    bytes: int | None = None
    storage: str  # file:///dir or s3://bucket/prefix
    artifact_prefix: str  # inside storage; `{sha256}` is filled in once the bytes are hashed
    options: dict[str, Any] = {}
    etag: str | None = None
    version_id: str | None = (
        None  # S3 versionId from the bucket event: exactly that version is read
    )
    callback_url: str | None = None
    force: bool = False  # reprocess even if this job id already completed


class PendingPage(BaseModel):
    """A page that failed rung 1 (or has no text layer) and must climb: the OCR stage's input."""

    number: int
    text_layer: str = ""
    reasons: list[str] = []
    warnings: list[str] = []
    layer: dict[str, Any] = {}
    hint_script: str | None = None  # decided by the text-layer classifier on a trustworthy layer
    hint_margin: float | None = None
    queue: Literal["cpu", "gpu"] = "cpu"
