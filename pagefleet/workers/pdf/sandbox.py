"""Untrusted PDF parsing in a child process with a timeout and resource limits.

A soft time limit cannot interrupt C code inside MuPDF, and a malformed PDF can make MuPDF eat
memory or crash. So every open/extract/render of a source PDF runs here, in a fresh child
(`python -m pagefleet.workers.pdf.sandbox CMD ...`) with RLIMIT_AS / RLIMIT_CPU set, and hands its result back
through a file. The parent (`run_child`) translates every way the child can die into a typed error.

Commands (child side), each `python -m pagefleet.workers.pdf.sandbox CMD PDF OUT.json PARAMS_JSON`:
    probe     page count, encryption, metadata
    extract   text layer + geometry per page, params {first, last} (1-based, inclusive)
    render    one page to a grayscale PNG, params {page, dpi, png, max_pixels}
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import resource
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any


from pagefleet.workers.fleet import deadline
from pagefleet.workers.errors import SandboxError, StorageError, TaskDeadline

log = logging.getLogger(__name__)


def _limits(memory_mb: int, cpu_s: int):  # pragma: no cover - runs in the child before exec
    def apply() -> None:
        mem = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


_SHARE: contextvars.ContextVar[str] = contextvars.ContextVar("sandbox_share", default="")
# one forked command of this process at a time, its result read before the next one empties the
# scratch files (a split batch reads its next document's head in a thread: `pagefleet.tasks.split`)
_ONE_AT_A_TIME = threading.Lock()

# a reused child leaves after a command that leaves it holding more than KEEP_MB (RSS, MB): MuPDF's
# store and a kept document's parsed objects grow with the pages read
KEEP_MB = 320
# a child shared by one submission's small-document batches on one worker process runs at most
# SHARE_MAX commands (`shared_child`: a batch's documents, and its submission's next batches)
SHARE_MAX = 256


@contextlib.contextmanager
def _turn(command: str) -> Iterator[None]:
    """This process's fork server to itself (`_ONE_AT_A_TIME`), waited for no longer than the task's
    deadline, where it has one."""
    left = deadline.remaining()
    if not _ONE_AT_A_TIME.acquire(timeout=-1 if left is None else max(left, 0.0)):
        raise TaskDeadline(f"the sandbox's {command} waited past the task's time limit")
    try:
        yield
    finally:
        _ONE_AT_A_TIME.release()


@contextlib.contextmanager
def shared_child(token: str) -> Iterator[None]:
    """Within the block, the fork server's commands of this process share one child, whatever
    `sandbox_reuse` says: the small documents of one submission's batches that a worker process
    splits (`pagefleet.tasks.split.split_batch`: the process and the submission make the token) pay one
    fork, not one each. A failed command, a command past its memory, a command with another
    token, 2 s without a command or `SHARE_MAX` commands still end the child."""
    reset = _SHARE.set(token)
    try:
        yield
    finally:
        _SHARE.reset(reset)


def run_child(
    command: str, pdf: str, params: dict[str, Any], *, timeout_s: float, memory_mb: int
) -> dict[str, Any]:
    """Run one sandbox command on `pdf`; return its JSON result. Raise SandboxError. In a task with
    its own deadline (a task on a thread, `pagefleet.workers.fleet.deadline`) the command's time, and its wait for
    this process's fork server, end there: `TaskDeadline`, not a failed file."""
    from pagefleet.workers.settings import get_settings

    what = f"the sandbox's {command}"
    timeout_s = deadline.bounded(timeout_s, what) or timeout_s
    settings = get_settings()
    try:
        return _run_child(
            command, pdf, params, timeout_s=timeout_s, memory_mb=memory_mb, settings=settings
        )
    except SandboxError as exc:
        deadline.check(what)  # cut by the deadline: the file may be fine
        if _NO_SPACE not in exc.message:
            raise
        if not (
            settings.advanced.sandbox_fork_server and _scratch_to_disk(command)
        ):  # on the disk already: full
            raise StorageError(
                f"no space left for {what}'s result ({exc.message}); the task retries"
            ) from exc
    log.warning(
        "%s found the sandbox's scratch folder full; this process's scratch moves to the temp dir",
        what,
    )
    return run_child(
        command, pdf, params, timeout_s=timeout_s, memory_mb=memory_mb
    )  # once more, on the disk


_NO_SPACE = (
    "[Errno 28]"  # ENOSPC in the child's last line: where its result goes is full, not the file bad
)


def _scratch_to_disk(command: str) -> bool:
    from pagefleet.workers.pdf.forkserver import CLIENT

    with _turn(command):
        return CLIENT.scratch_to_disk()


def _run_child(
    command: str,
    pdf: str,
    params: dict[str, Any],
    *,
    timeout_s: float,
    memory_mb: int,
    settings: Any,
) -> dict[str, Any]:
    if settings.advanced.sandbox_fork_server:
        return _run_forked(
            command,
            pdf,
            params,
            timeout_s=timeout_s,
            memory_mb=memory_mb,
            reuse=settings.advanced.sandbox_reuse,
            same_document=settings.advanced.sandbox_reuse_document,
            keep_mb=KEEP_MB,
            share_max=SHARE_MAX,
        )
    with tempfile.TemporaryDirectory(prefix="pagefleet-sbx-") as tmp:
        out = Path(tmp) / "result.json"
        argv = [
            sys.executable,
            "-m",
            "pagefleet.workers.pdf.sandbox",
            command,
            pdf,
            str(out),
            json.dumps(params),
        ]
        env = dict(os.environ, OMP_THREAD_LIMIT="1", PYTHONDONTWRITEBYTECODE="1")
        try:
            proc = subprocess.run(
                argv,
                capture_output=True,
                timeout=timeout_s,
                env=env,
                preexec_fn=_limits(memory_mb, int(timeout_s) + 1),
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise SandboxError(f"{command} timed out after {timeout_s:.0f}s") from exc
        stderr = proc.stderr.decode("utf-8", "replace").strip()
        if stderr:
            log.debug("sandbox %s stderr: %s", command, stderr[-2000:])
        if proc.returncode != 0 or not out.exists():
            reason = _death_reason(proc.returncode, stderr)
            raise SandboxError(f"{command} failed: {reason}")
        return json.loads(out.read_text(encoding="utf-8"))


def _run_forked(
    command: str,
    pdf: str,
    params: dict[str, Any],
    *,
    timeout_s: float,
    memory_mb: int,
    share_max: int,
    reuse: int = 1,
    same_document: bool = False,
    keep_mb: int = 0,
) -> dict[str, Any]:
    """The same command in a child forked from the worker's warm sandbox server (`forkserver`; a
    child runs at most `reuse` commands, and with `same_document` any number on its own document,
    until it holds more than `keep_mb`).
    Its result and stderr files are the worker process's two scratch files, emptied before each
    command (`ForkServerClient.scratch_files`); the child writes its result in place and answers
    only once it is whole."""
    from pagefleet.workers.pdf.forkserver import CLIENT

    with _turn(command):
        timeout_s = (
            deadline.bounded(timeout_s, f"the sandbox's {command}") or timeout_s
        )  # less what the turn took
        out, err = CLIENT.scratch_files()
        request = {
            "command": command,
            "pdf": pdf,
            "params": params,
            "out": str(out),
            "err": str(err),
            "timeout_s": timeout_s,
            "memory_mb": memory_mb,
            "reuse": reuse,
            "same_document": same_document,
            "keep_mb": keep_mb,
            "share": _SHARE.get(),
            "share_max": share_max,
            "in_place": True,
        }
        reply = CLIENT.run(request, timeout_s)
        if reply.get("timed_out"):
            raise SandboxError(f"{command} timed out after {timeout_s:.0f}s")
        stderr = err.read_text(encoding="utf-8", errors="replace").strip() if err.exists() else ""
        result = out.read_bytes() if reply["rc"] == 0 and out.exists() else b""
    if stderr:
        log.debug("sandbox %s stderr: %s", command, stderr[-2000:])
    if not result:
        raise SandboxError(f"{command} failed: {_death_reason(int(reply['rc']), stderr)}")
    return json.loads(result.decode("utf-8"))


def run_tool(
    argv: list[str],
    *,
    timeout_s: float,
    memory_mb: int,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """An external tool reading an untrusted PDF (pdftotext, a site's OCR command), under the same
    limits as a sandbox child: RLIMIT_AS/RLIMIT_CPU/no core, one OpenMP thread, a wall-clock timeout
    (`subprocess.TimeoutExpired` passes through for the caller to translate). `env` replaces the
    inherited environment (a plug-in command must not see the broker's or S3's secrets)."""
    env = dict(os.environ if env is None else env, OMP_THREAD_LIMIT="1")
    return subprocess.run(
        argv,
        capture_output=True,
        timeout=timeout_s,
        env=env,
        check=False,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        preexec_fn=_limits(memory_mb, int(timeout_s) + 1),
    )


def _death_reason(returncode: int, stderr: str) -> str:
    if returncode < 0:
        return f"killed by signal {-returncode} (memory or CPU limit?)"
    if "MemoryError" in stderr or "cannot allocate" in stderr.lower():
        return "out of memory"
    last = stderr.splitlines()[-1] if stderr else f"exit status {returncode}"
    return last[:300]


# --------------------------------------------------------------------------- child side


def _main(argv: list[str]) -> int:  # pragma: no cover - exercised through run_child
    from pagefleet.workers.pdf.sandbox_child import run_command

    run_command(argv[0], argv[1], json.loads(argv[3]), Path(argv[2]))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(_main(sys.argv[1:]))
