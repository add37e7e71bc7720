"""A job's work state in storage, one object per range (the split stage's pages are divided into
ranges: `pagefleet.workers.split.ranges`).

Every range writes one object, `.pagefleet/work/<job>/ranges/<first>-<last>.json` = {"records":
[accepted or quarantined page records], "pending": [pages that climb]}, so storage round trips grow
with ranges, not pages. With structure on, a document of several ranges is decided without blocks
first; each object also holds its pages' layout evidence ("layouts"), and once every range is in,
the document-wide font statistics and running furniture are read from all of them
(`pagefleet.workers.split.pages.structure_plan`) and a task per range (`structure_range`, a chord) adds
the blocks and the table check, rewriting its object once ("structured").
Pages the OCR stage finishes keep one object each (`pages/<n>.json`): they are few and slow anyway.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from pagefleet.workers.model import PageRecord, PendingPage
from pagefleet.workers.store import keys
from pagefleet.workers.store.storage import Storage


@dataclass
class RangeOutcome:
    first: int
    last: int
    accepted: int = 0
    pending: dict[str, list[int]] = field(default_factory=dict)  # queue -> page numbers

    def as_dict(self) -> dict[str, Any]:
        return {
            "first": self.first,
            "last": self.last,
            "accepted": self.accepted,
            "pending": self.pending,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RangeOutcome":
        return cls(
            int(data["first"]),
            int(data["last"]),
            int(data["accepted"]),
            {q: list(map(int, ns)) for q, ns in data["pending"].items()},
        )


def key(job_id: str, first: int, last: int) -> str:
    return keys.work(job_id, "ranges", f"{first:05d}-{last:05d}.json")


_LAYOUT_FIELDS = (
    "number",
    "text",
    "height",
    "layout",
)  # what the document-wide structure pass reads


def store(
    storage: Storage,
    job_id: str,
    outcome: RangeOutcome,
    records: Sequence[PageRecord],
    pending: Sequence[PendingPage],
    pages: Sequence[dict[str, Any]] | None = None,
) -> None:
    """`pages`: the range's extracted pages when their blocks wait for the document-wide structure
    pass (`layouts`: each page's number, raw text, height and layout evidence)."""
    state: dict[str, Any] = {
        "outcome": outcome.as_dict(),
        "records": [r.model_dump(mode="json") for r in records],
        "pending": [p.model_dump(mode="json") for p in pending],
    }
    if pages is not None:
        state["layouts"] = [{k: page[k] for k in _LAYOUT_FIELDS if k in page} for page in pages]
    storage.put_json(key(job_id, outcome.first, outcome.last), state, compact=True)


def _stored(storage: Storage, name: str) -> bytes | None:
    """A range object's bytes; None while the range is not written."""
    try:
        return storage.get_bytes(name)
    except KeyError:
        return None


def states(
    storage: Storage, job_id: str, manifest: dict[str, Any]
) -> list[tuple[str, dict[str, Any]]]:
    """(storage key, range object) for every range written so far, in page order."""
    found = []
    for first, last in manifest.get("ranges") or []:
        name = key(job_id, first, last)
        if (data := _stored(storage, name)) is not None:
            found.append((name, json.loads(data.decode("utf-8"))))
    return found


def stored_outcome(storage: Storage, job_id: str, first: int, last: int) -> RangeOutcome | None:
    """A range's outcome as its object recorded it; None while the range is not written yet."""
    try:
        return RangeOutcome.from_dict(storage.get_json(key(job_id, first, last))["outcome"])
    except KeyError:
        return None


class _Numbered(BaseModel):
    number: int


class _RangeRecords(BaseModel):
    """What the collector reads of a range object: its records, and which pages climbed."""

    records: list[PageRecord]
    pending: list[_Numbered]


def iter_records(
    storage: Storage,
    job_id: str,
    manifest: dict[str, Any],
    ready: Callable[[int], None] | None = None,
) -> Iterator[tuple[int, PageRecord | None]]:
    """(number, record) for every page of the job in page order, one range object at a time (the
    range's records, then its pages the OCR stage finished, one object each): the collector never
    holds more than one range. None for a page not recorded yet (its range object, or its OCR
    page's object, is not written). `ready(first)`, when given, is called before a range is read
    (`pagefleet.workers.collect.stream.Waiter`: it returns once that range is stored)."""
    count = int(manifest["page_count"])
    number = 1
    for first, last in sorted((int(a), int(b)) for a, b in manifest.get("ranges") or []):
        for n in range(number, min(first, count + 1)):  # pages no range covers: one object each
            yield n, _page_object(storage, job_id, n)
        if ready is not None:
            ready(first)
        found = _range_records(storage, job_id, first, last)
        for n in range(max(first, number), min(last, count) + 1):
            yield n, found.get(n)
        number = max(number, last + 1)
    for n in range(number, count + 1):
        yield n, _page_object(storage, job_id, n)


def _range_records(storage: Storage, job_id: str, first: int, last: int) -> dict[int, PageRecord]:
    data = _stored(storage, key(job_id, first, last))
    if data is None:
        return {}  # not written yet: its pages are missing
    # parsed and validated in one pass (pydantic's JSON reader: no dict of every page first)
    state = _RangeRecords.model_validate_json(data)
    found = {record.number: record for record in state.records}
    for page in state.pending:
        record = _page_object(storage, job_id, page.number)
        if record is not None:
            found[page.number] = record
    return found


def _page_object(storage: Storage, job_id: str, number: int) -> PageRecord | None:
    try:
        return PageRecord.model_validate(storage.get_json(keys.page(job_id, number)))
    except KeyError:
        return None


def pending_page(storage: Storage, job_id: str, number: int) -> PendingPage:
    """A climbing page's rung-1 state (the OCR stage's input). Raises KeyError."""
    try:
        return PendingPage.model_validate(storage.get_json(keys.pending(job_id, number)))
    except KeyError:
        pass
    manifest = storage.get_json(keys.job_manifest(job_id))
    for first, last in manifest.get("ranges") or []:
        if first <= number <= last:
            state = storage.get_json(key(job_id, first, last))
            for raw in state["pending"]:
                if int(raw["number"]) == number:
                    return PendingPage.model_validate(raw)
    raise KeyError(keys.pending(job_id, number))
