"""pagefleet.collect: the chord body. Checks every page is present, writes the artifacts, marks the
job done and announces it. `collect_after_error` runs it anyway when the chord errored."""

from __future__ import annotations

import logging

from workers import jobs
from workers.app import app
from workers.errors import BrokerUnavailable, StorageError
from workers.model import JobSpec
from workers.notify import notify
from workers.pipeline import PagesMissing, collect_document
from workers.settings import get_settings

log = logging.getLogger(__name__)
TRANSIENT = (StorageError, BrokerUnavailable, ConnectionError)


def _finish(spec: dict, *, final_attempt: bool) -> dict:
    job = JobSpec.model_validate(spec)
    jobs.update(job.job_id, state="collecting")
    result = collect_document(job, get_settings(), final_attempt=final_attempt)
    jobs.update(job.job_id, state="done", status=result["status"], routes=result["routes"],
                artifact_prefix=result["artifact_prefix"])
    notify(job, result)
    log.info("job %s %s: %s %s", job.job_id, job.filename, result["status"], result["routes"])
    return result


@app.task(name="pagefleet.collect", bind=True, autoretry_for=TRANSIENT, retry_backoff=True,
          retry_jitter=True, max_retries=6)
def collect(self, spec: dict) -> dict:
    try:
        return _finish(spec, final_attempt=self.request.retries >= self.max_retries)
    except PagesMissing as exc:
        raise self.retry(exc=exc, countdown=min(2 ** self.request.retries, 30)) from exc


@app.task(name="pagefleet.collect_after_error", autoretry_for=TRANSIENT, retry_backoff=True, max_retries=5)
def collect_after_error(spec: dict) -> dict:
    return _finish(spec, final_attempt=True)
