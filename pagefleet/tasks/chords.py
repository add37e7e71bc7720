"""The chords a document's tasks send (no task here): a document's OCR chord, with the collector's
error callback; its range tasks' chord lives in `pagefleet.tasks.range_chords`. This module is what a split
hands its chords to (`pagefleet.workers.split.job.Dispatch`)."""

from __future__ import annotations

from celery import chord

from pagefleet.tasks.range_chords import dispatch_ranges
from pagefleet.tasks.signatures import after_error, signature
from pagefleet.workers.collect.document import PagesMissing
from pagefleet.workers.collect.finish import finish
from pagefleet.workers.fleet import jobs
from pagefleet.workers.settings import get_settings
from pagefleet.workers.split.job import SENT, climbing
from pagefleet.workers.split.pages import SplitOutcome

__all__ = ["climb", "dispatch", "dispatch_ranges"]


def dispatch(spec: dict, outcome: SplitOutcome, gpu_batch: int) -> None:
    """One chord per document: a CPU task per page, GPU tasks per batch; the collector as body."""
    job_id = outcome.job_id
    header = [
        signature("pagefleet.ocr_cpu", spec, [n], task_id=f"{job_id}-p{n}", job_id=job_id)
        for n in outcome.pending.get("cpu", [])
    ]
    gpu_pages = outcome.pending.get("gpu", [])
    for i in range(0, len(gpu_pages), gpu_batch):
        batch = gpu_pages[i : i + gpu_batch]
        header.append(
            signature(
                "pagefleet.ocr_gpu", spec, batch, task_id=f"{job_id}-g{batch[0]}", job_id=job_id
            )
        )
    body = signature(
        "pagefleet.collect", spec, task_id=f"{job_id}-collect", job_id=job_id
    ).on_error(after_error(spec))
    if header:
        chord(header)(body)
    else:
        try:  # nothing climbs (a document of several ranges): collect here and now, not in a second task
            finish(spec, final_attempt=False)
        except PagesMissing:
            body.apply_async()
    jobs.update(
        job_id, **{SENT: 1}
    )  # only now: a split lost before this is redone by its redelivery


def climb(spec: dict, outcome: SplitOutcome) -> dict:
    """The document's pages that climb go out as its OCR chord; a job already final sends nothing."""
    if not climbing(outcome):
        return {"job_id": outcome.job_id, "skipped": "already final"}
    dispatch(spec, outcome, get_settings().gpu.vlm.batch_size)
    return outcome.as_dict()
