"""One error hierarchy for pagefleet. Each class carries a stable `code` and whether it is retryable.

    PagefleetError                      code           retryable  where it ends
    ├── InputError                      (fatal for one document: error.json, exit 1)
    │   ├── EmptyInputError             empty_input
    │   ├── InvalidPdfError             invalid_pdf
    │   ├── EncryptedPdfError           encrypted_pdf
    │   ├── PdfTooLargeError            pdf_too_large
    │   ├── TooManyPagesError           too_many_pages
    │   ├── ZeroPagesError              zero_pages
    │   ├── UnsupportedTypeError        unsupported_type
    │   ├── InvalidOptionsError         invalid_options
    │   ├── AbortedError                aborted
    │   ├── SourceChangedError          source_changed (the object was overwritten after its event)
    │   └── SourceMissingError          source_missing (the object is gone: deleted, or never written)
    ├── EngineError                     (never fatal: becomes an attempt on a page record)
    │   ├── EngineUnavailable           engine_unavailable
    │   ├── EngineTimeout               engine_timeout   yes
    │   └── EngineCrashed               engine_crashed
    ├── EventParseError                 invalid_event    (pagefleet.workers.intake.events: a bucket-event body we cannot read)
    ├── EventConfigError                invalid_config   (pagefleet.workers.intake.events: receiver misconfigured)
    ├── SandboxError                    sandbox_failed   (a child parsing an untrusted PDF died)
    ├── StorageError                    storage_error    yes
    ├── BrokerUnavailable               broker_unavailable yes
    │   └── BrokerFull                  broker_full      yes (Redis at maxmemory: producers refuse, workers wait)
    └── SetupError                      missing_binary   (a tool is not installed: name it, say how)

`error_record` is the one boundary that turns any of them into the `error.json` payload; the CLI
maps them to exit codes. Third-party exceptions are translated where they enter (`raise X from e`).
"""

from __future__ import annotations

INPUT_ERROR_CODES = (
    "empty_input",
    "invalid_pdf",
    "encrypted_pdf",
    "pdf_too_large",
    "too_many_pages",
    "zero_pages",
    "invalid_options",
    "unsupported_type",
    "aborted",
    "source_changed",
    "source_missing",
)


class PagefleetError(Exception):
    code = "internal_error"
    retryable = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_record(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


class InputError(PagefleetError):
    code = "invalid_pdf"


class EmptyInputError(InputError):
    code = "empty_input"


class InvalidPdfError(InputError):
    code = "invalid_pdf"


class EncryptedPdfError(InputError):
    code = "encrypted_pdf"


class PdfTooLargeError(InputError):
    code = "pdf_too_large"


class TooManyPagesError(InputError):
    code = "too_many_pages"


class ZeroPagesError(InputError):
    code = "zero_pages"


class UnsupportedTypeError(InputError):
    code = "unsupported_type"


class InvalidOptionsError(InputError):
    code = "invalid_options"


class AbortedError(InputError):
    code = "aborted"


class SourceChangedError(InputError):
    """The bucket event named an ETag the object no longer has (an unversioned bucket, overwritten
    since): the bytes this job stands for are gone; the newer upload has its own event and job."""

    code = "source_changed"


class SourceMissingError(InputError):
    """The source object does not exist (deleted after its event, never written, or its bucket
    is gone): no retry brings it back, so the document ends here with this error."""

    code = "source_missing"


class EngineError(PagefleetError):
    code = "engine_error"


class EngineUnavailable(EngineError):
    code = "engine_unavailable"


class EngineTimeout(EngineError):
    code = "engine_timeout"
    retryable = True


class EngineCrashed(EngineError):
    code = "engine_crashed"


class TaskDeadline(PagefleetError):
    """A task on a thread passed its soft time limit, which Celery cannot deliver there
    (`pagefleet.workers.fleet.deadline`): its pages end as a prefork task's do at the limit (`time_limit`)."""

    code = "time_limit"


class SandboxError(PagefleetError):
    code = "sandbox_failed"


class StorageError(PagefleetError):
    code = "storage_error"
    retryable = True


class BrokerUnavailable(PagefleetError):
    code = "broker_unavailable"
    retryable = True


class BrokerFull(BrokerUnavailable):
    """Redis refuses writes at its `maxmemory` (noeviction), or is so close to it that a job accepted
    now might not run: a producer refuses the job (503 + Retry-After, the CLI's BROKER_FULL)."""

    code = "broker_full"


class SetupError(PagefleetError):
    code = "missing_binary"


def error_record(exc: BaseException) -> dict[str, str]:
    """The `error.json` payload for any exception; unknown ones never leak a traceback."""
    if isinstance(exc, PagefleetError):
        return exc.to_record()
    return {"code": "internal_error", "message": f"{type(exc).__name__}: {exc}"[:500]}
