"""pagefleet.split_done (a big document's range tasks are all done), pagefleet.structure_range
(blocks for one range) and pagefleet.ranges_structured (every range has its blocks): then the
document's OCR chord (`pagefleet.tasks.chords`)."""

from __future__ import annotations

from pagefleet.tasks import chords, range_chords
from pagefleet.workers.app import task
from pagefleet.workers.ladder.structure import DocumentLayout
from pagefleet.workers.model import JobSpec
from pagefleet.workers.settings import get_settings
from pagefleet.workers.split import job
from pagefleet.workers.split.pages import SplitOutcome
from pagefleet.workers.split.pages import structure_range as structure_pages


@task("pagefleet.split_done", bind=True, max_retries=3000)
def split_done(self, results: list[dict], spec: dict, head: list[int]) -> dict:
    """Every range is decided: with structure on, the ranges get their blocks (a chord of
    `structure_range` tasks, one per range, on every core); then the pages that climb go out as
    the document's OCR chord."""
    try:
        done = job.ranges_in(spec, results, head)
    except job.NotYet as wait:  # its split task collects it, or still decides its own pages
        raise self.retry(countdown=wait.countdown) from None
    if done.skipped is not None:
        return done.skipped
    if done.todo:
        range_chords.dispatch_structure(
            spec, done.outcome, done.layout, done.todo, get_settings().advanced.split_range_queue
        )
        return done.outcome.as_dict()
    return chords.climb(spec, done.outcome)


@task("pagefleet.structure_range")
def structure_range(spec: dict, first: int, last: int, layout: dict) -> dict:
    document = JobSpec.model_validate(spec)
    structure_pages(document, first, last, DocumentLayout.from_dict(layout), get_settings())
    return {"job_id": document.job_id, "range": [first, last]}


@task("pagefleet.ranges_structured")
def ranges_structured(spec: dict, outcome: dict) -> dict:
    """Every range has its blocks: the pages that climb go out as the document's OCR chord."""
    return chords.climb(
        spec,
        SplitOutcome(
            outcome["job_id"],
            page_count=outcome["page_count"],
            accepted=outcome["accepted"],
            pending=outcome["pending"],
        ),
    )
