"""pagefleet.split, pagefleet.split_batch and pagefleet.split_range: rung 1 for a document's pages
(`workers.split`), then its range tasks, its OCR chord or its collection (`tasks.chords`)."""

from __future__ import annotations

from tasks import chords
from workers.app import task
from workers.fleet import jobs
from workers.model import JobSpec
from workers.settings import get_settings
from workers.split import batch, job
from workers.split.pages import split_range as split_pages


@task("pagefleet.split")
def split(spec: dict) -> dict:
    return job.split_one(spec, chords)


@task("pagefleet.split_batch")
def split_batch(specs: list[dict], submission: str = "") -> list[dict]:
    """The small documents of one submission, one after another, sharing one sandbox child
    (`workers.split.batch`); none of them collects with its ranges."""
    return batch.split_batch(specs, submission,
                             lambda spec, ahead: job.split_one(spec, chords, may_stream=False, ahead=ahead))


@task("pagefleet.split_range")
def split_range(spec: dict, first: int, last: int) -> dict:
    document = JobSpec.model_validate(spec)
    settings = get_settings()
    outcome = split_pages(document, first, last, settings)
    stored = first if job.streams(document, settings) else None
    jobs.page_done(document.job_id, outcome.accepted, stored_range=stored)
    return outcome.as_dict()
