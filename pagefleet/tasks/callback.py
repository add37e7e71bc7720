"""pagefleet.callback: POST a completion notice to the job's callback URL, retried with backoff;
dead-lettered when the retries are spent (see pagefleet/workers/notify.py)."""

from __future__ import annotations

import logging

from pagefleet.workers.app import task
from pagefleet.workers.fleet import jobs
from pagefleet.workers.notify import (
    CallbackFailed,
    already_delivered,
    mark_delivered,
    post_callback,
)
from pagefleet.workers.settings import get_settings

log = logging.getLogger(__name__)


@task("pagefleet.callback", bind=True)
def callback(self, url: str, notice: dict) -> dict:
    rel = get_settings().limits
    job_id = str(notice.get("job_id", ""))
    if already_delivered(notice):
        return {"job_id": job_id, "skipped": "already delivered"}
    try:
        status = post_callback(url, notice, rel.callback_timeout_s)
    except CallbackFailed as exc:
        if self.request.retries >= rel.callback_max_retries:
            jobs.dead_letter(
                {
                    "job_id": job_id,
                    "page": None,
                    "reason": "callback_failed",
                    "detail": exc.message,
                    "callback_url": url,
                    "notice": notice,
                }
            )
            log.warning(
                "job %s: callback dead-lettered after %d retries", job_id, self.request.retries
            )
            return {"job_id": job_id, "dead_lettered": True}
        countdown = min(2**self.request.retries, rel.callback_backoff_max_s)
        raise self.retry(
            exc=exc, countdown=countdown, max_retries=rel.callback_max_retries
        ) from exc
    mark_delivered(notice, rel.job_record_ttl_s)
    return {"job_id": job_id, "status": status}
