"""The embedded default: a private redis-server on a free loopback port and Celery worker processes
for every queue, started for one `pagefleet run` and stopped when it ends, whatever happens:
a normal end, an error, SIGINT or SIGTERM (`signals_as_interrupt`), and — through the kernel's
parent-death signal — even a SIGKILL of the run itself. `out_lock` serializes two runs over one
output folder."""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import redis

from workers.errors import PagefleetError, SetupError

REDIS_HINT = "install it: apt-get install redis-server"
_PR_SET_PDEATHSIG = 1


class RunLocked(PagefleetError):
    code = "run_locked"


def die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Linux: the child gets SIGTERM when the process that started it dies (even by SIGKILL)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


@contextlib.contextmanager
def out_lock(outdir: Path, wait_s: float, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """One `pagefleet run` at a time per output folder: a second one waits (up to `wait_s`) for
    the first to finish — then its documents are found done — or is refused (`RunLocked`)."""
    path = outdir / ".pagefleet" / "run.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+")
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if on_wait is not None:
                    on_wait()
                    on_wait = None
                if time.monotonic() > deadline:
                    raise RunLocked(f"another pagefleet run is writing to {outdir}") from None
                time.sleep(0.2)
        handle.truncate(0)
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield
    finally:
        handle.close()  # closing releases the lock


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises KeyboardInterrupt; the exit status tells them apart (143, 130)."""


@contextlib.contextmanager
def signals_as_interrupt() -> Iterator[None]:
    """SIGTERM behaves like Ctrl-C (a KeyboardInterrupt: `Terminated`), so `with` blocks stop what they
    started."""
    def interrupt(signum: int, _frame: object) -> None:
        raise Terminated(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_own_redis(proc: subprocess.Popen[bytes], port: int, timeout_s: float = 10.0) -> bool:
    """True once *this* redis-server answers on `port`: a free port can be taken by someone else's
    server between choosing it and binding it, and a ping alone would then talk to that one."""
    deadline = time.monotonic() + timeout_s
    client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=0.5)
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            if int(client.info("server")["process_id"]) == proc.pid:
                return True
        except redis.RedisError:
            pass
        time.sleep(0.05)
    return False


class RedisServer:
    """redis-server on 127.0.0.1:<free port>, no persistence, `noeviction`."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, attempts: int = 5) -> str:
        binary = shutil.which("redis-server")
        if binary is None:
            raise SetupError(f"redis-server is not installed; {REDIS_HINT}")
        for _ in range(attempts):
            self.port = free_port()
            args = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                    "--dir", str(self.workdir), "--maxmemory-policy", "noeviction", "--protected-mode", "yes"]
            log = open(self.workdir / f"redis-{self.port}.log", "wb")
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                         preexec_fn=die_with_parent)
            if self._wait_ready():
                return self.url
            self.stop()
        raise SetupError(f"redis-server did not start (see {self.workdir})")

    def _wait_ready(self, timeout_s: float = 10.0) -> bool:
        return self.proc is not None and wait_own_redis(self.proc, self.port, timeout_s)

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None


def pool_for(queues: str) -> list[str]:
    """Celery's pool option for a worker of these queues: a worker of the gpu queue alone runs its
    tasks on threads (`gpu_pool`), so that its concurrent tasks' pages share the VLM's generate
    calls (`workers.engines.batching`) and one copy of each model; every other worker forks."""
    from workers.settings import get_settings

    return ["-P", get_settings().gpu_pool] if _gpu_only(queues) else []


def default_concurrency(queues: str) -> int:
    """A worker's pool size when none is given: on task threads, a gpu worker takes `vlm.batch_size`
    tasks at once (their pages fill one generate call); a prefork gpu worker one process (each
    would load its own models); any other worker a process a CPU."""
    from workers.settings import get_settings

    settings = get_settings()
    if _gpu_only(queues):
        return settings.vlm.batch_size if settings.gpu_pool == "threads" else 1
    return os.cpu_count() or 2


def _gpu_only(queues: str) -> bool:
    return [q.strip() for q in queues.split(",")] == ["gpu"]


class WorkerProcess:
    def __init__(self, queues: str, concurrency: int, env: dict[str, str], logdir: Path, loglevel: str = "INFO") -> None:
        self.name = f"{queues.replace(',', '-')}-{uuid.uuid4().hex[:6]}"
        self.logfile = logdir / f"worker-{self.name}.log"
        args = [sys.executable, "-m", "celery", "-A", "workers.app", "worker", "-Q", queues, "-c", str(concurrency),
                *pool_for(queues), "-n", f"{self.name}@%h", "--without-mingle", "--without-gossip", "-l", loglevel,
                "--logfile", str(self.logfile), "-E"]
        self.proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=open(self.logfile.with_suffix(".err"), "wb"),
                                     start_new_session=True, preexec_fn=die_with_parent)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def tail(self, lines: int = 15) -> str:
        text = ""
        for path in (self.logfile.with_suffix(".err"), self.logfile):
            if path.exists():
                text += path.read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout_s: float = 20.0) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # warm shutdown of the main process and its pool
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                pass
        # whatever is left of its process group (pool children of a main process that died, their
        # Tesseract or sandbox children) goes too: nothing it started outlives the run
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


class EmbeddedFleet:
    """Context manager: Redis (unless a broker is given) plus split/collect, cpu (and gpu) workers."""

    def __init__(self, *, broker_url: str | None, cpu_workers: int, gpu: bool, logdir: Path) -> None:
        self.broker_url = broker_url
        self.cpu_workers = cpu_workers
        self.gpu = gpu
        self.logdir = logdir
        self.tmp = Path(tempfile.mkdtemp(prefix="pagefleet-run-"))
        self.redis: RedisServer | None = None
        self.workers: list[WorkerProcess] = []

    def __enter__(self) -> "EmbeddedFleet":
        try:
            if self.broker_url is None:
                self.redis = RedisServer(self.tmp)
                self.broker_url = self.redis.start()
            env = dict(os.environ, PAGEFLEET_BROKER_URL=self.broker_url, PAGEFLEET_RESULT_BACKEND=self.broker_url,
                       PAGEFLEET_GPU="1" if self.gpu else "0", OMP_THREAD_LIMIT="1")
            self.logdir.mkdir(parents=True, exist_ok=True)
            self.workers.append(WorkerProcess("split,collect", 1, env, self.logdir))
            self.workers.append(WorkerProcess("cpu", self.cpu_workers, env, self.logdir))
            if self.gpu:
                self.workers.append(WorkerProcess("gpu", default_concurrency("gpu"), env, self.logdir))
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def dead_worker(self) -> WorkerProcess | None:
        return next((w for w in self.workers if not w.alive()), None)

    def redis_died(self) -> bool:
        return self.redis is not None and (self.redis.proc is None or self.redis.proc.poll() is not None)

    def __exit__(self, *exc: object) -> None:
        for worker in self.workers:
            worker.stop()
        if self.redis is not None:
            self.redis.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)
