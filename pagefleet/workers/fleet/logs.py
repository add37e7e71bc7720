"""Logging for every pagefleet process: plain lines by default, one JSON object a line with
`PAGEFLEET_OBSERVABILITY__LOG_FORMAT=json` (what a log pipeline ingests), level from `PAGEFLEET_OBSERVABILITY__LOGLEVEL` (the CLI)
or `--loglevel` (workers).

    {"ts": "2026-11-30T18:00:00.123Z", "level": "INFO", "logger": "pagefleet.tasks.ocr", "message": "...",
     "job_id": "…", "page": 3, "task_id": "…", "process": 1234}

`job_id` and `page` come from `bound(job_id=…, page=…)` (a context the tasks and stages set) or
from a record's `extra`. Object keys and file names are not logged at INFO anywhere: they are
user data; INFO lines carry job ids, page numbers, counts and codes (DEBUG may name keys).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import time
from collections.abc import Iterator
from typing import Any

_CONTEXT: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar(
    "pagefleet_log_context", default={}
)
FIELDS = ("job_id", "page", "task_id", "queue")


@contextlib.contextmanager
def bound(**fields: Any) -> Iterator[None]:
    """Within the block every log record carries these fields (job_id, page, task_id, queue)."""
    token = _CONTEXT.set({**_CONTEXT.get(), **{k: v for k, v in fields.items() if v is not None}})
    try:
        yield
    finally:
        _CONTEXT.reset(token)


def push(**fields: Any) -> contextvars.Token[dict[str, Any]]:
    """`bound` for code that cannot use a with-block (Celery's task_prerun/task_postrun signals)."""
    return _CONTEXT.set({**_CONTEXT.get(), **{k: v for k, v in fields.items() if v is not None}})


def pop(token: contextvars.Token[dict[str, Any]]) -> None:
    _CONTEXT.reset(token)


class ContextFilter(logging.Filter):
    """Copies the bound fields onto each record (an explicit `extra` wins)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in _CONTEXT.get().items():
            if not hasattr(record, key):
                setattr(record, key, value)
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        ts = (
            time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z"
        )
        entry: dict[str, Any] = {
            "ts": ts,
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "process": record.process,
        }
        for key in FIELDS:
            value = getattr(record, key, None)
            if value is not None:
                entry[key] = value
        if record.exc_info and record.exc_info[0] is not None:
            entry["error"] = record.exc_info[
                0
            ].__name__  # the type only: messages may quote document text
        return json.dumps(entry, ensure_ascii=False, default=str)


PLAIN = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure(level: str | int = "WARNING", fmt: str = "plain", stream: Any = None) -> None:
    """Replace the root logger's handlers with one (stderr, or `stream`) in the chosen format."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(PLAIN))
    handler.addFilter(ContextFilter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)
