"""A warm fleet for the benchmark: a private Redis + one split/collect worker + one cpu worker of
concurrency 2 (optionally moto's S3 over HTTPS, `tests/support/s3_server.py`), kept running across
measurements.

`WarmFleet.run(files, ...)` submits every file at once and times submit → every job done. Around
each run it measures: the peak RSS of every worker process (the kernel's high-water mark, reset
before the run through /proc/PID/clear_refs), Redis memory (sampled while waiting), and the tasks
the workers ran (their log lines).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from tests.support import fs_quiet
from bench.bench_peers import settle
from tests.support.s3_server import MotoServer


_TICKS_S = 0.02  # a process's CPU is read in 10 ms ticks, user and system apart
# the fleet's processes are sampled (CPU, peak memory) this often during a run: a sample walks the
# process tree once and reads /proc for each process, ~10 ms of this process's CPU on the fleet's two
# cores (two walks twice a second were ~13.5 ms each, ~1.3 % of the machine, taken from the fleet's
# rows and not from the limit's)
_SAMPLE_S = 1.0
_REDIS_SAMPLE_S = 0.1  # Redis's memory: read at most this often, not at every done notice
_NOTICE_PAUSE_S = 0.02  # while more than one job is left: done notices read in batches
_RECHECK_S = 5.0  # every unfinished job's state read again (a notice lost)


@dataclass
class RunResult:
    pages: int
    wall: float
    rss_mb: dict[str, float]  # role -> peak RSS of the largest process in that role
    redis_mb: float
    tasks: int
    routes: dict[str, int] = field(default_factory=dict)
    cpu_s: float = (
        0.0  # CPU seconds the fleet's processes spent (a figure the machine's load barely moves)
    )
    cpu_roles: dict[str, float] = field(default_factory=dict)  # the same by role, and Redis's own
    fs_ms: float = (
        0.0  # creating a folder or file just before the run, ms (`tests/support/fs_quiet.py`)
    )

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.wall if self.wall else 0.0

    @property
    def ms_per_page(self) -> float:
        return 1000 * self.wall / self.pages if self.pages else 0.0


class WarmFleet:
    """Redis + one split/collect worker (prefork × split_concurrency) + one cpu worker (prefork × 2)."""

    def __init__(
        self,
        workdir: Path,
        *,
        s3: bool,
        split_concurrency: int = 2,
        cpu_concurrency: int = 2,
        s3_delay_ms: float = 0.0,
    ) -> None:
        self.workdir = workdir
        self.concurrency = (split_concurrency, cpu_concurrency)
        self.moto = MotoServer(s3_delay_ms).start() if s3 else None
        if self.moto:
            os.environ.update(self.moto.env())
        os.environ["PAGEFLEET_STORAGE__CACHE_DIR"] = str(workdir / "cache")
        self.workers: list[Any] = []
        self.redis: Any = None
        self.fleet: Any = None
        # processes by (pid, start time): pids come round again (pid_max 32768) in a long run
        self._cpu_seen: dict[tuple[int, float], float] = {}
        self._parents: dict[
            tuple[int, float], tuple[int, float]
        ] = {}  # -> its parent, as last seen
        self._role: dict[tuple[int, float], str] = {}  # -> role, fixed at first sight
        self._moved: dict[
            str, float
        ] = {}  # CPU a parent of another role reaped, given back to the child's role
        self._children: dict[
            tuple[int, float], float
        ] = {}  # -> CPU of the children it reaped, so far
        self._grew: dict[
            tuple[int, float], float
        ] = {}  # -> how much that grew since its last sample
        self._zombie: dict[tuple[int, float], bool] = {}  # -> had it exited at its last sample
        self._orphans: set[tuple[int, float]] = (
            set()
        )  # gone without being reaped by a counted parent
        self._sampled = 0.0

    def __enter__(self) -> "WarmFleet":
        from pagefleet.workers.app import use_broker
        from pagefleet.workers.fleet.launcher import Fleet
        from pagefleet.workers.settings import get_settings

        self.fleet = Fleet(
            self.workdir,
            (("split,collect", self.concurrency[0]), ("cpu", self.concurrency[1])),
            env={"PAGEFLEET_GPU__ENABLED": "0", "OMP_THREAD_LIMIT": "1"},
            logdir=self.workdir / "logs",
        ).start()
        self.redis, self.workers = self.fleet.redis, self.fleet.workers
        use_broker(self.fleet.broker_url or "")
        get_settings.cache_clear()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fleet is not None:
            self.fleet.stop()
        if self.moto:
            self.moto.stop()

    def dead_worker(self) -> Any:
        return next((w for w in self.workers if not w.alive()), None)

    def make_bucket(self, name: str) -> str:
        from pagefleet.workers.settings import get_settings
        from pagefleet.workers.store.s3_clients import s3_client

        client = s3_client(get_settings())
        if not client.bucket_exists(name):
            client.make_bucket(name)
        return f"s3://{name}"

    # ------------------------------------------------------------------ measuring

    def _processes(self) -> dict[str, list[psutil.Process]]:
        """Every fleet process by role. A process keeps the role it had when first seen, and the
        fork server's children are sandbox processes by descent: a child that is leaving (or a
        zombie) has no command line to read."""
        roles: dict[str, list[psutil.Process]] = {}
        for worker in self.workers:
            queue = "split" if "split" in worker.name else "cpu"
            with contextlib.suppress(psutil.Error):
                main = psutil.Process(worker.proc.pid)
                sandboxes: set[int] = set()  # parents come before their children
                for proc in [main, *main.children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):
                        key = (proc.pid, proc.create_time())
                        role = self._role.get(key)
                        if role is None:
                            sandbox = proc.ppid() in sandboxes or "forkserver" in " ".join(
                                proc.cmdline()
                            )
                            role = self._role[key] = (
                                "sandbox"
                                if sandbox
                                else (f"{queue}-main" if proc.pid == main.pid else queue)
                            )
                        if role == "sandbox":
                            sandboxes.add(proc.pid)
                        roles.setdefault(role, []).append(proc)
        return roles

    def _reset_peaks(self) -> None:
        for procs in self._processes().values():
            for proc in procs:
                with contextlib.suppress(OSError):
                    Path(f"/proc/{proc.pid}/clear_refs").write_text("5")

    def _peaks(self, tree: dict[str, list[psutil.Process]] | None = None) -> dict[str, float]:
        peaks: dict[str, float] = {}
        for role, procs in (tree or self._processes()).items():
            for proc in procs:
                with contextlib.suppress(OSError):
                    found = re.search(
                        r"VmHWM:\s+(\d+)", Path(f"/proc/{proc.pid}/status").read_text()
                    )
                    if found:  # a process that has exited (a zombie until reaped) has none
                        peaks[role] = max(peaks.get(role, 0.0), int(found.group(1)) / 1024)
        return peaks

    def _sample_peaks(self, tree: dict[str, list[psutil.Process]] | None = None) -> None:
        """Keep every role's peak so far: a process gone by the end of a run (a sandbox child kept
        for a document's ranges, a recycled pool process) had its peak while it lived."""
        for role, mb in self._peaks(tree).items():
            self._peak_seen[role] = max(self._peak_seen.get(role, 0.0), mb)

    def _sample_cpu(self, tree: dict[str, list[psutil.Process]] | None = None) -> None:
        """Remember every fleet process's CPU so far, by pid: a pool child recycled mid-run (and the
        sandbox server that leaves with it) keeps what it spent. A process counts what it reaped
        (Tesseract, sandbox children) too, except a worker's main process, whose reaped children
        are the pool processes counted here themselves."""
        live: set[tuple[int, float]] = set()
        for procs in (tree or self._processes()).values():
            for proc in procs:
                with contextlib.suppress(psutil.Error):
                    key = (proc.pid, proc.create_time())
                    t = proc.cpu_times()
                    counts_reaped = self._counts_reaped(key)
                    children = t.children_user + t.children_system
                    self._grew[key] = children - self._children.get(
                        key, children
                    )  # reaped since the last sample
                    self._children[key] = children
                    self._cpu_seen[key] = t.user + t.system + (children if counts_reaped else 0.0)
                    parent = proc.parent()
                    if parent is not None:
                        self._parents[key] = (parent.pid, parent.create_time())
                    self._zombie[key] = proc.status() == psutil.STATUS_ZOMBIE
                    live.add(key)
        self._drop_reaped(live)

    def _drop_reaped(self, live: set[tuple[int, float]]) -> None:
        """A sampled process gone since, that a parent counting what it reaps did reap, is dropped:
        its time is in that parent's now (else a sandbox fork or a Tesseract run alive at a sample
        counts twice), and goes back from the parent's role to its own (a pool process that
        restarts its sandbox server reaps it: that CPU stays sandbox CPU). A live parent is the only
        one that can have reaped it; a parent that has died (a zombie) did only if what it reaped
        grew by as much since its last sample. Otherwise the process was orphaned (a cpu pool
        process recycled after 200 tasks leaves its sandbox server to init) and keeps what it
        spent: dropped, it took its whole life's sandbox CPU out of the row it left in (the S3 row
        read -65 to -86 ms a page)."""
        by_parent: dict[tuple[int, float] | None, list[tuple[int, float]]] = {}
        for key in self._cpu_seen:
            if key not in live and key not in self._orphans:
                by_parent.setdefault(self._parents.get(key), []).append(key)
        for parent, keys in by_parent.items():
            if parent not in live or not self._counts_reaped(
                parent
            ):  # (an orphan's old parent pid may be another's now)
                self._orphans.update(keys)
                continue
            spent = sum(self._cpu_seen[k] for k in keys) - _TICKS_S * len(keys)
            if self._zombie[parent] and self._grew[parent] < spent:
                self._orphans.update(keys)
                continue
            for key in keys:
                seconds = self._cpu_seen.pop(key)
                if self._role[key] != self._role[parent]:
                    self._moved[self._role[key]] = self._moved.get(self._role[key], 0.0) + seconds
                    self._moved[self._role[parent]] = (
                        self._moved.get(self._role[parent], 0.0) - seconds
                    )

    def _counts_reaped(self, key: tuple[int, float]) -> bool:
        """Does its sample include what it reaped (all but a worker's main process)?"""
        return not self._role[key].endswith("-main")

    def _cpu_roles(self) -> dict[str, float]:
        """CPU seconds so far by role (a reaped sandbox fork is in its server's, the same role), and
        the Redis server's, which the fleet's figure leaves out."""
        self._sample_cpu()
        roles: dict[str, float] = dict(self._moved)
        for key, seconds in self._cpu_seen.items():
            roles[self._role[key]] = roles.get(self._role[key], 0.0) + seconds
        with contextlib.suppress(psutil.Error):
            t = psutil.Process(self.redis.proc.pid).cpu_times()
            roles["redis"] = t.user + t.system
        return roles

    def _task_lines(self) -> int:
        return sum(
            path.read_text(errors="replace").count(" succeeded in ")
            for path in (self.workdir / "logs").glob("worker-*.log")
        )

    def run(self, files: list[Path], storage: str, options: dict[str, Any], tag: str) -> RunResult:
        from pagefleet.workers.settings import Options
        from pagefleet.workers.split.submit import enqueue_many, spec_for_path

        opts = Options.model_validate(options)
        specs = [spec_for_path(str(f), storage, f"{tag}/{f.stem}", opts, force=True) for f in files]
        # one submission: small documents go in batches (split_batch_documents)
        return self.measure(lambda: enqueue_many(specs), [s.job_id for s in specs], tag)

    def measure(self, submit: Callable[[], object], ids: list[str], tag: str) -> RunResult:
        """`submit()` (sends the jobs `ids` however it likes) timed until every one of them is done."""
        from pagefleet.workers.fleet import jobs
        from pagefleet.workers.pdf.forkserver import IDLE_S

        r = jobs.client()
        fs_ms, _ = fs_quiet.wait_quiet(
            self.workdir / "out" / ".fsprobe"
        )  # beside the local runs' artifacts
        settle()
        # a sandbox child kept for a document's next range leaves after IDLE_S without one: a run
        # of the same file right after the last would find it warm (MuPDF's fonts and objects of
        # that file loaded), which no new document does
        time.sleep(IDLE_S + 0.3)
        self._reset_peaks()
        self._peak_seen: dict[str, float] = {}
        tasks_before, roles_before = self._task_lines(), self._cpu_roles()
        self._sampled = time.monotonic()  # the first sample a second in, not as the fleet starts
        with contextlib.closing(r.pubsub(ignore_subscribe_messages=True)) as notices:
            notices.subscribe(jobs.DONE_CHANNEL)  # before the jobs go: no done notice comes unheard
            started = time.perf_counter()
            submit()
            redis_peak, finished, states = self._wait(r, notices, ids)
        wall = finished - started  # not the reading of every job's record afterwards
        time.sleep(0.3)  # the last task's log line
        routes: dict[str, int] = {}
        pages = 0
        for info in states:
            if info.get("state") != "done":
                raise RuntimeError(
                    f"{tag}: a job ended {info.get('state')}: {info.get('error_code')}"
                )
            pages += int(info.get("pages") or 0)
            for route, n in json.loads(info.get("routes") or "{}").items():
                routes[route] = routes.get(route, 0) + n
        roles = {
            role: seconds - roles_before.get(role, 0.0)
            for role, seconds in self._cpu_roles().items()
        }
        cpu = sum(
            seconds for role, seconds in roles.items() if role != "redis"
        )  # the fleet's own processes
        self._sample_peaks()
        return RunResult(
            pages,
            wall,
            self._peak_seen,
            redis_peak,
            self._task_lines() - tasks_before,
            routes,
            cpu,
            roles,
            fs_ms,
        )

    def _wait(
        self, r: Any, notices: Any, ids: list[str], timeout_s: float = 7200
    ) -> tuple[float, float, list[dict[str, str]]]:
        """(Redis peak MB, when the last job was seen finished, every job's record). Until every job
        is terminal: the fleet's done notices (`notices`, subscribed before the jobs were sent),
        with every unfinished job's state read every `_RECHECK_S` in case one went unheard.
        Polling every job 20 times a second cost the machine's two cores more than the fleet's own
        Redis traffic with 500 documents in flight. This process shares the fleet's two cores, so
        it wakes at most every `_NOTICE_PAUSE_S` while more than one job is left and reads Redis's
        memory at most every `_REDIS_SAMPLE_S`: woken by every notice, with an INFO call each and
        the jobs' states read every second, it spent ~0.22 s of CPU over 500 one-page documents
        (2.5 s), ~0.01 s over one 500-page document."""
        from pagefleet.workers.fleet import jobs

        deadline = time.monotonic() + timeout_s
        redis_peak = 0.0
        waiting = set(ids)
        checked = measured = time.monotonic()
        while waiting and time.monotonic() < deadline:
            message = notices.get_message(timeout=0.25)
            while message is not None:
                with contextlib.suppress(ValueError, TypeError):
                    waiting.discard(json.loads(message["data"]).get("job_id"))
                message = notices.get_message(timeout=0)
            if time.monotonic() - measured > _REDIS_SAMPLE_S:
                redis_peak = max(redis_peak, int(r.info("memory")["used_memory"]) / 2**20)
                measured = time.monotonic()
            if time.monotonic() - self._sampled > _SAMPLE_S:
                tree = self._processes()  # one walk of the process tree for both samples
                self._sample_cpu(tree)
                self._sample_peaks(tree)
                self._sampled = time.monotonic()
            if time.monotonic() - checked > _RECHECK_S:
                waiting = self._unfinished(r, waiting)
                checked = time.monotonic()
            dead = self.dead_worker()
            if dead is not None:
                raise RuntimeError(f"worker {dead.name} died:\n{dead.tail()}")
            if len(waiting) > 1:  # notices queue meanwhile; the last job's is waited for at once
                time.sleep(_NOTICE_PAUSE_S)
        finished = time.perf_counter()
        if waiting and self._unfinished(r, waiting):
            raise TimeoutError("the fleet did not finish in time")
        redis_peak = max(redis_peak, int(r.info("memory")["used_memory"]) / 2**20)
        return redis_peak, finished, [jobs.get(job_id) for job_id in ids]

    @staticmethod
    def _unfinished(r: Any, ids: set[str]) -> set[str]:
        from pagefleet.workers.fleet import jobs

        order = sorted(ids)
        pipe = r.pipeline(transaction=False)
        for job_id in order:
            pipe.hget(f"pagefleet:job:{job_id}", "state")
        return {
            job_id for job_id, state in zip(order, pipe.execute()) if state not in jobs.TERMINAL
        }


def scratch() -> Path:
    return Path(tempfile.mkdtemp(prefix="pagefleet-bench-"))
