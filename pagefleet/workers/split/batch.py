"""The small documents of one submission split one after another in one task (`pagefleet.split_batch`,
`pagefleet.workers.split.submit.enqueue_many`), sharing one sandbox child.

Each is its own job as if it came alone: a redelivered batch skips the documents already split, and
a document that fails does not stop the next ones — the first failure is raised once every document
had its turn (a transient one retries the batch, which then finds the others done). The batches of
one `submission` (one producer call) that a worker process runs one after another share that child
too (a fresh child's fork, page faults and cold first page cost ~15 ms of CPU, ~1 ms a document of a
batch of 16); another submission's batch gets a fresh one, and a failed command, `IDLE_S` without a
command, its memory or `sandbox.SHARE_MAX` commands end it (`pagefleet.workers.pdf.forkserver`).
"""

from __future__ import annotations

import contextvars
import functools
import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from pagefleet.workers.fleet import logs
from pagefleet.workers.model import JobSpec
from pagefleet.workers.settings import get_settings
from pagefleet.workers.split.pages import Head, read_heads

# a batch's documents are probed this many to a sandbox command (`source.inspect_many`: one round
# trip through the fork server and one result for all); 1: a command each
PROBE_BATCH = 8

log = logging.getLogger(__name__)

SplitOne = Callable[
    [dict, Callable[[], Head]], dict
]  # (spec, its head read ahead) -> the split's result


def split_batch(specs: list[dict], submission: str, split_one: SplitOne) -> list[dict]:
    """`split_one` of each document in turn, the next documents' heads read ahead; past half the soft
    time limit the rest go on as a batch of their own."""
    from pagefleet.workers.app import send
    from pagefleet.workers.pdf.sandbox import shared_child

    results: list[dict] = []
    failure: BaseException | None = None
    settings = get_settings()
    budget = time.monotonic() + settings.limits.task_soft_time_limit / 2
    token = f"{os.getpid()}:{submission or (specs[0]['job_id'] if specs else '')}"
    with shared_child(token), ThreadPoolExecutor(1, thread_name_prefix="heads") as reader:
        # heads read in order in one thread, a chunk ahead: the sandbox child probes the next
        # chunk's documents while this process gates and stores this chunk's
        heads = Heads(specs, reader, PROBE_BATCH)
        for i, spec in enumerate(specs):
            if (
                i and time.monotonic() > budget
            ):  # slow documents: the rest go on as a batch of their own
                send(
                    "pagefleet.split_batch",
                    [specs[i:], submission],
                    queue="split",
                    label=f"({len(specs) - i} jobs)",
                )
                heads.cancel()  # their documents go with the rest (a chunk already being read is waited for)
                break
            ahead = heads.of(i)
            try:
                with logs.bound(job_id=spec.get("job_id")):
                    results.append(split_one(spec, ahead))
            except Exception as exc:  # noqa: BLE001 - re-raised below, after the batch's other documents
                log.warning(
                    "job %s: split failed in a batch: %s", spec.get("job_id"), type(exc).__name__
                )
                results.append({"job_id": spec.get("job_id"), "failed": type(exc).__name__})
                failure = failure or exc
    if failure is not None:
        raise failure
    return results


class Heads:
    """A batch's documents' heads, read in its reader thread a chunk at a time, each chunk's probes
    in one sandbox command (`read_heads`), and the next chunk asked for as this one's first document
    is decided. Chunks grow 1, 2, 4 … up to `size` documents, so the first document waits for one
    probe, not `size`."""

    def __init__(self, specs: list[dict], reader: ThreadPoolExecutor, size: int) -> None:
        self.specs, self.reader = specs, reader
        self.bounds: list[tuple[int, int]] = []
        first, n = 0, 1
        while first < len(specs):
            self.bounds.append((first, min(first + n, len(specs))))
            first, n = first + n, min(n * 2, max(size, 1))
        self.futures: dict[int, Future[list[Head | Exception]]] = {}

    def _chunk(self, c: int) -> Future[list[Head | Exception]]:
        if c not in self.futures:  # read in this context: the sandbox child's token
            first, last = self.bounds[c]
            self.futures[c] = self.reader.submit(
                contextvars.copy_context().run, heads_of, self.specs[first:last]
            )
        return self.futures[c]

    def of(self, i: int) -> Callable[[], Head]:
        """Document i's head, as `split_one` asks for it."""
        c = next(c for c, (first, last) in enumerate(self.bounds) if first <= i < last)
        future = self._chunk(c)
        if i == self.bounds[c][0] and c + 1 < len(self.bounds):
            self._chunk(c + 1)
        return functools.partial(_pick, future, i - self.bounds[c][0])

    def cancel(self) -> None:
        for future in self.futures.values():
            future.cancel()


def _pick(future: Future[list[Head | Exception]], j: int) -> Head:
    found = future.result()[j]
    if isinstance(found, Exception):
        raise found
    return found


def heads_of(specs: list[dict]) -> list[Head | Exception]:
    """`read_heads` of one chunk of a batch (in the batch's reader thread); a spec that is not a
    valid job is that document's exception."""
    valid: list[JobSpec] = []
    found: list[Head | Exception | None] = []
    for spec in specs:
        try:
            valid.append(JobSpec.model_validate(spec))
            found.append(None)
        except Exception as exc:  # noqa: BLE001 - raised again when its document is split
            found.append(exc)
    read = iter(read_heads(valid, get_settings()))
    return [next(read) if f is None else f for f in found]
