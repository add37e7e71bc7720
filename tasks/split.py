"""pagefleet.split: rung 1 for every page in this task, then one chord per document for the rest."""

from __future__ import annotations

import logging

from celery import chord

from workers import jobs
from workers.app import task
from workers.jobs import JobState
from workers.model import JobSpec
from workers.pipeline import SplitOutcome, split_document
from workers.settings import get_settings

log = logging.getLogger(__name__)
@task("pagefleet.split", bind=True)
def split(self, spec: dict) -> dict:
    job = JobSpec.model_validate(spec)
    settings = get_settings()
    state = jobs.get(job.job_id).get("state")
    if state in (JobState.OCR, JobState.COLLECTING, *jobs.TERMINAL):  # a redelivery or a duplicate
        return {"job_id": job.job_id, "skipped": f"already {state}"}
    lock = jobs.acquire(f"split:{job.job_id}", settings.task_time_limit + 60)
    if lock is None:
        return {"job_id": job.job_id, "skipped": "already splitting"}
    try:
        jobs.update(job.job_id, state=JobState.SPLITTING, filename=job.filename, storage=job.storage)
        outcome = split_document(job, settings)
        log.info("job %s: %d pages, %d accepted from the text layer, pending %s",  # no file names at INFO
                 job.job_id, outcome.page_count, outcome.accepted, outcome.pending)
        if outcome.error:
            jobs.update(job.job_id, state=JobState.ERROR, status="error", error_code=outcome.error["code"],
                        error_message=outcome.error["message"])
            jobs.announce({"job_id": job.job_id, "status": "error", "error": outcome.error, "storage": job.storage})
            return outcome.as_dict()
        jobs.update(job.job_id, state=JobState.OCR if outcome.pending else JobState.COLLECTING,
                    pages=outcome.page_count, pages_done=outcome.accepted)
        dispatch(spec, outcome, settings.vlm.batch_size)
        return outcome.as_dict()
    finally:
        jobs.release(lock)


def dispatch(spec: dict, outcome: SplitOutcome, gpu_batch: int) -> None:
    """One chord per document: a CPU task per page, GPU tasks per batch; the collector as body."""
    from tasks.collect import collect, collect_after_error
    from tasks.ocr import ocr_cpu, ocr_gpu

    job_id = outcome.job_id
    hidden = {"argsrepr": f"(job {job_id})", "kwargsrepr": "{}"}  # task events and Flower never show file names
    header = [ocr_cpu.si(spec, [n]).set(task_id=f"{job_id}-p{n}", **hidden) for n in outcome.pending.get("cpu", [])]
    gpu_pages = outcome.pending.get("gpu", [])
    for i in range(0, len(gpu_pages), gpu_batch):
        batch = gpu_pages[i:i + gpu_batch]
        header.append(ocr_gpu.si(spec, batch).set(task_id=f"{job_id}-g{batch[0]}", **hidden))
    body = collect.si(spec).set(task_id=f"{job_id}-collect", **hidden).on_error(collect_after_error.si(spec).set(**hidden))
    if header:
        chord(header)(body)
    else:
        body.apply_async()
