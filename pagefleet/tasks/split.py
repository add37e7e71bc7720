"""pagefleet.split, pagefleet.split_batch and pagefleet.split_range: rung 1 for a document's pages
(`pagefleet.workers.split`), then its range tasks, its OCR chord or its collection (`pagefleet.tasks.chords`)."""

from __future__ import annotations

from pagefleet.tasks import chords
from pagefleet.workers.app import task
from pagefleet.workers.fleet import jobs
from pagefleet.workers.model import JobSpec
from pagefleet.workers.settings import get_settings
from pagefleet.workers.split import batch, job
from pagefleet.workers.split.pages import split_range as split_pages


@task("pagefleet.split", bind=True)
def split(self, spec: dict) -> dict:
    outcome = job.split_one(spec, chords, task_id=self.request.id or "")
    # another split holds the job: asked again until its owner is done or seen dead (then taken over)
    if outcome.get("retry_in") and self.request.retries < job.held_retries(get_settings()):
        raise self.retry(countdown=outcome["retry_in"], max_retries=None)
    return outcome


@task("pagefleet.split_batch")
def split_batch(specs: list[dict], submission: str = "") -> list[dict]:
    """The small documents of one submission, one after another, sharing one sandbox child
    (`pagefleet.workers.split.batch`); none of them collects with its ranges."""
    return batch.split_batch(
        specs,
        submission,
        lambda spec, ahead: job.split_one(spec, chords, may_stream=False, ahead=ahead),
    )


@task("pagefleet.split_range")
def split_range(spec: dict, first: int, last: int) -> dict:
    document = JobSpec.model_validate(spec)
    settings = get_settings()
    outcome = split_pages(document, first, last, settings)
    stored = first if job.streams(document, settings) else None
    jobs.page_done(document.job_id, outcome.accepted, stored_range=stored)
    return outcome.as_dict()
