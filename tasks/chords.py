"""The chords a document's tasks send (no task here): a document's OCR chord, its range tasks and
its structure tasks, each with the collector's error callback. Tasks are named, not imported, so no
task module imports another."""

from __future__ import annotations

from typing import Any

from celery import Signature, chord

from workers.app import app
from workers.collect.document import PagesMissing
from workers.collect.finish import finish
from workers.fleet import jobs
from workers.ladder.structure import DocumentLayout
from workers.settings import get_settings
from workers.split.pages import SplitOutcome
from workers.split.job import SENT, climbing


def _si(name: str, *args: Any, job_id: str, **options: Any) -> Signature:
    """An immutable signature of task `name`, labelled with the job only: task events and Flower
    never show file names."""
    return app.signature(name, args=args, immutable=True).set(argsrepr=f"(job {job_id})", kwargsrepr="{}",
                                                               **options)


def _after_error(spec: dict) -> Signature:
    """A document chord's error callback (collect what there is, record the failure)."""
    return _si("pagefleet.collect_after_error", spec, job_id=spec["job_id"])


def dispatch(spec: dict, outcome: SplitOutcome, gpu_batch: int) -> None:
    """One chord per document: a CPU task per page, GPU tasks per batch; the collector as body."""
    job_id = outcome.job_id
    header = [_si("pagefleet.ocr_cpu", spec, [n], task_id=f"{job_id}-p{n}", job_id=job_id)
              for n in outcome.pending.get("cpu", [])]
    gpu_pages = outcome.pending.get("gpu", [])
    for i in range(0, len(gpu_pages), gpu_batch):
        batch = gpu_pages[i:i + gpu_batch]
        header.append(_si("pagefleet.ocr_gpu", spec, batch, task_id=f"{job_id}-g{batch[0]}", job_id=job_id))
    body = _si("pagefleet.collect", spec, task_id=f"{job_id}-collect", job_id=job_id).on_error(_after_error(spec))
    if header:
        chord(header)(body)
    else:
        try:  # nothing climbs (a document of several ranges): collect here and now, not in a second task
            finish(spec, final_attempt=False)
        except PagesMissing:
            body.apply_async()
    jobs.update(job_id, **{SENT: 1})  # only now: a split lost before this is redone by its redelivery


def dispatch_ranges(spec: dict, job_id: str, left: list[tuple[int, int]], queue: str) -> None:
    """A chord of range tasks (rung 1 for the pages the split task leaves); `split_done` merges
    them with the split task's own range (pages 1 .. the first range's start - 1)."""
    header = [_si("pagefleet.split_range", spec, first, last, task_id=f"{job_id}-r{first}", job_id=job_id, queue=queue)
              for first, last in left]
    body = app.signature("pagefleet.split_done", args=(spec, [1, left[0][0] - 1])).set(
        task_id=f"{job_id}-ranges", argsrepr=f"(job {job_id})", kwargsrepr="{}")
    chord(header)(body.on_error(_after_error(spec)))


def dispatch_structure(spec: dict, outcome: SplitOutcome, layout: DocumentLayout, todo: list[tuple[int, int]],
                       queue: str) -> None:
    """A chord of structure tasks, one per range still without blocks (each gets the document's
    font statistics and its own pages' furniture); `ranges_structured` sends the OCR chord."""
    job_id = outcome.job_id
    header = [_si("pagefleet.structure_range", spec, first, last, layout.as_dict(range(first, last + 1)),
                  task_id=f"{job_id}-s{first}", job_id=job_id, queue=queue) for first, last in todo]
    body = _si("pagefleet.ranges_structured", spec, outcome.as_dict(), task_id=f"{job_id}-structured", job_id=job_id)
    chord(header)(body.on_error(_after_error(spec)))


def climb(spec: dict, outcome: SplitOutcome) -> dict:
    """The document's pages that climb go out as its OCR chord; a job already final sends nothing."""
    if not climbing(outcome):
        return {"job_id": outcome.job_id, "skipped": "already final"}
    dispatch(spec, outcome, get_settings().gpu.vlm.batch_size)
    return outcome.as_dict()
