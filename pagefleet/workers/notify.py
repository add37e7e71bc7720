"""Completion notices: a JSON message on the Redis channel `pagefleet:done`, and — when the job has
a callback URL — an HTTP POST made by its own task (`pagefleet.callback`, pagefleet/tasks/callback.py) on its own queue (`notify`)
and worker, never inside the collector: a slow or failing endpoint delays only its own notices. The task retries with
backoff; when the retries are spent the notice is dead-lettered (`pagefleet deadletter replay`
sends it again). Every POST carries `Idempotency-Key: <job id>`, and a notice that got a 2xx is
remembered, so a redelivered task does not post it twice."""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from typing import Any

import redis

from pagefleet.workers.fleet import jobs
from pagefleet.workers.errors import BrokerUnavailable, PagefleetError
from pagefleet.workers.model import JobSpec

log = logging.getLogger(__name__)


class CallbackFailed(PagefleetError):
    code = "callback_failed"
    retryable = True


def notify(job: JobSpec, result: dict[str, Any], run: str | None = None) -> None:
    """`run`: the job's run id when the caller has read it already."""
    if run is None:
        run = jobs.get(job.job_id).get(
            "run", ""
        )  # one run of the job: a forced re-run notifies again
    notice = notice_for(job, result, run)
    jobs.announce(notice)
    call_back(job, notice)


def notice_for(job: JobSpec, result: dict[str, Any], run: str) -> dict[str, Any]:
    return {
        "job_id": job.job_id,
        "run": run,
        "filename": job.filename,
        "source": job.source,
        **result,
    }


def call_back(job: JobSpec, notice: dict[str, Any]) -> None:
    """The job's callback, when it has one: its own task posts it (never the collector)."""
    if job.callback_url:
        from pagefleet.workers.app import send

        send(
            "pagefleet.callback",
            [job.callback_url, notice],
            queue="notify",
            label=f"(job {job.job_id})",
        )


def post_callback(url: str, notice: dict[str, Any], timeout_s: float = 10.0) -> int:
    """One POST; the status on 2xx, else CallbackFailed (retryable)."""
    body = json.dumps(notice, ensure_ascii=False).encode("utf-8")
    headers = {"Content-Type": "application/json", "Idempotency-Key": str(notice.get("job_id", ""))}
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            status = int(response.status)
    except urllib.error.HTTPError as exc:
        raise CallbackFailed(f"callback answered {exc.code}") from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise CallbackFailed(f"callback failed: {type(exc).__name__}") from exc
    if not 200 <= status < 300:
        raise CallbackFailed(f"callback answered {status}")
    return status


def _delivered_key(notice: dict[str, Any]) -> str:
    return f"pagefleet:callback:{notice.get('job_id', '')}:{notice.get('run', '')}"


def already_delivered(notice: dict[str, Any]) -> bool:
    try:
        return bool(jobs.client().exists(_delivered_key(notice)))
    except redis.RedisError as exc:
        raise BrokerUnavailable(f"redis unavailable: {exc}") from exc


def mark_delivered(notice: dict[str, Any], ttl_s: int) -> None:
    try:
        jobs.client().set(_delivered_key(notice), "1", ex=ttl_s)
    except redis.RedisError as exc:
        raise BrokerUnavailable(f"redis unavailable: {exc}") from exc
