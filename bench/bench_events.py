"""Bucket uploads through the event receiver into a warm fleet (`make bench`'s events rows, or alone).

    .venv/bin/python bench/bench_events.py CORPUS [--documents 500] [--repeats 1]

M one-page PDFs are put into the S3 server on loopback (moto), then announced to `pagefleet events`
(a subprocess, as deployed) by webhook POSTs sent one after another, the next after the last one's
answer — how MinIO's webhook target delivers a burst of uploads — and timed from the first POST
to every job done, results to S3:

    webhook          a POST enqueues its job: a task and a fresh sandbox child a document
    webhook, inbox   `--inbox-list`: a POST is queued on a Redis list; the receiver's bridge
                     gathers a burst's events while split tasks wait on the broker and sends them
                     as batches (`pagefleet.workers.intake.bridge`)

beside the same M objects submitted at once (`submit.enqueue_many`: batches) and one M-page
document of the same pages, both from S3: the fleet's best case for many documents and its pace
on one. The sender's own time is in the wall time (each POST waits for its answer).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import bench_docs  # noqa: E402
from tests.support.warm_fleet import RunResult, WarmFleet, scratch  # noqa: E402

TOKEN = "bench-" + uuid.uuid4().hex[:12]
STRUCTURE_OFF = {
    "PAGEFLEET_EVENTS__OPTIONS__STRUCTURE": "false"
}  # as the other throughput rows: text only
WAYS = ("webhook", "inbox", "at once", "one")
WORK = {
    "webhook": "{m} uploads, webhook: a POST each, one after another",
    "inbox": "{m} uploads, webhook with --inbox-list",
    "at once": "{m} uploads, submitted at once",
    "one": "one {m}-page upload",
}


def upload(files: list[Path], bucket: str) -> list[dict[str, Any]]:
    """Put the files into `bucket`; MinIO-shaped webhook bodies announcing each, in order."""
    from pagefleet.workers.settings import get_settings
    from pagefleet.workers.store.s3_clients import s3_client

    client = s3_client(get_settings())
    if not client.bucket_exists(bucket):
        client.make_bucket(bucket)
    bodies = []
    for path in files:
        key = f"in/{path.name}"
        etag = client.fput_object(
            bucket, key, str(path), content_type="application/pdf"
        ).etag.strip('"')
        record = {
            "eventVersion": "2.0",
            "eventSource": "minio:s3",
            "eventTime": "2026-12-04T00:00:00.000Z",
            "eventName": "s3:ObjectCreated:Put",
            "s3": {
                "bucket": {"name": bucket},
                "object": {"key": key, "size": path.stat().st_size, "eTag": etag},
            },
        }
        bodies.append(
            {"EventName": "s3:ObjectCreated:Put", "Key": f"{bucket}/{key}", "Records": [record]}
        )
    return bodies


def specs(bodies: list[dict[str, Any]], output: str) -> list[Any]:
    """The job each body's upload becomes, as the receiver makes it (same settings, same id)."""
    from pagefleet.workers.fleet import jobs
    from pagefleet.workers.intake.events import build_intake
    from pagefleet.workers.intake.parse import parse_event_payload
    from pagefleet.workers.settings import EventSettings, Options

    settings = EventSettings(output=output, head_objects=False, options=Options(structure=False))
    intake = build_intake(settings, jobs.client())
    return [intake.spec_for(parse_event_payload(body).objects[0]) for body in bodies]


@contextlib.contextmanager
def receiver(workdir: Path, output: str, inbox: str | None) -> Iterator[str]:
    """`pagefleet events` in a subprocess on a free port (with `--inbox-list` when `inbox`); its URL."""
    from pagefleet.workers.fleet.launcher import free_port
    from pagefleet.workers.settings import get_settings

    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "pagefleet.workers.cli.main",
        "events",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--token-env",
        "BENCH_EVENTS_TOKEN",
        "--output",
        output,
        "--broker",
        get_settings().broker.url,
    ]
    argv += ["--inbox-list", inbox] if inbox else []
    log = (workdir / "logs" / f"events-{port}.log").open("wb")
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        env=dict(os.environ, BENCH_EVENTS_TOKEN=TOKEN, **STRUCTURE_OFF),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError):
                urllib.request.urlopen(url + "/healthz", timeout=1)
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"pagefleet events did not start: see {log.name}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def post_each(url: str, bodies: list[dict[str, Any]]) -> None:
    """One POST after another on one kept-alive connection; a 503 is sent again after a pause."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    try:
        for body in bodies:
            data = json.dumps(body).encode()
            while True:
                conn.request("POST", "/events", data, headers)
                response = conn.getresponse()
                answer = response.read()
                if response.status == 200:
                    break
                if response.status != 503:
                    raise RuntimeError(f"receiver answered {response.status}: {answer[:200]!r}")
                time.sleep(0.05)
    finally:
        conn.close()


def runs(
    fleet: WarmFleet,
    tmp: Path,
    corpus: Path,
    m: int,
    repeats: int = 1,
    s3_out: bool = False,
    ways: tuple[str, ...] = tuple(WAYS),
) -> dict[str, list[RunResult]]:
    """Each way in turn, `repeats` rounds: the uploads announced by webhook, with and without the
    inbox; the same objects submitted at once; one m-page document; all from S3, results to a
    local folder (`s3_out`: to S3 — five PUTs a document, on moto slower than the fleet's work)."""
    from pagefleet.workers.split.submit import enqueue_many

    bucket = f"bench-in-{uuid.uuid4().hex[:6]}"
    out = (
        fleet.make_bucket(f"bench-out-{uuid.uuid4().hex[:6]}")
        if s3_out
        else (tmp / "events-out").as_uri()
    )
    bodies = upload(bench_docs.one_page_pdfs(corpus, m, tmp / "uploads"), bucket)
    big = upload(
        [bench_docs.digital_pdf(corpus, m, tmp / f"upload-{m}.pdf", fonts_per_page=True)], bucket
    )
    results: dict[str, list[RunResult]] = {way: [] for way in ways}
    inboxes = {"webhook": None, "inbox": "pagefleet:bench-inbox"}
    announced = {"at once": bodies, "one": big}
    for i in range(repeats):
        for way in ways:
            output = f"{out}/{way.replace(' ', '-')}-{i}"  # the job id holds the output: every run is new jobs
            if way in inboxes:
                with receiver(tmp, output, inboxes[way]) as url:
                    ids = [spec.job_id for spec in specs(bodies, output)]
                    results[way].append(
                        fleet.measure(lambda: post_each(url, bodies), ids, f"{way}{i}")
                    )
            else:
                jobs = specs(announced[way], output)
                results[way].append(
                    fleet.measure(
                        lambda: enqueue_many(jobs), [spec.job_id for spec in jobs], f"s3{way}{i}"
                    )
                )
    return results


def events_rows(results: dict[str, list[RunResult]], m: int) -> list[Any]:
    """Each way's median run as a row (`WORK` names them)."""
    from bench.fleet_rows import fleet_row, median_run

    times = max(len(got) for got in results.values())
    note = f"median of {times} runs" if times > 1 else ""
    return [
        fleet_row(WORK[way].format(m=m), median_run(got, lambda r: r.wall), note)
        for way, got in results.items()
    ]


def lines(rows: list[Any], m: int) -> list[str]:
    """The uploads' pages/s beside one m-page upload's, and the inbox's gain, where the rows are there."""
    found = {
        way: next(
            (r for r in rows if r.work == WORK[way].format(m=m) and r.system == "fleet"), None
        )
        for way in WORK
    }
    one = found["one"]
    if one is None or not one.pps:
        return []
    out = [
        f"{m} uploads / one {m}-page upload, from S3: "
        + ", ".join(
            f"{way} {row.pps / one.pps:.2f}"
            for way in ("webhook", "inbox", "at once")
            if (row := found[way])
        )
    ]
    if found["webhook"] and found["inbox"] and found["webhook"].pps:
        out.append(
            f"webhook with --inbox-list / webhook alone: {found['inbox'].pps / found['webhook'].pps:.2f}×"
        )
    return out


def main(argv: list[str]) -> int:
    from bench import fleet_rows

    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--documents", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--ways", nargs="+", choices=WAYS, default=list(WAYS))
    ap.add_argument(
        "--s3-out", action="store_true", help="results to S3 too (moto: its PUTs dominate)"
    )
    ap.add_argument(
        "--s3-delay-ms",
        type=float,
        default=0.0,
        help="reach the S3 server through tests/support/latency_proxy.py: this much later each way",
    )
    args = ap.parse_args(argv)
    tmp = scratch()
    try:
        with WarmFleet(tmp, s3=True, s3_delay_ms=args.s3_delay_ms) as fleet:
            fleet_rows.warm_up(fleet, tmp, args.corpus.resolve(), (tmp / "out").as_uri())
            got = runs(
                fleet,
                tmp,
                args.corpus.resolve(),
                args.documents,
                args.repeats,
                args.s3_out,
                tuple(args.ways),
            )
            rows = events_rows(got, args.documents)
    finally:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    where = "S3 in and out" if args.s3_out else "from S3, results to a local folder"
    delay = f", S3 {args.s3_delay_ms:g} ms away each way" if args.s3_delay_ms else ""
    fleet_rows.print_table(
        rows, f"bucket uploads through `pagefleet events` into a warm fleet, {where}{delay}"
    )
    print("\n".join(lines(rows, args.documents)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
