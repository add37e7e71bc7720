"""pagefleet.ocr_cpu / pagefleet.ocr_gpu: rungs 2–4 for pages that failed rung 1.

Each delivery of a page is counted; past `max_page_attempts` (a page that keeps killing its
worker) the page is finished as failed and dead-lettered instead of redelivered forever.
"""

from __future__ import annotations

import logging
import threading
import time

from celery.exceptions import SoftTimeLimitExceeded

from pagefleet.workers.app import task
from pagefleet.workers.errors import TaskDeadline
from pagefleet.workers.fleet import deadline, jobs
from pagefleet.workers.fleet.jobs import JobState
from pagefleet.workers.ladder.ocr_stage import failed_page, ocr_pages, summary
from pagefleet.workers.model import JobSpec
from pagefleet.workers.settings import get_settings

log = logging.getLogger(__name__)


def _run(spec: dict, pages: list[int], retries: int = 0) -> dict:
    job = JobSpec.model_validate(spec)
    settings = get_settings()
    if jobs.get(job.job_id).get("state") == JobState.DONE:
        return {"job_id": job.job_id, "skipped": "already done"}
    todo, capped = [], []
    for number in pages:
        if jobs.count_delivery(job.job_id, number, retries) > settings.limits.max_page_attempts:
            capped.append(
                failed_page(
                    job,
                    number,
                    ["attempts_exhausted"],
                    settings,
                    f"delivered more than {settings.limits.max_page_attempts} times",
                )
            )
            jobs.dead_letter(
                {
                    "job_id": job.job_id,
                    "page": number,
                    "reason": "attempts_exhausted",
                    "filename": job.filename,
                    "storage": job.storage,
                }
            )
        else:
            todo.append(number)
    # a task on a thread (a gpu worker's threads pool) keeps its own soft limit: Celery's needs a pool child
    on_thread = threading.current_thread() is not threading.main_thread()
    try:
        with deadline.until(
            time.monotonic() + settings.limits.task_soft_time_limit if on_thread else None
        ):
            records = ocr_pages(job, todo, settings)
    except (SoftTimeLimitExceeded, TaskDeadline):
        records = [failed_page(job, n, ["time_limit"], settings) for n in todo]
    for r in records:
        log.info("job %s page %d: %s via %s", job.job_id, r.number, r.route, r.engine)
    jobs.page_done(job.job_id, len(records) + len(capped))
    return {"job_id": job.job_id, "pages": summary(records + capped)}


@task("pagefleet.ocr_cpu", bind=True)
def ocr_cpu(self, spec: dict, pages: list[int]) -> dict:
    return _run(spec, pages, self.request.retries)


@task("pagefleet.ocr_gpu", bind=True)
def ocr_gpu(self, spec: dict, pages: list[int]) -> dict:
    return _run(spec, pages, self.request.retries)
