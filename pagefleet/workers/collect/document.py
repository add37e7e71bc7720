"""The collect stage as plain functions (the Celery tasks are thin adapters over these).

collect_document: page by page, in page order: present? → edit map replayed → into document.json,
                  document.md, text.txt, chunks.jsonl; then report.json → work state removed
collect_held:     the same for a document its split task decided whole, from its records in memory
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pagefleet.workers import metrics
from pagefleet.workers.collect import assembly, chunks
from pagefleet.workers.errors import PagefleetError
from pagefleet.workers.ladder.accept import failed_record
from pagefleet.workers.ladder.ocr_structure import ensure_blocks
from pagefleet.workers.model import DocumentRecord, JobSpec, PageRecord, RouterInfo, SourceInfo
from pagefleet.workers.pdf.fetch import evict
from pagefleet.workers.review import reviewed
from pagefleet.workers.settings import PIPELINE_VERSION, Settings
from pagefleet.workers.store import artifacts, keys, work
from pagefleet.workers.store.storage import Storage, open_storage


@dataclass
class Held:
    manifest: dict[str, Any]
    records: list[PageRecord]
    storage: Storage  # the one the split task opened: the artifacts go there too


class PagesMissing(PagefleetError):
    code = "pages_missing"
    retryable = True


def collect_document(
    job: JobSpec,
    settings: Settings,
    *,
    final_attempt: bool,
    on_complete: Callable[[], None] | None = None,
    ready: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Assemble and store the artifacts, page by page (`pagefleet.workers.collect.assembly`: one range's records in
    memory at a time). Raises PagesMissing (retryable) at the first page not recorded yet, unless
    final_attempt. `on_complete` runs once every page is there (or this is the final attempt),
    before anything is written; `ready(first)` before each range is read (`work.iter_records`)."""
    storage = open_storage(job.storage, settings)
    try:
        manifest = storage.get_json(keys.job_manifest(job.job_id))
    except KeyError:  # its split has not stored it yet, or a collect of the job has just removed it
        raise PagesMissing(f"job {job.job_id}: no manifest stored") from None
    found = work.iter_records(storage, job.job_id, manifest, ready)
    result, counted = assemble(
        job,
        settings,
        storage,
        manifest,
        found,
        final_attempt=final_attempt,
        on_complete=on_complete,
    )
    metrics.Recorder().document(job.job_id, *counted)  # never raises
    storage.delete_prefix(keys.work(job.job_id))
    return result


def collect_held(job: JobSpec, settings: Settings, held: Held) -> tuple[dict[str, Any], Counted]:
    """`collect_document` for a document the split task decided whole (`Held`): its records from
    memory; there is no work state to read or remove. Its metrics come back for the caller to
    count in the round trip that marks the job done (`metrics.counted_once`)."""
    found = ((record.number, record) for record in held.records)
    return assemble(job, settings, held.storage, held.manifest, found, final_attempt=False)


Counted = tuple[str, Counter[str], dict[str, Any]]  # a document's status, page series and report


def assemble(
    job: JobSpec,
    settings: Settings,
    storage: Storage,
    manifest: dict[str, Any],
    found: Iterator[tuple[int, PageRecord | None]],
    *,
    final_attempt: bool,
    on_complete: Callable[[], None] | None = None,
) -> tuple[dict[str, Any], Counted]:
    """The artifacts of the pages `found` gives ((number, record or None), in page order) stored
    under the manifest's prefix: the work both collections share, without the metrics' round trip
    or the work state's removal (`collect_document`, `collect_held`; `make budget` times it alone)."""
    head = DocumentRecord(
        pipeline_version=PIPELINE_VERSION,
        job_id=job.job_id,
        source=SourceInfo(**manifest["source"]),
        status="accepted",
        page_count=int(manifest["page_count"]),
        options=manifest["options"],
        pages=[],
    )

    Path(settings.storage.cache_dir).mkdir(
        parents=True, exist_ok=True
    )  # where a big document's spools go
    built = assembly.Assembly(settings.storage.cache_dir, head)
    try:
        for chunk in chunks.replayed(_pages(job, manifest, found, built, final_attempt), head):
            built.chunk(chunk)
        if on_complete is not None:
            on_complete()
        document, report = built.store(storage, manifest["artifact_prefix"], manifest)
    finally:
        built.close()
    review = reviewed.after_collect(
        storage, manifest["artifact_prefix"]
    )  # a reviewed document: its decisions again
    evict(job.job_id, settings)  # the job is finished: its cached S3 source goes
    status = review["status"] if review else document.status
    return (
        {
            "job_id": job.job_id,
            "status": status,
            "routes": report["routes"],
            "artifact_prefix": manifest["artifact_prefix"],
            "storage": job.storage,
            "page_count": head.page_count,
            **(
                {"review": {k: review[k] for k in ("reviewed", "pending", "rejected", "stale")}}
                if review
                else {}
            ),
        },
        (document.status, built.counts, report),
    )


def _pages(
    job: JobSpec,
    manifest: dict[str, Any],
    found: Iterator[tuple[int, PageRecord | None]],
    built: assembly.Assembly,
    final_attempt: bool,
) -> Iterator[PageRecord]:
    """The records `found` gives, each verified and added to `built` as it is read: a page not
    recorded fails the collection (or, on the final attempt, is recorded as missing)."""
    structured = manifest["options"].get("structure", True)
    repaired = bool(manifest.get("repaired"))
    for number, record in found:
        if record is None:
            if not final_attempt:
                raise PagesMissing(f"job {job.job_id}: page {number} not recorded yet")
            record = failed_record(
                number,
                RouterInfo(source="default", script="unknown"),
                [],
                ["page_missing"],
                layer={},
            )
        if structured:
            record = ensure_blocks(record)  # OCR pages: blocks from a VLM's Markdown or paragraphs
        if repaired:
            record = repaired_warning(record)
        yield built.add(artifacts.verified(record))


def repaired_warning(record: PageRecord) -> PageRecord:
    """A page of a file MuPDF had to repair (truncated, a broken xref) warns `repaired`: what it
    holds was read from a rebuilt file, and report.json counts it."""
    if "repaired" in record.quality.warnings:
        return record
    quality = record.quality.model_copy(update={"warnings": [*record.quality.warnings, "repaired"]})
    return record.model_copy(update={"quality": quality})
