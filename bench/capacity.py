"""What one page costs the shared parts of a fleet: Redis and the object store (`make capacity`).

    python bench/capacity.py CORPUS [--quick] [--markdown docs/capacity.md]

A real fleet on this machine (pagefleet.workers.fleet.launcher.Fleet: its own redis-server, one split/collect
worker and one cpu worker of concurrency 2) stores to moto's S3 server on loopback, which counts
every request it serves (tests/support/s3_server.py, `count`). Sources are uploaded to an input
bucket first and submitted as `s3://` objects, as the bucket trigger submits them; the upload
itself is not counted. For each workload:

    Redis   `INFO commandstats` (calls) and `INFO stats` (total_net_input_bytes, total_net_output_bytes)
            before and after, less what this process asked (INFO, the done-notice subscription)
            and less the fleet's idle traffic over the same time (workers polling their queues,
            measured over a quiet window first)
    S3      requests by operation and body bytes in and out, at the server

Workloads: born-digital pages in one document, a 1000-page document, small one-page documents
submitted at once, and image-only pages (OCR on the cpu queue). --quick makes each smaller.
Options are the defaults (structure on, OCR auto) with the page and size limits raised.

The table ends with the ceilings the figures imply (docs/capacity.md explains them), and the
last line is `redis_ops_per_page=X s3_requests_per_page=Y` for the born-digital document.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import bench_docs  # noqa: E402
from tests.support.s3_server import MotoServer  # noqa: E402

FULL = {"digital": 100, "big": 1000, "small": 100, "scanned": 6}
QUICK = {"digital": 20, "big": 200, "small": 20, "scanned": 2}
IDLE_WINDOW_S = 3.0
OWN_COMMANDS = ("info", "subscribe", "unsubscribe", "ping")  # this process's, never the fleet's
# Planning figures for the ceilings (docs/capacity.md says where each comes from): a single-threaded
# Redis primary kept at half of the ~100k simple commands/s one core serves; one S3 prefix
# partition's documented request rates; a 10 Gbit/s NIC at half.
REDIS_BUDGET_OPS = 50_000
REDIS_BUDGET_BYTES = 10e9 / 8 / 2
S3_WRITES_PER_PREFIX = 3_500
S3_READS_PER_PREFIX = 5_500
S3_WRITE_OPS = {
    "PutObject",
    "UploadPart",
    "Multipart",
    "DeleteObject",
    "DeleteObjects",
    "CreateBucket",
}


@dataclass
class Usage:
    """What a workload cost: Redis calls by command and bytes, S3 requests by operation and bytes."""

    redis_calls: dict[str, int] = field(default_factory=dict)
    redis_in: int = 0
    redis_out: int = 0
    s3_requests: dict[str, int] = field(default_factory=dict)
    s3_in: int = 0
    s3_out: int = 0

    @property
    def redis_ops(self) -> int:
        return sum(self.redis_calls.values())

    @property
    def s3_total(self) -> int:
        return sum(self.s3_requests.values())


@dataclass
class Row:
    name: str
    documents: int
    pages: int
    wall: float
    usage: Usage

    def per_page(self, value: float) -> float:
        return value / self.pages if self.pages else 0.0


def redis_snapshot(r: Any) -> tuple[dict[str, int], int, int]:
    stats = r.info("stats")
    commands = {
        name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in r.info("commandstats").items()
    }
    return commands, int(stats["total_net_input_bytes"]), int(stats["total_net_output_bytes"])


def usage_between(
    before: tuple[Any, Any], after: tuple[Any, Any], idle: Usage | None = None, seconds: float = 0.0
) -> Usage:
    """The difference of two (redis snapshot, S3 counts) pairs, less `idle` per second × `seconds`."""
    (rb, sb), (ra, sa) = before, after
    calls = {c: n - rb[0].get(c, 0) for c, n in ra[0].items() if c not in OWN_COMMANDS}
    used = Usage(
        {c: n for c, n in calls.items() if n > 0},
        ra[1] - rb[1],
        ra[2] - rb[2],
        {
            op: n - sb["requests"].get(op, 0)
            for op, n in sa["requests"].items()
            if n > sb["requests"].get(op, 0)
        },
        sa["bytes_in"] - sb["bytes_in"],
        sa["bytes_out"] - sb["bytes_out"],
    )
    if idle is not None and seconds > 0:
        for command, rate in idle.redis_calls.items():
            left = used.redis_calls.get(command, 0) - round(rate * seconds)
            if left > 0:
                used.redis_calls[command] = left
            else:
                used.redis_calls.pop(command, None)
        used.redis_in = max(0, used.redis_in - round(idle.redis_in * seconds))
        used.redis_out = max(0, used.redis_out - round(idle.redis_out * seconds))
    return used


class CapacityFleet:
    """The fleet, the counting S3 server and this process's view of both."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.moto = MotoServer(tls=False, count=True)
        self.fleet: Any = None
        self.r: Any = None
        self.idle = Usage()
        self.serial = 0

    def __enter__(self) -> "CapacityFleet":
        import redis

        from pagefleet.workers.app import use_broker
        from pagefleet.workers.fleet.launcher import Fleet

        self.workdir.mkdir(parents=True, exist_ok=True)
        self.moto.start()
        os.environ.update(self.moto.env())
        os.environ["PAGEFLEET_STORAGE__CACHE_DIR"] = str(self.workdir / "cache")
        self.fleet = Fleet(
            self.workdir,
            (("split,collect", 2), ("cpu", 2)),
            env={"PAGEFLEET_GPU__ENABLED": "0", "OMP_THREAD_LIMIT": "1"},
            logdir=self.workdir / "logs",
        ).start()
        use_broker(self.fleet.broker_url or "")
        self.r = redis.Redis.from_url(self.fleet.broker_url)
        for bucket in ("capacity-in", "capacity-out"):
            self._client().make_bucket(bucket)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fleet is not None:
            self.fleet.stop()
        self.moto.stop()

    @staticmethod
    def _client() -> Any:
        from pagefleet.workers.settings import get_settings
        from pagefleet.workers.store.s3_clients import s3_client

        return s3_client(get_settings())

    def snapshot(self) -> tuple[Any, Any]:
        return redis_snapshot(self.r), self.moto.counts()

    def measure_idle(self) -> None:
        """The fleet's traffic with nothing to do, per second (subtracted from every workload)."""
        before = self.snapshot()
        time.sleep(IDLE_WINDOW_S)
        used = usage_between(before, self.snapshot())
        self.idle = Usage(
            {c: n / IDLE_WINDOW_S for c, n in used.redis_calls.items()},  # type: ignore[misc]
            used.redis_in / IDLE_WINDOW_S,
            used.redis_out / IDLE_WINDOW_S,
        )  # type: ignore[arg-type]

    def upload(self, files: list[Path]) -> list[Any]:
        """Each file as an object of the input bucket, and the job spec the bucket trigger would send."""
        from pagefleet.workers.settings import Options
        from pagefleet.workers.split.submit import spec_for_object

        opts = Options.model_validate({"max_pages": 100_000, "max_bytes": 4 * 1024**3})
        client, specs = self._client(), []
        for path in files:
            self.serial += 1
            key = f"incoming/{self.serial:05d}-{path.name}"
            etag = client.fput_object("capacity-in", key, str(path)).etag
            specs.append(
                spec_for_object(
                    "capacity-in",
                    key,
                    "s3://capacity-out",
                    opts,
                    size=path.stat().st_size,
                    etag=etag,
                    force=True,
                )
            )
        return specs

    def run(self, name: str, files: list[Path]) -> Row:
        from pagefleet.workers.fleet import jobs
        from pagefleet.workers.split.submit import enqueue_many

        specs = self.upload(files)
        time.sleep(0.5)  # the workers' traffic after the uploads settles into the idle rate
        with contextlib.closing(self.r.pubsub(ignore_subscribe_messages=True)) as notices:
            notices.subscribe(jobs.DONE_CHANNEL)
            before = self.snapshot()
            started = time.perf_counter()
            enqueue_many(specs)
            self._wait(notices, {s.job_id for s in specs})
            wall = time.perf_counter() - started
            after = self.snapshot()
        pages = 0
        for spec in specs:
            info = jobs.get(spec.job_id)
            if info.get("state") != "done":
                raise RuntimeError(
                    f"{name}: job {spec.job_id} ended {info.get('state')}: {info.get('error_code')}"
                )
            pages += int(info.get("pages") or 0)
        return Row(name, len(specs), pages, wall, usage_between(before, after, self.idle, wall))

    def _wait(self, notices: Any, waiting: set[str], timeout_s: float = 3600) -> None:
        """Until every job's done notice came (their states are read once the counts are taken)."""
        deadline = time.monotonic() + timeout_s
        while waiting and time.monotonic() < deadline:
            message = notices.get_message(timeout=1.0)
            if message is not None:
                with contextlib.suppress(ValueError, TypeError):
                    waiting.discard(json.loads(message["data"]).get("job_id"))
            dead = self.fleet.dead_worker()
            if dead is not None:
                raise RuntimeError(f"worker {dead.name} died:\n{dead.tail()}")
        if waiting:
            raise TimeoutError(f"{len(waiting)} job(s) not done within {timeout_s:.0f} s")


def workloads(corpus: Path, sizes: dict[str, int], tmp: Path) -> list[tuple[str, list[Path]]]:
    return [
        (
            f"born-digital, one {sizes['digital']}-page document",
            [bench_docs.digital_pdf(corpus, sizes["digital"], tmp / "digital.pdf")],
        ),
        (
            f"born-digital, one {sizes['big']}-page document",
            [bench_docs.digital_pdf(corpus, sizes["big"], tmp / "big.pdf")],
        ),
        (
            f"{sizes['small']} one-page documents at once",
            bench_docs.one_page_pdfs(corpus, sizes["small"], tmp / "small"),
        ),
        (
            f"scans, one {sizes['scanned']}-page document (Tesseract)",
            [bench_docs.scanned_pdf(corpus, sizes["scanned"], tmp / "scanned.pdf")],
        ),
    ]


def _kb(value: float) -> str:
    return f"{value / 1024:.1f}"


def table(rows: list[Row], idle: Usage) -> str:
    head = [
        "workload",
        "docs",
        "pages",
        "wall s",
        "Redis cmds/page",
        "Redis KB in/page",
        "Redis KB out/page",
        "S3 requests/page",
        "S3 writes/page",
        "S3 KB in/page",
        "S3 KB out/page",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        u = row.usage
        writes = sum(n for op, n in u.s3_requests.items() if op in S3_WRITE_OPS)
        cells = [
            row.name,
            str(row.documents),
            str(row.pages),
            f"{row.wall:.2f}",
            f"{row.per_page(u.redis_ops):.1f}",
            _kb(row.per_page(u.redis_in)),
            _kb(row.per_page(u.redis_out)),
            f"{row.per_page(u.s3_total):.2f}",
            f"{row.per_page(writes):.2f}",
            _kb(row.per_page(u.s3_in)),
            _kb(row.per_page(u.s3_out)),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    idle_ops = sum(idle.redis_calls.values())
    lines += [
        "",
        f"Idle fleet (subtracted above): {idle_ops:.1f} Redis commands/s, {_kb(idle.redis_in)} KB/s in, "
        f"{_kb(idle.redis_out)} KB/s out.",
    ]
    for row in rows:
        top = sorted(row.usage.redis_calls.items(), key=lambda kv: -kv[1])[:8]
        ops = sorted(row.usage.s3_requests.items(), key=lambda kv: -kv[1])
        lines.append(
            f"\n{row.name}: Redis "
            + ", ".join(f"{c} {row.per_page(n):.2f}" for c, n in top)
            + " a page; S3 "
            + ", ".join(f"{op} {row.per_page(n):.2f}" for op, n in ops)
            + " a page"
        )
    return "\n".join(lines)


def ceilings(rows: list[Row], cores: int) -> str:
    """Pages/s one Redis and one S3 prefix carry at the measured costs, and the nodes that feeds."""
    head = [
        "workload",
        "one Redis, by commands",
        "one Redis, by bytes",
        "one S3 prefix, writes",
        "one S3 prefix, reads",
        "pages/s a core here",
        "16-core CPU nodes one Redis feeds",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        u = row.usage
        writes = sum(n for op, n in u.s3_requests.items() if op in S3_WRITE_OPS)
        reads = u.s3_total - writes
        by_ops = REDIS_BUDGET_OPS / max(row.per_page(u.redis_ops), 1e-9)
        by_bytes = REDIS_BUDGET_BYTES / max(row.per_page(u.redis_in + u.redis_out), 1e-9)
        per_core = row.pages / row.wall / cores
        cells = [
            row.name,
            f"{by_ops:,.0f}",
            f"{by_bytes:,.0f}",
            f"{S3_WRITES_PER_PREFIX / max(row.per_page(writes), 1e-9):,.0f}",
            f"{S3_READS_PER_PREFIX / max(row.per_page(reads), 1e-9):,.0f}",
            f"{per_core:.1f}",
            f"{min(by_ops, by_bytes) / (16 * per_core):,.0f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpus", type=Path, nargs="?", default=ROOT.parent / "shared" / "corpus")
    ap.add_argument("--quick", action="store_true", help=f"smaller workloads: {QUICK}")
    ap.add_argument(
        "--markdown", type=Path, help="also write the tables as this docs page's latest run"
    )
    args = ap.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    tmp = Path(tempfile.mkdtemp(prefix="pagefleet-capacity-"))
    inputs = workloads(args.corpus, sizes, tmp)
    with CapacityFleet(tmp / "fleet") as fleet:
        fleet.run("warm-up", [bench_docs.digital_pdf(args.corpus, 2, tmp / "warm.pdf")])
        fleet.measure_idle()
        rows = [fleet.run(name, files) for name, files in inputs]
    cores = os.cpu_count() or 1
    body = (
        table(rows, fleet.idle) + f"\n\nCeilings at these costs, in pages/s ({cores} cores here; "
        "planning figures in docs/capacity.md):\n\n" + ceilings(rows, cores)
    )
    print(body)
    if args.markdown:
        from bench import page

        shown = [
            os.path.relpath(a, ROOT) if Path(a).is_dir() else a for a in (argv or sys.argv[1:])
        ]
        command = "python bench/capacity.py " + " ".join(shown)
        page.write(args.markdown, body, command)
    digital = rows[0]
    print(
        f"redis_ops_per_page={digital.per_page(digital.usage.redis_ops):.1f} "
        f"s3_requests_per_page={digital.per_page(digital.usage.s3_total):.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
