"""pagefleet.collect: the chord body. Checks every page is present, writes the artifacts, marks the
job done and announces it. `collect_after_error` runs it anyway when the chord errored."""

from __future__ import annotations

import logging

from workers import jobs
from workers.app import task
from workers.jobs import JobState
from workers.model import JobSpec
from workers.notify import notify
from workers.pipeline import PagesMissing, collect_document
from workers.settings import get_settings

log = logging.getLogger(__name__)
def _finish(spec: dict, *, final_attempt: bool) -> dict:
    job = JobSpec.model_validate(spec)
    jobs.update(job.job_id, state=JobState.COLLECTING)
    result = collect_document(job, get_settings(), final_attempt=final_attempt)
    jobs.update(job.job_id, state=JobState.DONE, status=result["status"], routes=result["routes"],
                artifact_prefix=result["artifact_prefix"])
    notify(job, result)
    log.info("job %s %s: %s %s", job.job_id, job.filename, result["status"], result["routes"])
    return result


@task("pagefleet.collect", bind=True, max_retries=6)
def collect(self, spec: dict) -> dict:
    try:
        return _finish(spec, final_attempt=self.request.retries >= self.max_retries)
    except PagesMissing as exc:
        raise self.retry(exc=exc, countdown=min(2 ** self.request.retries, 30)) from exc


@task("pagefleet.collect_after_error")
def collect_after_error(spec: dict) -> dict:
    return _finish(spec, final_attempt=True)
