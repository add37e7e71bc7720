"""`pagefleet deadletter list|replay|clear`: the dead-letter store (a Redis list, newest last).

    list   [--job ID]           one JSON record a line: job_id, page, reason, at, …
    replay [--job ID]           send again what a record stands for and remove it: a failed
                                callback is posted again (pagefleet.callback); anything else
                                (a page past its delivery cap, a job finished by the watchdog)
                                re-runs its job, forced
    clear  [--job ID]           remove records (all, or one job's)

Records hold the job spec (or the job's Redis record still does), so replay needs nothing else.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import redis
from rich.console import Console

from pagefleet.workers.fleet import jobs
from pagefleet.workers.errors import BrokerUnavailable


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "deadletter", help="list, replay or clear dead-lettered pages, jobs and callbacks"
    )
    p.add_argument(
        "action",
        nargs="?",
        default="list",
        choices=("list", "replay", "clear"),
        help="list dead letters (default), replay them, or clear them",
    )
    p.add_argument("--job", help="only this job's records")
    p.add_argument("--broker", help="Redis broker URL (default: PAGEFLEET_BROKER__URL)")
    p.set_defaults(handler=_handler)


def _records(job: str | None) -> list[tuple[str, dict[str, Any]]]:
    raw = jobs.client().lrange(jobs.DEADLETTER, 0, -1)
    out = []
    for item in raw:
        try:
            record = json.loads(item)
        except ValueError:
            record = {"job_id": None, "reason": "unreadable"}
        if job is None or record.get("job_id") == job:
            out.append((item, record))
    return out


def _spec(record: dict[str, Any]) -> dict[str, Any] | None:
    if record.get("spec"):
        return dict(record["spec"])
    raw = jobs.get(str(record.get("job_id"))).get("spec")
    return json.loads(raw) if raw else None


def replay_one(record: dict[str, Any]) -> str:
    """Send again what one record stands for; what was done, in words."""
    from pagefleet.workers.app import send
    from pagefleet.workers.model import JobSpec
    from pagefleet.workers.split.submit import enqueue

    job_id = str(record.get("job_id"))
    if record.get("reason") == "callback_failed":
        send(
            "pagefleet.callback",
            [record["callback_url"], record["notice"]],
            queue="notify",
            label=f"(job {job_id})",
        )
        return "callback sent again"
    spec = _spec(record)
    if spec is None:
        return "skipped: the job's spec expired"
    enqueue(JobSpec.model_validate({**spec, "force": True}))
    return "job re-run (forced)"


def _handler(args: argparse.Namespace, console: Console) -> int:
    from pagefleet.workers.app import use_broker

    if args.broker:
        use_broker(args.broker)
    try:
        records = _records(args.job)
        r = jobs.client()
        for raw, record in records:
            if args.action == "list":
                print(json.dumps(record, ensure_ascii=False))
                continue
            if args.action == "replay":
                console.print(
                    f"job {record.get('job_id')} page {record.get('page')}: {replay_one(record)}"
                )
            r.lrem(jobs.DEADLETTER, 1, raw)
    except redis.RedisError as exc:
        raise BrokerUnavailable(f"redis unavailable: {exc}") from exc
    if args.action != "list":
        console.print(f"pagefleet deadletter: {args.action}: {len(records)} record(s)")
    return 0
