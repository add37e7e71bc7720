"""The CLI boundary: one-line errors naming what is missing and how to install it, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pagefleet.workers.cli.exitcodes import ExitCode

BIN = Path(sys.executable).parent


def _run(args: list[str], path: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PATH=path)
    return subprocess.run(
        [str(BIN / "pagefleet"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
    )


def test_missing_tesseract_is_named_with_install_hint(fixtures_dir: Path, tmp_path: Path) -> None:
    proc = _run(
        ["run", str(fixtures_dir / "born_digital_hebrew.pdf"), "--out", str(tmp_path)],
        str(BIN),
        tmp_path,
    )
    assert proc.returncode == ExitCode.MISSING_DEPENDENCY
    assert (
        "tesseract is not installed" in proc.stderr
        and "apt-get install tesseract-ocr" in proc.stderr
    )
    assert "Traceback" not in proc.stderr


def test_missing_redis_server_is_named_with_install_hint(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    # tesseract stays reachable, redis-server does not
    only = tmp_path / "bin"
    only.mkdir()
    tesseract = subprocess.run(
        ["which", "tesseract"], capture_output=True, text=True
    ).stdout.strip()
    (only / "tesseract").symlink_to(tesseract)
    proc = _run(
        ["run", str(fixtures_dir / "born_digital_hebrew.pdf"), "--out", str(tmp_path / "out")],
        f"{BIN}:{only}",
        tmp_path,
    )
    assert proc.returncode == ExitCode.MISSING_DEPENDENCY
    assert (
        "redis-server is not installed" in proc.stderr
        and "apt-get install redis-server" in proc.stderr
    )
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "args, message, status",
    [
        (
            ["run", "no-such.pdf", "--out", "o"],
            "no such file or directory: no-such.pdf",
            ExitCode.INPUT_ERROR,
        ),
        (
            ["run", "x.pdf", "--out", "o", "--ocr", "sometimes"],
            "invalid choice: 'sometimes'",
            ExitCode.USAGE,
        ),
        (["worker", "--queues", "cpu,bogus"], "unknown queue", ExitCode.USAGE),
    ],
)
def test_bad_arguments_are_one_line_errors(
    tmp_path: Path, args: list[str], message: str, status: int
) -> None:
    proc = _run(
        args, os.environ["PATH"], tmp_path
    )  # usage errors exit 64 (EX_USAGE): 2 means "needs review"
    assert proc.returncode == status and message in proc.stderr and "Traceback" not in proc.stderr
