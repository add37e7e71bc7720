"""Completion notices: a JSON message on the Redis channel `pagefleet:done`, and an HTTP POST to
the job's callback URL when one is configured (best effort, bounded retries, never fatal)."""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from typing import Any

from workers import jobs
from workers.model import JobSpec

log = logging.getLogger(__name__)


def notify(job: JobSpec, result: dict[str, Any]) -> None:
    notice = {"job_id": job.job_id, "filename": job.filename, "source": job.source, **result}
    jobs.announce(notice)
    if job.callback_url:
        post_callback(job.callback_url, notice)


def post_callback(url: str, notice: dict[str, Any], attempts: int = 3, timeout_s: float = 10.0) -> bool:
    body = json.dumps(notice, ensure_ascii=False).encode("utf-8")
    for attempt in range(attempts):
        request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                if 200 <= response.status < 300:
                    return True
        except (urllib.error.URLError, OSError) as exc:
            log.warning("callback %s failed (attempt %d): %s", url, attempt + 1, exc)
        time.sleep(min(2 ** attempt, 5))
    return False
