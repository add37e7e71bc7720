"""Error reporting: Sentry for workers and the event receiver, with document content scrubbed.

`init_sentry()` does nothing unless a DSN is configured (`PAGEFLEET_OBSERVABILITY__SENTRY__DSN` or `SENTRY_DSN`).
Workers call it from `celeryd_init` (the main process, before the pool forks; children inherit
the client and sentry-sdk restarts its sender thread per process) and again, idempotently, from
`worker_process_init`. The receiver calls it at start-up.

What never leaves the process (`scrub_event`, used as `before_send` and
`before_send_transaction`; `scrub_breadcrumb` as `before_breadcrumb`):
- request bodies, cookies, headers and query strings (only the method is kept);
- local variables of stack frames (`include_local_variables=False`, and `vars` removed anyway);
- Celery task args/kwargs (they hold job specs: file names and object keys), `sys.argv`;
- any mapping value under a key such as text/raw_text/markdown/filename/source/key/edits, by
  sentry-sdk's own `EventScrubber` (its default deny lists plus ours, recursive, and also over
  `contexts` and `tags`);
- in every remaining string: quoted or bare file names with a document/image extension,
  `s3://` and `file://` URIs, and runs of letters of any script but ASCII Latin (Hebrew and Arabic
  by the ranges of `pagefleet.routing.scripts`) — document text; our own messages are in English;
- exception messages, where document text of any script (Latin included) ends up: quoted or
  repr'd values are filtered, only the first line is kept, and only the part before the first
  `": "` (the message's own English prefix) survives, unless what follows is a bare error code or
  number; log records keep their template only (parameters and the formatted message dropped).
Exception types, stack frames (code, not data) and our error codes survive, so events still group.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Any

from pagefleet.routing.scripts import ARABIC_RANGES, HEBREW_RANGES
from pagefleet.workers.settings import PIPELINE_VERSION, SentrySettings, get_settings  # noqa: F401 - SentrySettings re-exported

log = logging.getLogger(__name__)

FILTERED = "[Filtered]"
SENSITIVE_KEYS = frozenset(
    {
        "text",
        "raw_text",
        "markdown",
        "filename",
        "file_name",
        "source",
        "key",
        "keys",
        "object_key",
        "document",
        "page_text",
        "text_layer",
        "review_preview",
        "edits",
        "body",
        "data",
        "args",
        "kwargs",
        "path",
        "paths",
        "uri",
        "sys.argv",
        "argv",
        "spec",
        "payload",
        "artifact_prefix",
        "authorization",
        "cookie",
        "cookies",
        "token",
        "password",
        "secret",
    }
)
_EXT = r"(?:pdf|png|jpe?g|tiff?|gif|bmp|webp|docx?|txt|md|json)"
_QUOTED_FILE = re.compile(r"""(['"])[^'"\n]{0,300}?\.""" + _EXT + r"""\1""", re.IGNORECASE)
_BARE_FILE = re.compile(r"""[^\s'"()<>\[\]{},;]+\.""" + _EXT + r"""\b""", re.IGNORECASE)
_URI = re.compile(r"""\b(s3|file)://[^\s'"]*""", re.IGNORECASE)
_RTL_LETTER = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in (*HEBREW_RANGES, *ARABIC_RANGES))
# a letter of any script but ASCII Latin: the RTL ranges (marks included) or a non-ASCII word char
_LETTER = f"(?:[{_RTL_LETTER}]|[^\\W\\d_a-zA-Z])"
_FOREIGN_RUN = re.compile(f"{_LETTER}(?:(?:{_LETTER}|[\\s\\d.,:;!?'\"()\\-–])*{_LETTER})?")
_QUOTED = re.compile(r"""(['"])(?:(?!\1).){1,2000}?\1""", re.DOTALL)
_SAFE_TAIL = re.compile(r"^[\w.\-]{0,64}$", re.ASCII)
MAX_STRING = 500


def scrub_text(value: str) -> str:
    """Remove file names, object URIs and RTL document text from a free-form string."""
    text = _URI.sub(lambda m: f"{m.group(1)}://{FILTERED}", value)
    text = _QUOTED_FILE.sub(lambda m: f"{m.group(1)}[file]{m.group(1)}", text)
    text = _BARE_FILE.sub("[file]", text)
    text = _FOREIGN_RUN.sub("[text]", text)
    return text if len(text) <= MAX_STRING else text[:MAX_STRING] + "…"


def scrub_message(value: str) -> str:
    """An exception message: document text of any script may be anywhere after our own prefix.
    `cannot repair 'x' (a.pdf): The quick brown fox` → `cannot repair '[text]' ([file]): [text]`."""
    text = _URI.sub(lambda m: f"{m.group(1)}://{FILTERED}", value)
    text = _QUOTED.sub(lambda m: f"{m.group(1)}[text]{m.group(1)}", text)
    first, _, rest = text.partition("\n")
    head, sep, tail = first.partition(": ")
    if sep and not _SAFE_TAIL.match(tail.strip()):
        first = f"{head}: [text]"
    return scrub_text(first + (" […]" if rest.strip() else ""))


@functools.lru_cache(maxsize=1)
def key_scrubber() -> Any:
    """sentry-sdk's `EventScrubber` with its default deny lists plus ours, recursive, extended to
    `contexts` and `tags` (which it leaves alone). It also runs inside `before_send`, i.e. after the
    SDK serialized the event, so a denied value becomes the plain string "[Filtered]"."""
    from sentry_sdk.scrubber import DEFAULT_DENYLIST, EventScrubber

    class KeyScrubber(EventScrubber):
        def scrub_dict(self, d: object) -> None:
            if not isinstance(d, dict):
                return
            for k, v in d.items():
                if isinstance(k, str) and k.lower() in self.denylist:
                    d[k] = FILTERED
                elif self.recursive:
                    self.scrub_dict(v)
                    self.scrub_list(v)

        def scrub_event(self, event: Any) -> None:
            super().scrub_event(event)
            for name in ("contexts", "tags"):
                self.scrub_dict(event.get(name))

    return KeyScrubber(denylist=[*DEFAULT_DENYLIST, *sorted(SENSITIVE_KEYS)], recursive=True)


def scrub_value(value: Any, depth: int = 0) -> Any:
    """Recursively: every string → `scrub_text` (keys are the `key_scrubber`'s business)."""
    if depth > 12:
        return FILTERED
    if isinstance(value, dict):
        return {k: scrub_value(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub_value(v, depth + 1) for v in value]
    if isinstance(value, str):
        return scrub_text(value)
    return value


def _scrub_frames(container: dict[str, Any] | None) -> None:
    for item in (container or {}).get("values") or []:
        if isinstance(item.get("value"), str):
            item["value"] = scrub_message(item["value"])
        for frame in (item.get("stacktrace") or {}).get("frames") or []:
            frame.pop("vars", None)


def _scrub_logentry(event: dict[str, Any]) -> None:
    entry = event.get("logentry")
    if isinstance(entry, dict):
        if entry.pop("params", None):
            entry.pop("formatted", None)  # the template stays; the values that filled it go
        for name in ("message", "formatted"):
            if isinstance(entry.get(name), str):
                entry[name] = scrub_text(entry[name])
    if isinstance(event.get("message"), str):
        event["message"] = scrub_text(event["message"])


def scrub_breadcrumb(crumb: dict[str, Any], hint: Any = None) -> dict[str, Any] | None:
    if isinstance(crumb.get("message"), str):
        crumb["message"] = scrub_text(crumb["message"])
    if "data" in crumb:
        key_scrubber().scrub_dict(crumb["data"])
        crumb["data"] = scrub_value(crumb["data"])
    return crumb


def scrub_event(event: dict[str, Any], hint: Any = None) -> dict[str, Any] | None:
    """`before_send`: see the module docstring. Never raises (a scrubber that fails must drop)."""
    try:
        key_scrubber().scrub_event(event)
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
            extra["celery-job"] = {
                "task_name": job.get("task_name"),
                "args": FILTERED,
                "kwargs": FILTERED,
            }
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

    if (
        "data_collection" in DEFAULT_OPTIONS
    ):  # the SDK then ignores `event_scrubber`: `scrub_event` runs it
        return {
            "data_collection": {
                "user_info": False,
                "http_bodies": [],
                "queues": False,
                "database_query_data": False,
                "stack_frame_variables": False,
            },
            "include_local_variables": False,
        }
    return {
        "send_default_pii": False,
        "include_local_variables": False,
        "event_scrubber": key_scrubber(),
    }


def init_sentry(component: str = "worker", dsn: str | None = None) -> bool:
    """Initialise sentry-sdk once per process. False (and nothing done) without a DSN."""
    settings = get_settings().observability.sentry
    dsn = dsn or settings.dsn
    if not dsn:
        return False
    try:
        import sentry_sdk
        from sentry_sdk.integrations.argv import ArgvIntegration
        from sentry_sdk.integrations.celery import CeleryIntegration
        from sentry_sdk.integrations.logging import LoggingIntegration
    except ImportError:
        log.warning(
            "a Sentry DSN is set but sentry-sdk is not installed: pip install 'pagefleet[ops]'"
        )
        return False
    if sentry_sdk.get_client().is_active():
        return True
    sentry_sdk.init(
        dsn=dsn,
        release=f"pagefleet@{PIPELINE_VERSION}",
        environment=settings.environment,
        integrations=[
            CeleryIntegration(monitor_beat_tasks=False),
            LoggingIntegration(level=logging.INFO, event_level=logging.ERROR),
        ],
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
