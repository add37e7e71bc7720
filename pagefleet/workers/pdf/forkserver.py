"""A warm sandbox: one server process per worker process that has imported PyMuPDF once and forks
children that run the sandbox commands.

    worker process ──request line──► fork server (python + pymupdf imported, never opens a PDF)
                   ◄──reply line────      └─ fork ─► child: RLIMIT_AS / RLIMIT_CPU / no core, runs
                                                      commands, writes each JSON result to a file

Every command runs in a child with its own limits (a crash or a limit kills only that child), and
no command pays an interpreter start and the PyMuPDF import (~150–250 ms on a small machine).
By default a child runs one command and exits (`sandbox_reuse` = 1: nothing one document does to
MuPDF's state can reach another). With `sandbox_reuse` = N a child runs up to N commands in turn
(fewer if it grows past half its memory limit, none after a command that failed): a fork, its
exit and the page faults of a fresh child (~1 900 for a one-page probe) cost ~15 ms of CPU, half
of a one-page document's sandbox time. With `sandbox_reuse_document` (the default) a child also
runs every further command on the file of its first one, so the range tasks of a big document
that reach one worker process share a child (~2 ms a page of fork and cold memory, 25-page
ranges); it leaves when a command for another file comes, after `IDLE_S` without any, or once it
holds more than `sandbox.KEEP_MB`. The small documents of one submission's batches that a worker
process splits (`sandbox.shared_child`, `pagefleet.tasks.split.split_batch`) share a child the same way, up
to `sandbox.SHARE_MAX` commands. The server
enforces each command's wall-clock timeout (it kills the child); the client gives up on a server
that stops answering and starts a new one on the next call.
Protocol: one JSON object per line each way; server → child: the request line, child → server:
"ok" or "last" (it leaves after this one) per command; a closed pipe means the child ended.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
import uuid
from pathlib import Path
from typing import Any

from pagefleet.workers.errors import SandboxError
from pagefleet.workers.pdf import scratch
from pagefleet.workers.pdf.warmup import warm_up

log = logging.getLogger(__name__)
_REPLY_SLACK_S = 15.0  # the server answers within timeout_s; past this slack it is presumed hung
IDLE_S = 2.0  # a child kept for its document's next command leaves after this long without one


class ForkServerClient:
    """The worker-process side: starts the server lazily, one request at a time."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._owner = 0
        self._lock = threading.Lock()
        self._folder: tuple[int, Path] | None = None  # (owner pid, scratch folder)
        self._files: tuple[int, tuple[Path, Path]] | None = (
            None  # (server pid, result and stderr files)
        )
        self._base: Path | None = None  # where scratch folders go: None, as the settings say

    def _ensure(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._owner == os.getpid() and self._proc.poll() is None:
            return self._proc
        self._proc = None
        env = dict(os.environ, OMP_THREAD_LIMIT="1", PYTHONDONTWRITEBYTECODE="1")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "pagefleet.workers.pdf.forkserver"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self._owner = os.getpid()
        return self._proc

    def scratch_files(self) -> tuple[Path, Path]:
        """The (result, stderr) files of this process's commands, in its private scratch folder
        (mkdtemp, once per process), emptied for the next command. The same two files serve every
        command of one server (a child writes them in place and answers only once its result is
        whole): creating a file costs ~0.5 ms of CPU on an ext4 disk here, two a one-page document.
        They are named for the server that runs the next command (started here if need be): a new
        server gets new names, so a child orphaned by one that stopped answering never writes into
        a later command's files."""
        with self._lock:
            server = self._ensure().pid
        if self._folder is None or self._folder[0] != os.getpid() or not self._folder[1].is_dir():
            self._folder, self._files = (os.getpid(), scratch.scratch_folder(self._base)), None
        if self._files is None or self._files[0] != server:
            folder = self._folder[1]
            for stale in folder.iterdir():
                stale.unlink(missing_ok=True)
            name = uuid.uuid4().hex
            self._files = (server, (folder / f"{name}.json", folder / f"{name}.err"))
        for path in self._files[1]:
            with open(path, "wb"):  # created once, then only truncated
                pass
        return self._files[1]

    def scratch_to_disk(self) -> bool:
        """After a command found its scratch folder full (ENOSPC: a RAM /dev/shm that other
        processes filled): this process's scratch folder moves to the temp dir and the full one
        goes. False when it is in the temp dir already (the disk itself is full)."""
        disk = Path(tempfile.gettempdir())
        if self._folder is not None and self._folder[1].parent == disk:
            return False
        if self._folder is not None:
            shutil.rmtree(self._folder[1], ignore_errors=True)
        self._base, self._folder, self._files = disk, None, None
        return True

    def run(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send one command; return the server's reply ({"rc": exit code, "timed_out": bool})."""
        with self._lock:
            proc = self._ensure()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(json.dumps(request).encode() + b"\n")
                proc.stdin.flush()
                ready, _, _ = select.select([proc.stdout], [], [], timeout_s + _REPLY_SLACK_S)
                line = proc.stdout.readline() if ready else b""
            except (OSError, ValueError) as exc:
                self.close()
                raise SandboxError(f"sandbox server failed: {exc}") from exc
            if not line:
                self.close()
                raise SandboxError("sandbox server stopped answering")
            return json.loads(line)

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None and self._owner == os.getpid():
            proc.kill()
            proc.wait(timeout=5)


CLIENT = ForkServerClient()
# --------------------------------------------------------------------------- server side


class _Child:
    """The server's side of one forked child: its pid, the pipe it reads requests from and the pipe
    it answers on, and how many commands it has run."""

    def __init__(self) -> None:
        req_r, self.req_w = os.pipe()
        self.rep_r, rep_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(self.req_w)
            os.close(self.rep_r)
            _child_loop(req_r, rep_w)
        os.close(req_r)
        os.close(rep_w)
        self.served = 0
        self.last = False  # it said it leaves after this command
        self.alive = True
        self.document = ""  # the PDF of its first command
        self.share = (
            ""  # the batch of documents its first command came from (`sandbox.shared_child`)
        )

    def takes(self, request: dict[str, Any]) -> bool:
        """Whether it may run `request` too: within `reuse` commands, another command on its own
        document (`same_document`: a document's range tasks share one child), or a command of the
        batch its first one came from (one submission's small documents, `share`)."""
        ours = bool(request.get("same_document")) and request["pdf"] == self.document
        shared = (
            bool(self.share)
            and request.get("share") == self.share
            and self.served < int(request.get("share_max", 256))
        )
        return self._open_to(request, ours or shared)

    def may_take_more(self, request: dict[str, Any]) -> bool:
        """After `request`: whether a next command could be its (else it leaves at once)."""
        return self._open_to(request, bool(request.get("same_document") or request.get("share")))

    def _open_to(self, request: dict[str, Any], kept: bool) -> bool:
        return self.alive and not self.last and (kept or self.served < int(request.get("reuse", 1)))

    def run(self, line: bytes, request: dict[str, Any]) -> dict[str, Any]:
        """One command (`line`, parsed: `request`): {"rc", "timed_out"}; a child that died or ran
        out of time is reaped."""
        if not self.served:
            self.document, self.share = request["pdf"], str(request.get("share") or "")
        os.write(self.req_w, line)
        ready, _, _ = select.select([self.rep_r], [], [], float(request["timeout_s"]))
        answer = os.read(self.rep_r, 64) if ready else b""
        self.served += 1
        if answer:
            self.last = answer.startswith(b"last")
            return {"rc": 0, "timed_out": False}
        if not ready:
            os.kill(self.pid, signal.SIGKILL)
        return {"rc": self.retire(), "timed_out": not ready}

    def retire(self, wait: bool = True) -> int:
        """Close its request pipe (a live child exits at once) and reap it: its exit code. Without
        `wait` it is reaped later (`_reap`), off the path of the command that replaces it."""
        self.alive = False
        for fd in (self.req_w, self.rep_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        if not wait:
            _LEAVING.append(self.pid)
            return 0
        _, status = os.waitpid(self.pid, 0)
        return os.waitstatus_to_exitcode(status)


_LEAVING: list[int] = []  # children told to leave, not reaped yet


def _reap(block: bool = False) -> None:
    for pid in list(_LEAVING):
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, 0 if block else os.WNOHANG)[0] == 0:
                continue
        _LEAVING.remove(pid)


def _child_loop(req_r: int, rep_w: int) -> None:  # pragma: no cover - forked child
    """Run commands until the request pipe closes. Each command gets its own error file and limits;
    a command that raises ends the child (exit 1, traceback in the error file), so a failure never
    leaves MuPDF's state behind for the next command."""
    import resource

    from pagefleet.workers.pdf.sandbox_child import run_command

    code = 0
    try:
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        with os.fdopen(req_r, "rb") as requests:
            for line in requests:
                code = 1
                request = json.loads(line)
                err = os.open(request["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(err, 2)
                os.close(err)
                _limit(request)
                run_command(
                    request["command"],
                    request["pdf"],
                    request["params"],
                    Path(request["out"]),
                    in_place=bool(request.get("in_place")),
                )
                code = 0
                os.write(rep_w, b"last\n" if _over_memory(request) else b"ok\n")
    except BaseException:  # noqa: BLE001 - everything goes to the error file; the exit code tells
        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(code)


def _limit(request: dict[str, Any]) -> None:  # pragma: no cover - forked child
    """This command's limits: address space, and CPU seconds from what the child has used so far
    (soft limits under the server's hard ones, so a reused child can set them again)."""
    import resource

    mem = int(request["memory_mb"]) * 1024 * 1024
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu = int(used.ru_utime + used.ru_stime + float(request["timeout_s"])) + 1
    resource.setrlimit(resource.RLIMIT_AS, (mem, resource.getrlimit(resource.RLIMIT_AS)[1]))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, resource.getrlimit(resource.RLIMIT_CPU)[1]))


def _over_memory(request: dict[str, Any]) -> bool:  # pragma: no cover - forked child
    """A reused child leaves once it holds more than `keep_mb` or half its memory limit (MuPDF's
    store keeps fonts and images, a kept document its parsed objects): the next command starts in a
    fresh one."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        rss_pages = int(Path("/proc/self/statm").read_text().split()[1])
        limit_mb = min(
            int(request["memory_mb"]) // 2, int(request.get("keep_mb") or request["memory_mb"])
        )
        return rss_pages * os.sysconf("SC_PAGE_SIZE") > limit_mb * 1024 * 1024
    return False


def serve() -> int:  # pragma: no cover - exercised through the client
    from pagefleet.workers.pdf import mupdf, sandbox_child  # noqa: F401 - imported once here, not in every child

    warm_up(mupdf)
    gc.collect()
    gc.freeze()  # what the server holds is never scanned again: children do not copy it page by page
    child: _Child | None = None
    lines = _Lines(sys.stdin.fileno())
    try:
        while True:
            line = lines.next(IDLE_S if child is not None else None)
            if line is None:  # a kept child waited long enough for its document's next command
                child = _retired(child)
                continue
            if not line:
                break
            request = json.loads(line)
            if child is not None and not child.takes(request):
                child.retire(wait=False)  # another file: reaped after this command's reply
                child = None
            child, reply = _run(child or _Child(), line, request)
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
            if not child.may_take_more(request):
                child = _retired(
                    child
                )  # after the reply: the child's exit is off the caller's path
            _reap()
    finally:
        _retired(child)
        _reap(block=True)
    return 0


def _run(child: _Child, line: bytes, request: dict[str, Any]) -> tuple[_Child, dict[str, Any]]:
    try:
        return child, child.run(line, request)
    except (
        BrokenPipeError
    ):  # it died between commands (killed from outside): a fresh one runs this one
        _retired(child)
        child = _Child()
        return child, child.run(line, request)


def _retired(child: _Child | None) -> None:
    if child is not None and child.alive:
        child.retire()
    return None


class _Lines:
    """Request lines from a file descriptor, with a timeout (the server retires a kept child when
    no command comes)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = b""

    def next(self, timeout_s: float | None) -> bytes | None:
        """The next line; b"" at the end of input, None when `timeout_s` passed without one."""
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([self._fd], [], [], timeout_s)
            if not ready:
                return None
            chunk = os.read(self._fd, 1 << 16)
            if not chunk:
                return b""
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line + b"\n"


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(serve())
