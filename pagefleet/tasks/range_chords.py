"""The chords of a big document (no task here): its range tasks, then, with structure on, its
structure tasks, each with the collector's error callback (`pagefleet.tasks.signatures`)."""

from __future__ import annotations

from celery import chord

from pagefleet.tasks.signatures import after_error, signature
from pagefleet.workers.app import app
from pagefleet.workers.ladder.structure import DocumentLayout
from pagefleet.workers.split.pages import SplitOutcome


def dispatch_ranges(spec: dict, job_id: str, left: list[tuple[int, int]], queue: str) -> None:
    """A chord of range tasks (rung 1 for the pages the split task leaves); `split_done` merges
    them with the split task's own range (pages 1 .. the first range's start - 1)."""
    header = [
        signature(
            "pagefleet.split_range",
            spec,
            first,
            last,
            task_id=f"{job_id}-r{first}",
            job_id=job_id,
            queue=queue,
        )
        for first, last in left
    ]
    body = app.signature("pagefleet.split_done", args=(spec, [1, left[0][0] - 1])).set(
        task_id=f"{job_id}-ranges", argsrepr=f"(job {job_id})", kwargsrepr="{}"
    )
    chord(header)(body.on_error(after_error(spec)))


def dispatch_structure(
    spec: dict,
    outcome: SplitOutcome,
    layout: DocumentLayout,
    todo: list[tuple[int, int]],
    queue: str,
) -> None:
    """A chord of structure tasks, one per range still without blocks (each gets the document's
    font statistics and its own pages' furniture); `ranges_structured` sends the OCR chord."""
    job_id = outcome.job_id
    header = [
        signature(
            "pagefleet.structure_range",
            spec,
            first,
            last,
            layout.as_dict(range(first, last + 1)),
            task_id=f"{job_id}-s{first}",
            job_id=job_id,
            queue=queue,
        )
        for first, last in todo
    ]
    body = signature(
        "pagefleet.ranges_structured",
        spec,
        outcome.as_dict(),
        task_id=f"{job_id}-structured",
        job_id=job_id,
    )
    chord(header)(body.on_error(after_error(spec)))
