"""A warm sandbox: one server process per worker process that has imported PyMuPDF once and forks a
fresh child for every sandbox command.

    worker process ──request line──► fork server (python + pymupdf imported, never opens a PDF)
                   ◄──reply line────      └─ fork ─► child: RLIMIT_AS / RLIMIT_CPU / no core, runs
                                                      one command, writes its JSON result, exits

Every command still runs in its own process with its own limits (a crash or a limit kills only that
child), but a command no longer pays an interpreter start and the PyMuPDF import (~150–250 ms on a
small machine), which made the per-document fixed cost. The server enforces the wall-clock
timeout (it kills the child); the client gives up on a server that stops answering and starts a new
one on the next call. Protocol: one JSON object per line each way.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
import uuid
from pathlib import Path
from typing import Any

from workers.errors import SandboxError

log = logging.getLogger(__name__)
_REPLY_SLACK_S = 15.0  # the server answers within timeout_s; past this slack it is presumed hung


class ForkServerClient:
    """The worker-process side: starts the server lazily, one request at a time."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._owner = 0
        self._lock = threading.Lock()
        self._scratch: tuple[int, Path] | None = None

    def _ensure(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._owner == os.getpid() and self._proc.poll() is None:
            return self._proc
        self._proc = None
        env = dict(os.environ, OMP_THREAD_LIMIT="1", PYTHONDONTWRITEBYTECODE="1")
        self._proc = subprocess.Popen([sys.executable, "-m", "workers.pdf.forkserver"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self._owner = os.getpid()
        return self._proc

    def scratch_files(self) -> tuple[Path, Path]:
        """Fresh (result, stderr) paths in this process's private scratch folder (mkdtemp, once per
        process: an empty folder is all a process leaves behind)."""
        if self._scratch is None or self._scratch[0] != os.getpid() or not self._scratch[1].is_dir():
            self._scratch = (os.getpid(), Path(tempfile.mkdtemp(prefix="pagefleet-sbx-")))
        name = uuid.uuid4().hex
        return self._scratch[1] / f"{name}.json", self._scratch[1] / f"{name}.err"

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


def _child(request: dict[str, Any], handlers: dict[str, Any]) -> None:  # pragma: no cover - forked child
    import resource

    code = 1
    try:
        err = os.open(request["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.dup2(err, 2)
        mem = int(request["memory_mb"]) * 1024 * 1024
        cpu = int(request["timeout_s"]) + 1
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        handler = handlers.get(request["command"])
        if handler is None:
            raise SystemExit(f"unknown sandbox command {request['command']}")
        result = handler(request["pdf"], **request["params"])
        out = Path(request["out"])
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")
        tmp.replace(out)
        code = 0
    except BaseException:  # noqa: BLE001 - everything goes to the error file; the exit code tells
        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(code)


def _wait(pid: int, timeout_s: float) -> tuple[int, bool]:
    fd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([fd], [], [], timeout_s)
    finally:
        os.close(fd)
    timed_out = not ready
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), timed_out


WARM_COLOURS = ((0.2,), (0.1, 0.2, 0.3), (0.1, 0.2, 0.3, 0.4))  # text filled in DeviceGray, DeviceRGB, DeviceCMYK


def _warm_up(mupdf: Any) -> None:  # pragma: no cover - server side
    """Read and render one small page of our own making (Latin, Hebrew, Arabic; text in grey, RGB
    and CMYK) before forking: the lazy initialisations of PyMuPDF, of the character tables and of
    MuPDF's colour management happen once here, not in every child. A span's colour is converted
    to sRGB through an ICC link that LittleCMS builds on first use and MuPDF keeps in its store;
    built in each child, those links made a one-page probe ~24 ms instead of ~10."""
    import tempfile

    import pymupdf

    with tempfile.TemporaryDirectory(prefix="pagefleet-warm-") as tmp, pymupdf.open() as doc:
        page = doc.new_page()
        for i, colour in enumerate(WARM_COLOURS):
            page.insert_text((72, 72 + 20 * i), "Warm up 0123 \u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627",
                             color=colour)
        doc.save(f"{tmp}/warm.pdf")
        mupdf.probe(f"{tmp}/warm.pdf", extract_upto=1, max_pages=1, structure=True)
        mupdf.render(f"{tmp}/warm.pdf", 1, 72, f"{tmp}/warm.pgm")


def serve() -> int:  # pragma: no cover - exercised through the client
    from workers.pdf import mupdf

    handlers = {"probe": mupdf.probe, "extract": mupdf.extract_range, "render": mupdf.render}
    _warm_up(mupdf)
    gc.collect()
    gc.freeze()  # what the server holds is never scanned again: children do not copy it page by page
    for line in sys.stdin.buffer:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request, handlers)
        rc, timed_out = _wait(pid, float(request["timeout_s"]))
        sys.stdout.write(json.dumps({"rc": rc, "timed_out": timed_out}) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(serve())
