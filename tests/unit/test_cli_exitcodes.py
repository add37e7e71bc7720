"""Exit statuses a script can use (pagefleet/workers/cli/exitcodes.py): every class of outcome has its own
status, a batch exits with its most severe outcome and prints the count of each. The boundary in
`main` maps each error; `pagefleet run` maps each document and what ended the run early.
tests/integration/test_cli_run.py (an encrypted input in a batch, a page that needs review) and
tests/faults/test_faults_run.py (the broker lost, SIGTERM) check the same through real runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from pagefleet.workers.cli import main as cli_main
from pagefleet.workers.cli import run as cli_run
from pagefleet.workers.cli.embedded import Terminated
from pagefleet.workers.cli.exitcodes import (
    MEANING,
    SEVERITY,
    ExitCode,
    for_code,
    for_error,
    most_severe,
    summary,
)
from pagefleet.workers.errors import (
    INPUT_ERROR_CODES,
    BrokerUnavailable,
    EncryptedPdfError,
    InvalidPdfError,
    PdfTooLargeError,
    SetupError,
    StorageError,
    TaskDeadline,
    TooManyPagesError,
)
from pagefleet.workers.model import JobSpec

INPUT = {ExitCode.INPUT_ERROR, ExitCode.ENCRYPTED_PDF, ExitCode.INPUT_TOO_LARGE}
FLEET = {ExitCode.WORKER_DIED, ExitCode.BROKER_LOST, ExitCode.DEADLINE, ExitCode.STORAGE_FAILED}


def test_the_fixed_statuses_stay() -> None:
    assert (ExitCode.OK, ExitCode.REVIEW_NEEDED, ExitCode.USAGE) == (0, 2, 64)
    assert (ExitCode.INTERRUPTED, ExitCode.TERMINATED) == (130, 143)
    assert cli_main.EX_USAGE == 64
    assert set(MEANING) == set(ExitCode) == set(SEVERITY) and len(SEVERITY) == len(set(SEVERITY))
    assert len({int(code) for code in ExitCode}) == len(ExitCode)


def test_input_errors_fleet_failures_and_internal_errors_are_apart() -> None:
    for code in INPUT_ERROR_CODES:
        assert for_code(code) in INPUT | {ExitCode.DEADLINE}, (
            code
        )  # aborted: a job the fleet gave up on
    assert for_error(EncryptedPdfError("x")) == ExitCode.ENCRYPTED_PDF
    assert (
        for_error(PdfTooLargeError("x"))
        == for_error(TooManyPagesError("x"))
        == ExitCode.INPUT_TOO_LARGE
    )
    assert for_error(InvalidPdfError("x")) == ExitCode.INPUT_ERROR
    assert for_error(BrokerUnavailable("x")) == ExitCode.BROKER_LOST
    assert for_error(StorageError("x")) == ExitCode.STORAGE_FAILED
    assert for_error(TaskDeadline("x")) == ExitCode.DEADLINE
    assert for_error(SetupError("x")) == ExitCode.MISSING_DEPENDENCY
    assert for_error(RuntimeError("bug")) == for_code("internal_error") == ExitCode.INTERNAL_ERROR
    assert {MEANING[c][0] for c in INPUT} == {"input error"} and {MEANING[c][0] for c in FLEET} == {
        "fleet failure"
    }


def test_a_batch_exits_with_its_most_severe_outcome_and_counts_each() -> None:
    assert most_severe([]) == ExitCode.OK
    assert most_severe([ExitCode.OK, ExitCode.REVIEW_NEEDED]) == ExitCode.REVIEW_NEEDED
    assert most_severe([ExitCode.REVIEW_NEEDED, ExitCode.INPUT_ERROR]) == ExitCode.INPUT_ERROR
    assert (
        most_severe([ExitCode.INPUT_ERROR, ExitCode.ENCRYPTED_PDF, ExitCode.WORKER_DIED])
        == ExitCode.WORKER_DIED
    )
    assert most_severe([ExitCode.INTERNAL_ERROR, ExitCode.BROKER_LOST]) == ExitCode.INTERNAL_ERROR
    assert most_severe([ExitCode.INTERNAL_ERROR, ExitCode.INTERRUPTED]) == ExitCode.INTERRUPTED
    code, line = summary([ExitCode.OK] * 30 + [ExitCode.REVIEW_NEEDED, ExitCode.ENCRYPTED_PDF])
    assert code == ExitCode.ENCRYPTED_PDF
    assert line == "outcomes: ok=30 review_needed=1 encrypted_pdf=1; exit status 4 (encrypted_pdf)"
    code, line = summary([ExitCode.OK], ExitCode.TERMINATED)
    assert code == ExitCode.TERMINATED and line.endswith("exit status 143 (terminated)")


def _tracked(state: str, status: str) -> cli_run.Tracked:
    spec = JobSpec(
        job_id="j", source="/in/a.pdf", filename="a.pdf", storage="file:///o", artifact_prefix="a"
    )
    return cli_run.Tracked(spec, "a", state=state, status=status)


def test_each_documents_outcome_in_a_run() -> None:
    assert cli_run.outcome(_tracked("done", "accepted")) == ExitCode.OK
    assert cli_run.outcome(_tracked("done", "needs_review")) == ExitCode.REVIEW_NEEDED
    assert (
        cli_run.outcome(_tracked("done", "failed")) == ExitCode.REVIEW_NEEDED
    )  # artifacts, no page readable
    assert cli_run.outcome(_tracked("error", "error: encrypted_pdf")) == ExitCode.ENCRYPTED_PDF
    assert cli_run.outcome(_tracked("error", "error: too_many_pages")) == ExitCode.INPUT_TOO_LARGE
    assert cli_run.outcome(_tracked("error", "error: zero_pages")) == ExitCode.INPUT_ERROR
    assert (
        cli_run.outcome(_tracked("error", "error: aborted"), ExitCode.WORKER_DIED)
        == ExitCode.WORKER_DIED
    )
    assert (
        cli_run.outcome(_tracked("error", "error: aborted")) == ExitCode.DEADLINE
    )  # the watchdog gave up
    assert cli_run.outcome(_tracked("done", "accepted"), ExitCode.BROKER_LOST) == ExitCode.OK


class _Fleet:
    def __init__(self, redis_died: bool = False, dead: object | None = None) -> None:
        self._redis_died, self._dead = redis_died, dead

    def redis_died(self) -> bool:
        return self._redis_died

    def dead_worker(self) -> object | None:
        return self._dead


@pytest.mark.parametrize(
    "fleet, deadline, expected",
    [
        (
            _Fleet(dead=SimpleNamespace(name="cpu", tail=lambda: "killed")),
            3600,
            ExitCode.WORKER_DIED,
        ),
        (_Fleet(redis_died=True), 3600, ExitCode.BROKER_LOST),
        (_Fleet(), -1, ExitCode.DEADLINE),
    ],
)
def test_what_ends_a_run_early_is_a_fleet_failure(
    monkeypatch: pytest.MonkeyPatch, fleet: _Fleet, deadline: int, expected: ExitCode
) -> None:
    monkeypatch.setattr(cli_run, "_poll", lambda t, console: None)
    monkeypatch.setattr(
        cli_run,
        "get_settings",
        lambda: SimpleNamespace(limits=SimpleNamespace(job_deadline_s=deadline)),
    )
    from rich.console import Console

    code, why = cli_run._wait([_tracked("queued", "")], fleet, Console(file=open("/dev/null", "w")))
    assert code == expected and why


def test_a_lost_broker_while_polling_is_a_fleet_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    def poll(t: object, console: object) -> None:
        raise BrokerUnavailable("connection refused")

    monkeypatch.setattr(cli_run, "_poll", poll)
    from rich.console import Console

    code, _ = cli_run._wait(
        [_tracked("queued", "")], _Fleet(), Console(file=open("/dev/null", "w"))
    )
    assert code == ExitCode.BROKER_LOST


@pytest.mark.parametrize(
    "raised, expected",
    [
        (EncryptedPdfError("needs a password"), ExitCode.ENCRYPTED_PDF),
        (BrokerUnavailable("gone"), ExitCode.BROKER_LOST),
        (SetupError("tesseract is not installed"), ExitCode.MISSING_DEPENDENCY),
        (RuntimeError("a bug"), ExitCode.INTERNAL_ERROR),
        (KeyboardInterrupt(), ExitCode.INTERRUPTED),
        (Terminated("signal 15"), ExitCode.TERMINATED),
    ],
)
def test_the_boundary_maps_every_error(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    raised: BaseException,
    expected: ExitCode,
) -> None:
    def handler(args: object, console: object) -> int:
        raise raised

    monkeypatch.setitem(cli_main.COMMANDS, "status", handler)
    assert cli_main.main(["status", "job"]) == expected
    assert "Traceback" not in capsys.readouterr().err


def test_input_errors_from_the_command_line(tmp_path: Path) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pagefleet.workers.cli.main", *args],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=Path(__file__).resolve().parents[2],
        )

    (tmp_path / "empty").mkdir()
    assert (
        cli("run", str(tmp_path / "nothing.pdf"), "--out", str(tmp_path / "o")).returncode
        == ExitCode.INPUT_ERROR
    )
    assert (
        cli("run", str(tmp_path / "empty"), "--out", str(tmp_path / "o"), "--ocr", "off").returncode
        == ExitCode.INPUT_ERROR
    )
    assert cli("worker", "--queues", "nope").returncode == ExitCode.USAGE
