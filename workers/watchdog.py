"""The per-document deadline watchdog: a lost chord header message means the collector never runs,
so a job that has made no progress for `job_deadline_s` is finished anyway — the collector runs
with whatever pages exist (missing ones become `failed` pages) — and dead-lettered for replay.

    pagefleet watchdog [--once] [--interval S] [--deadline S]
"""

from __future__ import annotations

import argparse
import json
import logging
import time

from rich.console import Console

from workers import jobs
from workers.settings import get_settings

log = logging.getLogger(__name__)
STALLABLE = ("ocr", "collecting")


def stalled(deadline_s: float, now: float | None = None) -> list[str]:
    """Jobs past the OCR split whose last update is older than the deadline."""
    now = time.time() if now is None else now
    r = jobs.client()
    found = []
    for job_id in r.zrangebyscore("pagefleet:jobs", 0, now - deadline_s):
        info = jobs.get(job_id, r)
        if info.get("state") in STALLABLE and info.get("spec"):
            found.append(job_id)
    return found


def sweep(deadline_s: float, now: float | None = None) -> list[str]:
    from workers.app import send

    swept = []
    for job_id in stalled(deadline_s, now):
        info = jobs.get(job_id)
        spec = json.loads(info["spec"])
        if not jobs.acquire(f"watchdog:{job_id}", 3600):
            continue
        jobs.dead_letter({"job_id": job_id, "page": None, "reason": "deadline", "state": info.get("state"),
                          "filename": spec.get("filename"), "storage": spec.get("storage")})
        send("pagefleet.collect_after_error", [spec], queue="collect", label=f"(job {job_id})")
        jobs.update(job_id, state="collecting", watchdog=time.time())
        log.warning("job %s stalled in %s for > %.0fs: finishing it with what it has", job_id, info.get("state"), deadline_s)
        swept.append(job_id)
    return swept


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("watchdog", help="finish jobs that made no progress within the deadline")
    p.add_argument("--once", action="store_true")
    p.add_argument("--interval", type=float, default=60.0)
    p.add_argument("--deadline", type=float, help="seconds without progress (default: settings.job_deadline_s)")
    p.add_argument("--broker")
    p.set_defaults(handler=_handler)


def _handler(args: argparse.Namespace, console: Console) -> int:
    from workers.app import use_broker

    if args.broker:
        use_broker(args.broker)
    deadline = args.deadline if args.deadline is not None else get_settings().job_deadline_s
    while True:
        for job_id in sweep(deadline):
            console.print(f"pagefleet watchdog: finished stalled job {job_id}")
        if args.once:
            return 0
        time.sleep(args.interval)
