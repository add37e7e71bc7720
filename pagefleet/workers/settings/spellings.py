"""The environment as the settings tree reads it: `PAGEFLEET_` and the tree's path, nested names
joined by `__` (`PAGEFLEET_BROKER__URL`, `PAGEFLEET_OCR__CHAINS__HE`).

The spellings of pagefleet 0.3 (`PAGEFLEET_BROKER_URL`, `PAGEFLEET_EVENTS_TOKEN`,
`PAGEFLEET_RELIABILITY__MAX_REDISPATCH`, …) are still read until 0.5: each is rewritten to its new
name, where that name is not set itself, and warns once (a `DeprecationWarning` and a log line
naming the new spelling). Sentry's own `SENTRY_DSN` and `SENTRY_ENVIRONMENT` are read without a
warning. A variable of a setting that became a constant warns that it is no longer read.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Iterator, Mapping

from pydantic import BaseModel
from pydantic_settings import EnvSettingsSource
from pydantic_settings.sources.utils import parse_env_vars

log = logging.getLogger("pagefleet.workers.settings")

_P = "PAGEFLEET_"
_GROUPS = {
    "BROKER": ("RESULT_BACKEND",),
    "STORAGE": (
        "S3_ENDPOINT",
        "S3_ACCESS_KEY",
        "S3_SECRET_KEY",
        "S3_SECURE",
        "S3_REGION",
        "S3_TIMEOUT_S",
        "S3_LOOKUP_TIMEOUT_S",
        "CACHE_DIR",
    ),
    "OCR": ("TESSERACT_CMD", "TESSERACT_TIMEOUT_S", "TESSERACT_INPROCESS", "OMP_THREAD_LIMIT"),
    "LIMITS": (
        "SANDBOX_TIMEOUT_S",
        "SANDBOX_MEMORY_MB",
        "TASK_SOFT_TIME_LIMIT",
        "TASK_TIME_LIMIT",
        "MAX_PAGE_ATTEMPTS",
        "JOB_DEADLINE_S",
    ),
    "ADVANCED": (
        "SANDBOX_FORK_SERVER",
        "SANDBOX_REUSE",
        "SANDBOX_REUSE_DOCUMENT",
        "SANDBOX_SCRATCH_DIR",
        "NATIVE_WALK",
        "SPLIT_RANGE_PAGES",
        "SPLIT_MAX_RANGES",
        "SPLIT_RANGE_QUEUE",
        "STREAM_COLLECT",
        "SPLIT_BATCH_DOCUMENTS",
        "SPLIT_BATCH_MAX_BYTES",
    ),
    "OBSERVABILITY": ("LOGLEVEL", "LOG_FORMAT"),
}
# the reliability section's fields, now in the broker and limits groups
_RELIABILITY = {
    "REDIS_SOCKET_TIMEOUT_S": "BROKER__REDIS_SOCKET_TIMEOUT_S",
    "REDIS_CONNECT_TIMEOUT_S": "BROKER__REDIS_CONNECT_TIMEOUT_S",
    "REDIS_HEALTH_CHECK_S": "BROKER__REDIS_HEALTH_CHECK_S",
    "VISIBILITY_MARGIN_S": "BROKER__VISIBILITY_MARGIN_S",
    "UNACKED_RESTORE_INTERVAL_S": "BROKER__UNACKED_RESTORE_INTERVAL_S",
    "WORKER_HEARTBEAT_S": "BROKER__WORKER_HEARTBEAT_S",
    "WORKER_DEAD_AFTER_S": "BROKER__WORKER_DEAD_AFTER_S",
    "BROKER_FULL_RATIO": "BROKER__FULL_RATIO",
    "BROKER_FULL_WAIT_S": "BROKER__FULL_WAIT_S",
    "JOB_RECORD_TTL_S": "BROKER__JOB_RECORD_TTL_S",
    "JOBS_INDEX_MAX": "BROKER__JOBS_INDEX_MAX",
    "DEADLETTER_MAX": "BROKER__DEADLETTER_MAX",
    "JOB_DEADLINE_MINUTES": "LIMITS__JOB_DEADLINE_MINUTES",
    "WATCHDOG_INTERVAL_S": "LIMITS__WATCHDOG_INTERVAL_S",
    "MAX_REDISPATCH": "LIMITS__MAX_REDISPATCH",
    "CALLBACK_TIMEOUT_S": "LIMITS__CALLBACK_TIMEOUT_S",
    "CALLBACK_MAX_RETRIES": "LIMITS__CALLBACK_MAX_RETRIES",
    "CALLBACK_BACKOFF_MAX_S": "LIMITS__CALLBACK_BACKOFF_MAX_S",
}
EXACT: dict[str, str] = {
    **{_P + name: f"{_P}{group}__{name}" for group, names in _GROUPS.items() for name in names},
    **{f"{_P}RELIABILITY__{old}": _P + new for old, new in _RELIABILITY.items()},
    _P + "BROKER_URL": _P + "BROKER__URL",
    _P + "GPU": _P + "GPU__ENABLED",
    _P + "GPU_POOL": _P + "GPU__POOL",
    _P + "OCR_COMMANDS": _P + "OCR__COMMANDS",
    _P + "MODELS_FROM": _P + "OCR__MODELS__FROM_URL",
    _P + "CHAINS": _P + "OCR__CHAINS",
    _P + "ROUTER": _P + "OCR__ROUTER",
    _P + "TESSERACT_READ": _P + "OCR__TESSERACT_READ",
    _P + "VLM": _P + "GPU__VLM",
}
# old prefix → new prefix, for the sections whose fields kept their names; a prefix ending in one
# `_` matches only where a letter follows it (`PAGEFLEET_EVENTS__…` is the new spelling)
PREFIXES: tuple[tuple[str, str], ...] = (
    (_P + "EVENTS_", _P + "EVENTS__"),
    (_P + "STUDIO_", _P + "STUDIO__"),
    (_P + "HEARTBEAT__", _P + "OBSERVABILITY__HEARTBEAT__"),
    (_P + "HEARTBEAT_", _P + "OBSERVABILITY__HEARTBEAT__"),
    (_P + "SENTRY__", _P + "OBSERVABILITY__SENTRY__"),
    (_P + "SENTRY_", _P + "OBSERVABILITY__SENTRY__"),
    (_P + "MODELS__", _P + "OCR__MODELS__"),
    (_P + "MODELS_", _P + "OCR__MODELS__"),
    (_P + "CHAINS__", _P + "OCR__CHAINS__"),
    (_P + "ROUTER__", _P + "OCR__ROUTER__"),
    (_P + "TESSERACT_READ__", _P + "OCR__TESSERACT_READ__"),
    (_P + "VLM__", _P + "GPU__VLM__"),
)
FOREIGN = {
    "SENTRY_DSN": _P + "OBSERVABILITY__SENTRY__DSN",
    "SENTRY_ENVIRONMENT": _P + "OBSERVABILITY__SENTRY__ENVIRONMENT",
}
# settings that became constants beside the code that uses them
RETIRED = frozenset(
    _P + name
    for name in (
        "SPLIT_BATCH_PAGES",
        "SPLIT_BATCH_SPREAD",
        "SPLIT_BATCH_MAX_DOCUMENTS",
        "SPLIT_RANGE_MIN_PAGES",
        "SANDBOX_KEEP_MB",
        "SANDBOX_SHARE_MAX",
        "SANDBOX_PROBE_BATCH",
        "SANDBOX_SCRATCH_SHM_MB",
    )
)

_warned: set[str] = set()


def new_name(old: str) -> str | None:
    """The current spelling of an old variable name; None where `old` is no old spelling."""
    if old in EXACT:
        return EXACT[old]
    for prefix, new in PREFIXES:
        if old.startswith(prefix) and len(old) > len(prefix) and old[len(prefix)] != "_":
            return new + old[len(prefix) :]
    return None


def _warn_once(name: str, message: str) -> None:
    if name in _warned:
        return
    _warned.add(name)
    warnings.warn(message, DeprecationWarning, stacklevel=2)
    log.warning("%s", message)


def env_names(model: type[BaseModel], prefix: str = _P) -> Iterator[str]:
    """Every variable that sets a field of `model` or of a section nested in it."""
    for name, field in model.model_fields.items():
        env = prefix + name.upper()
        yield env
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            yield from env_names(field.annotation, env + "__")


def rewritten(environ: Mapping[str, str], known: frozenset[str]) -> dict[str, str]:
    """The environment with every old spelling of a `known` variable under its new name (upper
    case); a new name that is set itself wins over its old spelling."""
    out = {name.upper(): value for name, value in environ.items()}
    for name in sorted(out):
        if name in FOREIGN:
            out.setdefault(FOREIGN[name], out[name])
        elif name in RETIRED:
            _warn_once(name, f"{name} is no longer read: pagefleet keeps that value as a constant")
        elif (new := new_name(name)) is not None and new in known:
            _warn_once(
                name, f"{name} is deprecated and will stop working in pagefleet 0.5: set {new}"
            )
            out.setdefault(new, out.pop(name))
    return out


class TreeEnvSource(EnvSettingsSource):
    """The environment source of `Settings`, reading old spellings as their new names."""

    def _load_env_vars(self) -> Mapping[str, str | None]:
        known = frozenset(env_names(self.settings_cls))
        return parse_env_vars(
            rewritten(os.environ, known), False, self.env_ignore_empty, self.env_parse_none_str
        )


# variables read outside the tree, each with its reason (docs/reference/configuration.md shows them)
PROCESS_SWITCHES = {
    _P
    + "COMPILED": "`0` runs the gate's sources instead of its compiled build; read when the `pagefleet.workers` "
    "package is imported, before any module the build replaces (and the settings) can be",
}
