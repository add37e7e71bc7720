"""Exit statuses of `pagefleet`, one per class of outcome, so a script can tell a bad input from a
fleet that failed from a bug. docs/reference/exit-codes.md is generated from this table.

    0        OK                   every page of every document accepted
    2        REVIEW_NEEDED        artifacts written, some page needs review
    3 4 5    input errors         a document could not be processed (error.json says which)
    6        MISSING_DEPENDENCY   a program pagefleet needs is not installed
    10–14    fleet failures       a worker died, the broker was lost, the deadline passed, storage failed,
                                  the broker is full (Redis at maxmemory: retry later)
    1        INTERNAL_ERROR       a bug: an unexpected exception
    64       USAGE                a bad option or argument (never 2, which means "needs review")
    130 143  signals              interrupted (Ctrl-C), terminated (SIGTERM)

A batch exits with its most severe outcome (`most_severe`): a signal, then an internal error, a
fleet failure, a missing program, an input error, review needed, OK.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from enum import IntEnum

from pagefleet.workers.errors import INPUT_ERROR_CODES, PagefleetError


class ExitCode(IntEnum):
    OK = 0
    INTERNAL_ERROR = 1
    REVIEW_NEEDED = 2
    INPUT_ERROR = 3
    ENCRYPTED_PDF = 4
    INPUT_TOO_LARGE = 5
    MISSING_DEPENDENCY = 6
    WORKER_DIED = 10
    BROKER_LOST = 11
    DEADLINE = 12
    STORAGE_FAILED = 13
    BROKER_FULL = 14
    USAGE = 64
    INTERRUPTED = 130
    TERMINATED = 143


# (class, what it means) for every status: the docs' table and the batch summary's words
MEANING: dict[ExitCode, tuple[str, str]] = {
    ExitCode.OK: ("success", "every page of every document accepted"),
    ExitCode.INTERNAL_ERROR: (
        "internal error",
        "an unexpected exception: a bug (a one-line message, never a traceback)",
    ),
    ExitCode.REVIEW_NEEDED: (
        "review needed",
        "artifacts written, but some page needs review (`needs_review`)",
    ),
    ExitCode.INPUT_ERROR: (
        "input error",
        "a document could not be processed: no such file, empty, not a PDF, "
        "invalid, no pages, invalid options, the source changed or missing "
        "(`error.json`)",
    ),
    ExitCode.ENCRYPTED_PDF: ("input error", "a PDF needs a user password (`encrypted_pdf`)"),
    ExitCode.INPUT_TOO_LARGE: (
        "input error",
        "a PDF is over the size or page limit (`pdf_too_large`, `too_many_pages`)",
    ),
    ExitCode.MISSING_DEPENDENCY: (
        "setup",
        "a program pagefleet needs is not installed (tesseract, redis-server)",
    ),
    ExitCode.WORKER_DIED: ("fleet failure", "a worker process of the fleet died"),
    ExitCode.BROKER_LOST: ("fleet failure", "the broker (Redis) died or became unreachable"),
    ExitCode.DEADLINE: (
        "fleet failure",
        "the run's deadline passed (`job_deadline_s`), or a job was finished as `aborted`",
    ),
    ExitCode.STORAGE_FAILED: ("fleet failure", "object storage could not be reached"),
    ExitCode.BROKER_FULL: (
        "fleet failure",
        "the broker is full (Redis at or near `maxmemory`): nothing was "
        "enqueued; retry later (`broker_full`)",
    ),
    ExitCode.USAGE: ("usage", "a bad option or argument (`EX_USAGE`)"),
    ExitCode.INTERRUPTED: ("signal", "interrupted: Ctrl-C (SIGINT)"),
    ExitCode.TERMINATED: ("signal", "terminated (SIGTERM)"),
}

# most severe first
SEVERITY: tuple[ExitCode, ...] = (
    ExitCode.TERMINATED,
    ExitCode.INTERRUPTED,
    ExitCode.INTERNAL_ERROR,
    ExitCode.WORKER_DIED,
    ExitCode.BROKER_LOST,
    ExitCode.DEADLINE,
    ExitCode.STORAGE_FAILED,
    ExitCode.BROKER_FULL,
    ExitCode.MISSING_DEPENDENCY,
    ExitCode.USAGE,
    ExitCode.ENCRYPTED_PDF,
    ExitCode.INPUT_TOO_LARGE,
    ExitCode.INPUT_ERROR,
    ExitCode.REVIEW_NEEDED,
    ExitCode.OK,
)

# an error's stable code (pagefleet.workers.errors, error.json) → its exit status; other input codes: INPUT_ERROR
_BY_CODE: dict[str, ExitCode] = {
    "encrypted_pdf": ExitCode.ENCRYPTED_PDF,
    "pdf_too_large": ExitCode.INPUT_TOO_LARGE,
    "too_many_pages": ExitCode.INPUT_TOO_LARGE,
    "aborted": ExitCode.DEADLINE,
    "time_limit": ExitCode.DEADLINE,
    "missing_binary": ExitCode.MISSING_DEPENDENCY,
    "broker_unavailable": ExitCode.BROKER_LOST,
    "broker_full": ExitCode.BROKER_FULL,
    "storage_error": ExitCode.STORAGE_FAILED,
    "internal_error": ExitCode.INTERNAL_ERROR,
}


def for_code(code: str) -> ExitCode:
    """The exit status of an error code (`error.json`'s `code`, `PagefleetError.code`)."""
    if code in _BY_CODE:
        return _BY_CODE[code]
    return (
        ExitCode.INPUT_ERROR
        if code in INPUT_ERROR_CODES or code == "sandbox_failed"
        else ExitCode.INTERNAL_ERROR
    )


def for_error(exc: BaseException) -> ExitCode:
    return for_code(exc.code) if isinstance(exc, PagefleetError) else ExitCode.INTERNAL_ERROR


def most_severe(outcomes: Iterable[ExitCode]) -> ExitCode:
    found = set(outcomes)
    return next((code for code in SEVERITY if code in found), ExitCode.OK)


def summary(outcomes: Iterable[ExitCode], failure: ExitCode | None = None) -> tuple[ExitCode, str]:
    """A batch's exit status (its documents' outcomes and what ended the run early, if anything) and
    its line: `outcomes: ok=30 review_needed=1 encrypted_pdf=1; exit status 4 (encrypted_pdf)`."""
    counts = Counter(outcomes)
    worst = most_severe([*counts, *([failure] if failure is not None else [])])
    parts = " ".join(
        f"{code.name.lower()}={counts[code]}" for code in reversed(SEVERITY) if counts[code]
    )
    return worst, f"outcomes: {parts or 'none'}; exit status {int(worst)} ({worst.name.lower()})"
