"""The fault-drill harness (tests/faults, `pytest -m faults`): a real fleet on loopback that a test
can hurt, and the invariant every drill ends with.

    DrillFleet   its own redis-server (AOF on, restartable on the same port), moto's S3 server
                 behind a TcpProxy that can be cut, Celery worker processes and celery beat (the
                 watchdog), all with short timeouts from the environment
    make_docs    small born-digital PDFs, a distinct text per document and page
    Ledger       what was submitted, and `check()`: every document ends in exactly one of artifacts,
                 a typed error.json or a dead-letter record; every page of an artifact exactly once;
                 no job left in a non-final state

OCR runs with `--ocr force` on a low DPI and the `echo` engine: the drills are about the fleet's
plumbing, not about reading pages, and stay quick on a shared machine.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.tcp_proxy import TcpProxy
from pagefleet.workers.fleet.launcher import Fleet, RedisServer, die_with_parent

FAST_ENV = {
    "PAGEFLEET_LIMITS__TASK_SOFT_TIME_LIMIT": "25",
    "PAGEFLEET_LIMITS__TASK_TIME_LIMIT": "30",
    "PAGEFLEET_BROKER__VISIBILITY_MARGIN_S": "5",  # unacked work back after 35 s
    "PAGEFLEET_BROKER__UNACKED_RESTORE_INTERVAL_S": "2",
    "PAGEFLEET_LIMITS__JOB_DEADLINE_MINUTES": "0.5",  # the watchdog acts after max(30 s, 35 s)
    "PAGEFLEET_LIMITS__WATCHDOG_INTERVAL_S": "4",
    "PAGEFLEET_LIMITS__MAX_REDISPATCH": "3",
    "PAGEFLEET_LIMITS__CALLBACK_TIMEOUT_S": "2",
    "PAGEFLEET_LIMITS__CALLBACK_MAX_RETRIES": "3",
    "PAGEFLEET_LIMITS__CALLBACK_BACKOFF_MAX_S": "2",
    "PAGEFLEET_OCR__CHAINS__CPU_LATIN": '["echo:Drill page read by the echo engine"]',
    "PAGEFLEET_OCR__CHAINS__CPU_DEFAULT": '["echo:Drill page read by the echo engine"]',
    "PAGEFLEET_GPU__ENABLED": "0",
    "PAGEFLEET_STORAGE__S3_ACCESS_KEY": "testing",
    "PAGEFLEET_STORAGE__S3_SECRET_KEY": "testing",
    "PAGEFLEET_STORAGE__S3_REGION": "us-east-1",
    "PAGEFLEET_STORAGE__S3_TIMEOUT_S": "4",  # a stalled S3 request fails inside the 25 s soft limit (twice: one retry)
}
OPTIONS = {"ocr": "force", "dpi": 72}
# FAST_ENV's short task limits, visibility timeout and job deadline put back to the defaults: a
# recovery measured under these owes nothing to them (the visibility timeout is 540 s, the deadline 15 min)
DEFAULT_LIMITS = {
    "PAGEFLEET_LIMITS__TASK_SOFT_TIME_LIMIT": "420",
    "PAGEFLEET_LIMITS__TASK_TIME_LIMIT": "480",
    "PAGEFLEET_BROKER__VISIBILITY_MARGIN_S": "60",
    "PAGEFLEET_BROKER__UNACKED_RESTORE_INTERVAL_S": "10",
    "PAGEFLEET_LIMITS__JOB_DEADLINE_MINUTES": "15",
    "PAGEFLEET_LIMITS__WATCHDOG_INTERVAL_S": "60",
}


def make_docs(folder: Path, count: int, pages: int, tag: str = "") -> list[Path]:
    import pymupdf

    folder.mkdir(parents=True, exist_ok=True)
    tag = tag or uuid.uuid4().hex[:6]
    out = []
    for d in range(count):
        doc = pymupdf.open()
        for p in range(pages):
            page = doc.new_page(width=300, height=200)
            page.insert_text((20, 60), f"Drill {tag} document {d + 1} page {p + 1}", fontsize=11)
            page.insert_text((20, 90), "The fleet must keep every page exactly once.", fontsize=11)
        path = folder / f"drill-{tag}-{d + 1}.pdf"
        doc.save(path)
        doc.close()
        out.append(path)
    return out


@dataclass
class Submitted:
    job_id: str
    prefix: str
    pages: int
    storage: str


@dataclass
class Ledger:
    """What went in; `check` says what came out."""

    bucket: str
    client: Any  # minio client talking to S3 directly (not through the proxy)
    items: list[Submitted] = field(default_factory=list)

    def add(self, job_id: str, prefix: str, pages: int, storage: str) -> None:
        self.items.append(Submitted(job_id, prefix, pages, storage))

    def _json(self, key: str) -> Any | None:
        try:
            response = self.client.get_object(self.bucket, key)
        except Exception:  # noqa: BLE001 - absent
            return None
        try:
            return json.loads(response.read())
        finally:
            response.close()
            response.release_conn()

    def check(self, snapshot: dict[str, Any] | None = None) -> dict[str, Any]:
        """The invariant, for every document submitted; returns the tallies for the drills' table.
        `snapshot`: the job records and dead letters of a fleet already stopped (`DrillFleet.snapshot`):
        its Redis is gone, and the default one is not the fleet's."""
        from pagefleet.workers.fleet import jobs

        records = snapshot["jobs"] if snapshot is not None else None
        letters = snapshot["dead"] if snapshot is not None else jobs.dead_letters()
        dead = {d.get("job_id") for d in letters}
        seen: dict[str, Submitted] = {}
        tally = {
            "documents_in": 0,
            "pages_in": 0,
            "artifacts": 0,
            "errors": 0,
            "dead_lettered": 0,
            "pages_out": 0,
            "lost": 0,
            "problems": [],
        }
        for item in self.items:
            if item.job_id in seen:  # the same job submitted again: one document, counted once
                continue
            seen[item.job_id] = item
            tally["documents_in"] += 1
            tally["pages_in"] += item.pages
            info = records.get(item.job_id, {}) if records is not None else jobs.get(item.job_id)
            self._check_one(item, dead, info, tally)
        return tally

    def _check_one(
        self, item: Submitted, dead: set, info: dict[str, str], tally: dict[str, Any]
    ) -> None:
        prefix = item.prefix  # the object key prefix inside the bucket
        document = self._json(f"{prefix}/document.json")
        error = self._json(f"{prefix}/error.json")
        problems = tally["problems"]
        if document is not None and error is not None:
            problems.append(f"{item.job_id}: both artifacts and error.json")
        if document is not None:
            numbers = sorted(p["number"] for p in document["pages"])
            if numbers != list(range(1, item.pages + 1)):
                problems.append(f"{item.job_id}: pages {numbers}, expected 1..{item.pages}")
            tally["artifacts"] += 1
            tally["pages_out"] += len(numbers)
            tally["lost"] += item.pages - len(set(numbers) & set(range(1, item.pages + 1)))
        elif error is not None:
            if not error.get("code"):
                problems.append(f"{item.job_id}: untyped error.json {error}")
            tally["errors"] += 1
        elif item.job_id in dead:
            tally["dead_lettered"] += 1
        else:
            problems.append(f"{item.job_id}: nothing at all (state {info.get('state')})")
            tally["lost"] += item.pages
        if info and info.get("state") not in ("done", "error"):
            problems.append(f"{item.job_id}: stuck in {info.get('state')}")


def process_group_alive(pgid: int) -> list[int]:
    """Processes still in this process group (an orphan check)."""
    alive = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            alive.append(int(entry))
    return alive


class DrillFleet:
    """Redis (AOF) + S3 behind a proxy + workers + beat, for one drill."""

    def __init__(
        self,
        tmp: Path,
        s3_upstream: str,
        env_extra: dict[str, str] | None = None,
        queues: tuple[tuple[str, int], ...] = (("split,collect", 1), ("cpu", 1), ("notify", 2)),
        beat: bool = True,
        redis_proxy: bool = False,
    ) -> None:
        self.tmp = tmp
        self.redis = RedisServer(tmp, aof=True)  # killed and started again by the drills
        # with `redis_proxy` the workers and beat reach Redis through a proxy of their own (the
        # test process goes straight to it): a drill can stall their connections
        self.redis_proxy = TcpProxy("127.0.0.1", self.redis.port) if redis_proxy else None
        host, port = s3_upstream.split(":")
        self.proxy = TcpProxy(host, int(port))
        self.s3_upstream = s3_upstream
        self.env_extra = env_extra or {}
        self.queue_spec = queues
        self.want_beat = beat
        self.workers: list[Any] = []
        self.beat: subprocess.Popen[bytes] | None = None
        self.groups: list[int] = []
        self.saved_env: dict[str, str | None] = {}
        self.snapshot: dict[str, Any] | None = None  # job records and dead letters, once stopped

    def __enter__(self) -> "DrillFleet":
        from pagefleet.workers.app import use_broker
        from pagefleet.workers.settings import get_settings

        self.redis.start()
        self.proxy.start()
        fleet_redis = self.redis.url
        if self.redis_proxy is not None:
            self.redis_proxy.upstream = (
                "127.0.0.1",
                self.redis.port,
            )  # the port a first start settled on
            fleet_redis = f"redis://{self.redis_proxy.start().endpoint}/0"
        extra = {
            **FAST_ENV,
            "PAGEFLEET_STORAGE__S3_ENDPOINT": self.proxy.endpoint,
            "PAGEFLEET_STORAGE__CACHE_DIR": str(self.tmp / "cache"),
            **self.env_extra,
        }
        self.fleet = Fleet(
            self.tmp, broker_url=fleet_redis, env=extra
        )  # its workers: Redis through the proxy
        for key in (*FAST_ENV, "PAGEFLEET_STORAGE__S3_ENDPOINT"):
            self.saved_env[key] = os.environ.get(key)
            os.environ[key] = extra[key]
        for key in (
            "PAGEFLEET_BROKER__URL",
            "PAGEFLEET_BROKER__RESULT_BACKEND",
        ):  # this process: Redis itself
            self.saved_env[key] = os.environ.get(key)
            os.environ[key] = self.redis.url
        get_settings.cache_clear()
        use_broker(self.redis.url)
        self.fleet.start()
        self.env, self.workers = self.fleet.env, self.fleet.workers
        for queues, concurrency in self.queue_spec:
            self.add_worker(queues, concurrency)
        if self.want_beat:
            self.start_beat()
        return self

    def add_worker(self, queues: str, concurrency: int) -> Any:
        worker = self.fleet.add_worker(queues, concurrency)
        self.groups.append(worker.proc.pid)
        return worker

    def start_beat(self) -> None:
        args = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "pagefleet.workers.app",
            "beat",
            "-s",
            str(self.tmp / "beat-schedule"),
            "--pidfile=",
            "-l",
            "INFO",
            "--logfile",
            str(self.tmp / "beat.log"),
        ]
        self.beat = subprocess.Popen(
            args,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        self.groups.append(self.beat.pid)

    def s3(self) -> Any:
        """A minio client that talks to S3 directly, never through the proxy."""
        from minio import Minio

        return Minio(
            self.s3_upstream,
            access_key="testing",
            secret_key="testing",
            secure=False,
            region="us-east-1",
        )

    def __exit__(self, *exc: object) -> None:
        from pagefleet.workers.settings import get_settings

        self.fleet.stop(timeout_s=10)
        if self.beat is not None and self.beat.poll() is None:
            os.killpg(self.beat.pid, signal.SIGTERM)
            try:
                self.beat.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.beat.pid, signal.SIGKILL)
        self.snapshot = self._snapshot() or self.snapshot  # a second stop keeps the first one's
        self.redis.stop()
        self.proxy.cut()
        if self.redis_proxy is not None:
            self.redis_proxy.cut()
        from pagefleet.workers.app import app

        for key, value in self.saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        get_settings.cache_clear()
        app.conf.broker_url = app.conf.result_backend = os.environ.get("PAGEFLEET_BROKER__URL")

    def _snapshot(self) -> dict[str, Any] | None:
        """Every job record and dead letter of the fleet's Redis, read before it stops."""
        import redis

        try:
            r = redis.Redis.from_url(self.redis.url, decode_responses=True, socket_timeout=5)
            ids = [k.split(":", 2)[2] for k in r.scan_iter("pagefleet:job:*")]
            return {
                "jobs": {i: r.hgetall(f"pagefleet:job:{i}") for i in ids},
                "dead": [json.loads(x) for x in r.lrange("pagefleet:deadletter", 0, -1)],
            }
        except redis.RedisError:
            return None

    def orphans(self) -> list[int]:
        return [pid for group in self.groups for pid in process_group_alive(group)]


# A page that takes a while to read (so a drill can hurt the fleet while pages are in flight):
# the `command:` engine running `sleep` in the pool child's process group.
SLOW_ENGINE_ENV = {
    "PAGEFLEET_OCR__COMMANDS": json.dumps(
        {
            "slow": {
                "argv": ["/bin/sh", "-c", "sleep 2; echo Drill page read slowly", "sh"],
                "timeout_s": 20,
            }
        }
    ),
    "PAGEFLEET_OCR__CHAINS__CPU_LATIN": '["command:slow"]',
    "PAGEFLEET_OCR__CHAINS__CPU_DEFAULT": '["command:slow"]',
}


def children(pid: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(entry))
    return kids


def busy_child(main_pid: int) -> int | None:
    """A pool child of this worker that has a process of its own running (it is reading a page)."""
    return next((c for c in children(main_pid) if children(c)), None)
