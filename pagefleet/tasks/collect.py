"""pagefleet.collect: the chord body. Collects the document once every page is present
(`pagefleet.workers.collect.finish`). `collect_after_error` (the chord's error callback) tries the same.

Neither ever finalizes a document with missing pages: a page may still be redelivered or running.
While pages are missing they retry for a while, then leave the job to the watchdog, which
re-dispatches what is missing and only then finishes it (`pagefleet.collect_final`)."""

from __future__ import annotations

import logging

from celery import Task

from pagefleet.workers.app import task
from pagefleet.workers.collect import stream
from pagefleet.workers.collect.document import PagesMissing
from pagefleet.workers.collect.finish import finish

log = logging.getLogger(__name__)


def _collect_or_wait(request_task: Task, spec: dict) -> dict:
    """Collect if every page is there; else retry with backoff, then leave it to the watchdog."""
    try:
        return finish(spec, final_attempt=False)
    except PagesMissing as exc:
        retries = request_task.request.retries
        if retries < request_task.max_retries:
            raise request_task.retry(exc=exc, countdown=min(2**retries, 30)) from exc
        log.warning("job %s: %s; the watchdog takes over", spec.get("job_id"), exc.message)
        return {"job_id": spec.get("job_id"), "waiting": exc.message}


@task("pagefleet.collect", bind=True, max_retries=6)
def collect(self, spec: dict) -> dict:
    return _collect_or_wait(self, spec)


@task("pagefleet.collect_after_error", bind=True, max_retries=6)
def collect_after_error(self, spec: dict) -> dict:
    if not self.request.retries:
        stream.stop(spec["job_id"])  # a split task collecting with the ranges gives up: one failed
    return _collect_or_wait(self, spec)
