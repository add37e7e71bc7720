"""The error hierarchy and its one boundary (error.json)."""

from __future__ import annotations

import pytest

from pagefleet.workers import errors


def test_every_input_code_has_a_class() -> None:
    codes = {cls.code for cls in errors.InputError.__subclasses__()}
    assert codes == set(errors.INPUT_ERROR_CODES)


@pytest.mark.parametrize("cls", errors.InputError.__subclasses__())
def test_input_errors_map_to_error_json(cls: type[errors.InputError]) -> None:
    record = errors.error_record(cls("what went wrong"))
    assert record == {"code": cls.code, "message": "what went wrong"}
    assert not cls.retryable


def test_unknown_exceptions_never_leak_tracebacks() -> None:
    record = errors.error_record(ZeroDivisionError("boom"))
    assert record["code"] == "internal_error" and "Traceback" not in record["message"]


def test_retryable_flags() -> None:
    assert (
        errors.StorageError.retryable
        and errors.BrokerUnavailable.retryable
        and errors.EngineTimeout.retryable
    )
    assert not errors.EngineCrashed.retryable
