"""Starting a fleet on this machine: a private redis-server on a free loopback port and Celery
worker processes, stopped when their starter says so or — through the kernel's parent-death
signal — when it dies, even by SIGKILL. `Fleet` is the one launcher: the embedded run
(`pagefleet.workers.cli.embedded`), the benchmarks (`tests/support/warm_fleet.py`) and the tests
(`tests/conftest.py`, `tests/support/drills.py`) start theirs with it."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import redis

from pagefleet.workers.errors import SetupError

REDIS_HINT = "install it: apt-get install redis-server"
_PR_SET_PDEATHSIG = 1


def die_with_parent(
    sig: int = signal.SIGTERM, parent: int | None = None
) -> None:  # pragma: no cover - in a child
    """Linux: the child gets `sig` when the process that started it dies (even by SIGKILL). With
    `parent` (the starter's pid), a starter that died before this ran is caught too."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
    if parent is not None and os.getppid() != parent:
        os.kill(os.getpid(), sig)


def worker_dies_with_parent() -> Callable[[], None]:
    """A Celery worker's `preexec_fn`: SIGKILL when its starter dies (its pool processes follow it:
    `pagefleet.workers.app`). Any shutdown Celery does itself — warm, or cold after its soft-shutdown window —
    would wait for the running tasks, a split waiting for its pages up to the hard time limit, for a
    run that is gone along with its Redis."""
    return functools.partial(die_with_parent, signal.SIGKILL, os.getpid())


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
    """redis-server on 127.0.0.1:<free port>, `noeviction`; no persistence, or with `aof` an
    append-only file (fsync always) so that it can be killed and started again on its port."""

    def __init__(self, workdir: Path, *, aof: bool = False) -> None:
        self.workdir = workdir
        self.aof = aof
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = free_port()
        self.started = False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, attempts: int = 5) -> str:
        """Start (or start again, on the same port); a first start moves to another port if this
        one turns out to be taken."""
        binary = shutil.which("redis-server")
        if binary is None:
            raise SetupError(f"redis-server is not installed; {REDIS_HINT}")
        persist = (
            ["--appendonly", "yes", "--appendfsync", "always"]
            if self.aof
            else ["--appendonly", "no"]
        )
        for _ in range(attempts):
            args = [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                *persist,
                "--dir",
                str(self.workdir),
                "--maxmemory-policy",
                "noeviction",
                "--protected-mode",
                "yes",
            ]
            log = open(self.workdir / f"redis-{self.port}.log", "ab")  # noqa: SIM115 - the server's, while it runs
            self.proc = subprocess.Popen(
                args,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
            if wait_own_redis(self.proc, self.port, 20 if self.aof else 10):
                self.started = True
                return self.url
            self.kill()
            if self.started:
                time.sleep(0.5)  # a restart keeps its port: the old socket may linger
            else:
                self.port = free_port()
        raise SetupError(f"redis-server did not start (see {self.workdir})")

    def kill(self) -> None:
        """SIGKILL: a crash (with `aof`, every acknowledged write survives it)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None


NOTIFY_THREADS = 8  # a notify worker's default task threads: callbacks in flight at once


def pool_for(queues: str) -> list[str]:
    """Celery's pool option for a worker of these queues: a worker of the gpu queue alone runs its
    tasks on threads (`gpu_pool`), so that its concurrent tasks' pages share the VLM's generate
    calls (`pagefleet.workers.engines.batching`) and one copy of each model; a worker of the notify queue
    alone runs its callback POSTs on threads (they wait on the network, and a slow endpoint holds
    one thread); every other worker forks."""
    from pagefleet.workers.settings import get_settings

    if _only(queues, "gpu"):
        return ["-P", get_settings().gpu.pool]
    return ["-P", "threads"] if _only(queues, "notify") else []


def default_concurrency(queues: str) -> int:
    """A worker's pool size when none is given: on task threads, a gpu worker takes `vlm.batch_size`
    tasks at once (their pages fill one generate call); a prefork gpu worker one process (each
    would load its own models); a notify worker `NOTIFY_THREADS` callbacks; any other worker a
    process a CPU."""
    from pagefleet.workers.settings import get_settings

    settings = get_settings()
    if _only(queues, "gpu"):
        return settings.gpu.vlm.batch_size if settings.gpu.pool == "threads" else 1
    if _only(queues, "notify"):
        return NOTIFY_THREADS
    return os.cpu_count() or 2


def _only(queues: str, queue: str) -> bool:
    return [q.strip() for q in queues.split(",")] == [queue]


class WorkerProcess:
    def __init__(
        self,
        queues: str,
        concurrency: int,
        env: dict[str, str],
        logdir: Path,
        loglevel: str = "INFO",
    ) -> None:
        self.name = f"{queues.replace(',', '-')}-{uuid.uuid4().hex[:6]}"
        self.logfile = logdir / f"worker-{self.name}.log"
        args = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "pagefleet.workers.app",
            "worker",
            "-Q",
            queues,
            "-c",
            str(concurrency),
            *pool_for(queues),
            "-n",
            f"{self.name}@%h",
            "--without-mingle",
            "--without-gossip",
            "-l",
            loglevel,
            "--logfile",
            str(self.logfile),
            "-E",
        ]
        self.proc = subprocess.Popen(
            args,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(self.logfile.with_suffix(".err"), "wb"),
            start_new_session=True,
            preexec_fn=worker_dies_with_parent(),
        )

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
            os.killpg(
                self.proc.pid, signal.SIGTERM
            )  # warm shutdown of the main process and its pool
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


class Fleet:
    """Redis (its own, unless `broker_url` names one) and Celery worker processes, one per
    (queues, concurrency) in `pagefleet.workers` (None: `default_concurrency`): the one launcher the embedded
    run (`pagefleet.workers.cli.embedded`), the benchmarks and the tests start fleets with. Workers get this
    process's environment, the broker and `env`; whatever started stops on exit."""

    def __init__(
        self,
        workdir: Path,
        workers: Sequence[tuple[str, int | None]] = (),
        *,
        broker_url: str | None = None,
        env: Mapping[str, str] | None = None,
        logdir: Path | None = None,
        redis: RedisServer | None = None,
    ) -> None:
        self.workdir = workdir
        self.logdir = logdir or workdir
        self.queue_spec = tuple(workers)
        self.broker_url = broker_url
        self.extra_env = dict(env or {})
        self.redis = redis if redis is not None or broker_url is not None else RedisServer(workdir)
        self.workers: list[WorkerProcess] = []
        self.env: dict[str, str] = {}

    def start(self) -> "Fleet":
        try:
            if self.broker_url is None and self.redis is not None:
                self.broker_url = self.redis.start()
            assert self.broker_url is not None
            self.env = {
                **os.environ,
                "PAGEFLEET_BROKER__URL": self.broker_url,
                "PAGEFLEET_BROKER__RESULT_BACKEND": self.broker_url,
                **self.extra_env,
            }
            self.logdir.mkdir(parents=True, exist_ok=True)
            for queues, concurrency in self.queue_spec:
                self.add_worker(queues, concurrency)
        except BaseException:
            self.stop()
            raise
        return self

    def add_worker(self, queues: str, concurrency: int | None = None) -> WorkerProcess:
        worker = WorkerProcess(
            queues,
            default_concurrency(queues) if concurrency is None else concurrency,
            self.env,
            self.logdir,
        )
        self.workers.append(worker)
        return worker

    def dead_worker(self) -> WorkerProcess | None:
        return next((w for w in self.workers if not w.alive()), None)

    def redis_died(self) -> bool:
        return self.redis is not None and (
            self.redis.proc is None or self.redis.proc.poll() is not None
        )

    def stop(self, timeout_s: float = 20.0) -> None:
        for worker in self.workers:
            worker.stop(timeout_s)
        if self.redis is not None:
            self.redis.stop()

    def __enter__(self) -> "Fleet":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
