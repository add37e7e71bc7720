"""Error reporting: Sentry for workers and the event receiver, with document content scrubbed.

`init_sentry()` does nothing unless a DSN is configured (`PAGEFLEET_SENTRY_DSN` or `SENTRY_DSN`).
Workers call it from `celeryd_init` (the main process, before the pool forks; children inherit
the client and sentry-sdk restarts its sender thread per process) and again, idempotently, from
`worker_process_init`. The receiver calls it at start-up.

What never leaves the process (`scrub_event`, used as `before_send` and
`before_send_transaction`; `scrub_breadcrumb` as `before_breadcrumb`):
- request bodies, cookies, headers and query strings (only the method is kept);
- local variables of stack frames (`include_local_variables=False`, and `vars` removed anyway);
- Celery task args/kwargs (they hold job specs: file names and object keys), `sys.argv`;
- any mapping value under a key such as text/raw_text/markdown/filename/source/key/edits;
- in every remaining string: quoted or bare file names with a document/image extension,
  `s3://` and `file://` URIs, and runs of Hebrew/Arabic script (document text — our own messages
  are in English); log-record parameters are dropped and the formatted message scrubbed.
Exception types, stack frames (code, not data) and our error codes survive, so events still group.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from workers.settings import PIPELINE_VERSION

log = logging.getLogger(__name__)

FILTERED = "[Filtered]"
SENSITIVE_KEYS = frozenset({
    "text", "raw_text", "markdown", "filename", "file_name", "source", "key", "keys", "object_key",
    "document", "page_text", "text_layer", "review_preview", "edits", "body", "data", "args", "kwargs",
    "path", "paths", "uri", "sys.argv", "argv", "spec", "payload", "artifact_prefix", "authorization",
    "cookie", "cookies", "token", "password", "secret",
})
_EXT = r"(?:pdf|png|jpe?g|tiff?|gif|bmp|webp|docx?|txt|md|json)"
_QUOTED_FILE = re.compile(r"""(['"])[^'"\n]{0,300}?\.""" + _EXT + r"""\1""", re.IGNORECASE)
_BARE_FILE = re.compile(r"""[^\s'"()<>\[\]{},;]+\.""" + _EXT + r"""\b""", re.IGNORECASE)
_URI = re.compile(r"""\b(s3|file)://[^\s'"]*""", re.IGNORECASE)
_RTL_LETTER = "\u0590-\u05ff\ufb1d-\ufb4f\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufeff"
_RTL_RUN = re.compile(f"[{_RTL_LETTER}](?:[{_RTL_LETTER}\\s\\d.,:;!?'\"()\\-–]*[{_RTL_LETTER}])?")
MAX_STRING = 500


class SentrySettings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    dsn: str | None = Field(None, validation_alias=AliasChoices("PAGEFLEET_SENTRY_DSN", "SENTRY_DSN"))
    environment: str | None = Field(None, validation_alias=AliasChoices("PAGEFLEET_SENTRY_ENVIRONMENT",
                                                                           "SENTRY_ENVIRONMENT"))
    traces_sample_rate: float = Field(0.0, ge=0.0, le=1.0,
                                      validation_alias=AliasChoices("PAGEFLEET_SENTRY_TRACES_SAMPLE_RATE"))


def scrub_text(value: str) -> str:
    """Remove file names, object URIs and RTL document text from a free-form string."""
    text = _URI.sub(lambda m: f"{m.group(1)}://{FILTERED}", value)
    text = _QUOTED_FILE.sub(lambda m: f"{m.group(1)}[file]{m.group(1)}", text)
    text = _BARE_FILE.sub("[file]", text)
    text = _RTL_RUN.sub("[text]", text)
    return text if len(text) <= MAX_STRING else text[:MAX_STRING] + "…"


def scrub_value(value: Any, depth: int = 0) -> Any:
    """Recursively: sensitive keys → "[Filtered]", strings → `scrub_text`."""
    if depth > 12:
        return FILTERED
    if isinstance(value, dict):
        return {k: FILTERED if str(k).lower() in SENSITIVE_KEYS else scrub_value(v, depth + 1)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub_value(v, depth + 1) for v in value]
    if isinstance(value, str):
        return scrub_text(value)
    return value


def _scrub_frames(container: dict[str, Any] | None) -> None:
    for item in (container or {}).get("values") or []:
        if isinstance(item.get("value"), str):
            item["value"] = scrub_text(item["value"])
        for frame in (item.get("stacktrace") or {}).get("frames") or []:
            frame.pop("vars", None)


def _scrub_logentry(event: dict[str, Any]) -> None:
    entry = event.get("logentry")
    if isinstance(entry, dict):
        entry.pop("params", None)
        for name in ("message", "formatted"):
            if isinstance(entry.get(name), str):
                entry[name] = scrub_text(entry[name])
    if isinstance(event.get("message"), str):
        event["message"] = scrub_text(event["message"])


def scrub_breadcrumb(crumb: dict[str, Any], hint: Any = None) -> dict[str, Any] | None:
    if isinstance(crumb.get("message"), str):
        crumb["message"] = scrub_text(crumb["message"])
    if "data" in crumb:
        crumb["data"] = scrub_value(crumb["data"])
    return crumb


def scrub_event(event: dict[str, Any], hint: Any = None) -> dict[str, Any] | None:
    """`before_send`: see the module docstring. Never raises (a scrubber that fails must drop)."""
    try:
        request = event.get("request")
        if isinstance(request, dict):
            event["request"] = {"method": request.get("method")}
        event.pop("user", None)
        _scrub_frames(event.get("exception"))
        _scrub_frames(event.get("threads"))
        _scrub_logentry(event)
        extra = event.get("extra") or {}
        job = extra.get("celery-job")
        if isinstance(job, dict):
            extra["celery-job"] = {"task_name": job.get("task_name"), "args": FILTERED, "kwargs": FILTERED}
        for name in ("extra", "contexts", "tags"):
            if isinstance(event.get(name), dict):
                event[name] = scrub_value(event[name])
        crumbs = event.get("breadcrumbs")
        values = crumbs.get("values") if isinstance(crumbs, dict) else crumbs
        for crumb in values or []:
            scrub_breadcrumb(crumb)
        for span in event.get("spans") or []:
            if isinstance(span.get("description"), str):
                span["description"] = scrub_text(span["description"])
            if "data" in span:
                span["data"] = scrub_value(span["data"])
        if isinstance(event.get("transaction"), str):
            event["transaction"] = scrub_text(event["transaction"])
        return event
    except Exception:  # noqa: BLE001 — dropping the event is the safe failure
        log.warning("sentry scrubber failed; event dropped", exc_info=True)
        return None


def _privacy_options(sentry_sdk: Any) -> dict[str, Any]:
    """No PII, no frame variables, no task arguments, no HTTP bodies: through `data_collection`
    where the SDK has it (it supersedes the deprecated `send_default_pii`), else the old flags."""
    from sentry_sdk.consts import DEFAULT_OPTIONS

    if "data_collection" in DEFAULT_OPTIONS:
        return {"data_collection": {"user_info": False, "http_bodies": [], "queues": False,
                                    "database_query_data": False, "stack_frame_variables": False},
                "include_local_variables": False}
    return {"send_default_pii": False, "include_local_variables": False}


def init_sentry(component: str = "worker", dsn: str | None = None) -> bool:
    """Initialise sentry-sdk once per process. False (and nothing done) without a DSN."""
    settings = SentrySettings()
    dsn = dsn or settings.dsn
    if not dsn:
        return False
    try:
        import sentry_sdk
        from sentry_sdk.integrations.argv import ArgvIntegration
        from sentry_sdk.integrations.celery import CeleryIntegration
        from sentry_sdk.integrations.logging import LoggingIntegration
    except ImportError:
        log.warning("a Sentry DSN is set but sentry-sdk is not installed: pip install 'pagefleet[ops]'")
        return False
    if sentry_sdk.get_client().is_active():
        return True
    sentry_sdk.init(
        dsn=dsn,
        release=f"pagefleet@{PIPELINE_VERSION}",
        environment=settings.environment,
        integrations=[CeleryIntegration(monitor_beat_tasks=False),
                      LoggingIntegration(level=logging.INFO, event_level=logging.ERROR)],
        disabled_integrations=[ArgvIntegration()],
        auto_enabling_integrations=False,
        **_privacy_options(sentry_sdk),
        max_request_body_size="never",
        traces_sample_rate=settings.traces_sample_rate,
        before_send=scrub_event,
        before_send_transaction=scrub_event,
        before_breadcrumb=scrub_breadcrumb,
    )
    sentry_sdk.set_tag("component", component)
    return True
