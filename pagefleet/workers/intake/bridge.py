"""Bridge for MinIO's Redis notification target (`format=access`).

MinIO RPUSHes one JSON array per event onto a list (the target's `key`):

    [{"Event": [<S3 event record>], "EventTime": "2024-01-01T00:00:00.000Z"}]

The bridge moves each element atomically into a processing list (`BLMOVE src proc LEFT RIGHT`,
so FIFO), turns it into jobs through the same `Intake` as the HTTP receiver (same parser, same
deduplication), and only then removes it from the processing list. A crash between the two
leaves the element in the processing list; the next start replays it, and the deduplication
makes the replay harmless. An element that is not JSON goes to a dead-letter list; a broker or
object-store outage is retried in place, forever, with a pause.

Gathering: while the split queue has a backlog (`hold`, the broker's waiting split tasks), the
workers are busy and a document sent now would only wait, so the bridge holds the events of a burst
for up to `hold_s` (moved to the processing list: as durable as waiting in the source list) until
it has `batch` of them, and sends them as one submission: their small documents go as one
`split_batch` task and share a sandbox child, where an event at a time would cost each document a
task and a fresh child. An idle fleet gets each event at once. This is what makes a webhook's
uploads (one event a request, sent one after another) batch: the receiver's inbox
(`pagefleet events --inbox-list`) puts each POSTed event on a list a bridge drains.

The processing list is shared: a bridge that starts replays every element in it, the in-flight
ones of other bridges on the same list too — the receiver's replicas each drain the shared inbox —
which the deduplication makes harmless (a claim held elsewhere is "in progress": retried until it
is a duplicate), if wasteful; one bridge per MinIO Redis-target list is enough.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from pagefleet.workers.errors import BrokerUnavailable, StorageError
from pagefleet.workers.intake.events import Intake
from pagefleet.workers.intake.parse import EventParseError, parse_event_payload, parse_json

log = logging.getLogger(__name__)


@dataclass
class BridgeStats:
    elements: int = 0
    enqueued: int = 0
    duplicates: int = 0
    dead: int = 0
    submissions: int = 0
    gathered: int = (
        0  # of them, sent after holding the burst for more (the split queue had a backlog)
    )


def split_backlog(client: redis.Redis, queue: str = "split") -> Callable[[], bool]:
    """`hold` for a bridge: true while split tasks wait on the broker's queue (with prefetch 1 and late
    acks a task only waits there once every split worker process has one)."""

    def busy() -> bool:
        try:
            return bool(client.llen(queue))
        except redis.RedisError:
            return False  # no reading: send what there is, as without gathering

    return busy


class RedisBridge:
    def __init__(
        self,
        client: redis.Redis,
        list_name: str,
        intake: Intake,
        *,
        block_s: float = 1.0,
        retry_s: float = 2.0,
        stop: threading.Event | None = None,
        batch: int = 16,
        hold: Callable[[], bool] | None = None,
        hold_s: float = 0.5,
        poll_s: float = 0.02,
        observe: Callable[[int, bool], None] | None = None,
    ) -> None:
        self.client = client
        self.list_name = list_name
        self.processing = f"{list_name}:pagefleet-processing"
        self.dead = f"{list_name}:pagefleet-dead"
        self.intake = intake
        self.block_s = block_s
        self.retry_s = retry_s
        self.stop_event = stop or threading.Event()
        self.stats = BridgeStats()
        self.batch = max(1, batch)  # elements taken at once when the list has a backlog
        self.hold = hold  # true: the workers are busy, gather a burst's events (module docstring)
        self.hold_s = hold_s
        self.poll_s = poll_s
        self.observe = observe or (
            lambda events, gathered: None
        )  # each submission (`metrics.Recorder`)
        self.thread: threading.Thread | None = None  # `start_bridge`'s

    def stop(self) -> None:
        self.stop_event.set()

    def recover(self) -> int:
        """Replay what a previous run moved to the processing list but never acknowledged."""
        leftovers = self.client.lrange(self.processing, 0, -1)
        for first in range(0, len(leftovers), self.batch):
            if self.stop_event.is_set():
                break
            self._handle(leftovers[first : first + self.batch])
        if leftovers:
            log.info(
                "redis bridge: replayed %d unacknowledged element(s) from %s",
                len(leftovers),
                self.processing,
            )
        return len(leftovers)

    def step(self) -> bool:
        """Take one element (waiting up to block_s), and up to `batch` - 1 more that are already
        there (uploads of one burst: their small documents go in batches), more still while the
        workers are busy (`_gather`). True when any was handled."""
        item = self.client.blmove(self.list_name, self.processing, self.block_s, "LEFT", "RIGHT")
        if item is None:
            return False
        items = self._waiting([item])
        self._handle(items, stream=self._gather(items))
        return True

    def _waiting(self, items: list[bytes]) -> list[bytes]:
        """`items` with the elements already waiting added, up to `batch`."""
        while len(items) < self.batch and (
            more := self.client.lmove(self.list_name, self.processing, "LEFT", "RIGHT")
        ):
            items.append(more)
        return items

    def _gather(self, items: list[bytes]) -> bool:
        """While `hold` says the split queue has a backlog, wait up to `hold_s` in all for more
        elements, until there are `batch`. True when the workers were busy: the submission is
        one piece of a stream, sent as whole batches (`enqueue_many(taper=False)`; tapering is
        for the end of a submission an idle fleet splits across its processes)."""
        if self.hold is None or self.hold_s <= 0 or not self.hold():
            return False
        end = time.monotonic() + self.hold_s
        while len(items) < self.batch and not self.stop_event.is_set():
            left = end - time.monotonic()
            if left <= 0:
                break
            more = self.client.blmove(
                self.list_name, self.processing, min(self.poll_s, left), "LEFT", "RIGHT"
            )
            if more is not None:
                items.append(more)
                self._waiting(items)
            elif not self.hold():
                break
        return True

    def _ack(self, item: bytes) -> None:
        self.client.lrem(self.processing, 1, item)

    def _parsed(self, items: list[bytes]) -> list[tuple[bytes, Any]]:
        """Each element's event payload; one that is not an event goes to the dead-letter list."""
        good = []
        for item in items:
            try:
                good.append((item, parse_event_payload(parse_json(item, "redis list element"))))
            except EventParseError as exc:
                log.warning(
                    "redis bridge: dead-lettering an element of %s: %s", self.list_name, exc.message
                )
                pipe = self.client.pipeline()
                pipe.rpush(self.dead, item)
                pipe.lrem(self.processing, 1, item)
                pipe.execute()
                self.stats.dead += 1
        return good

    def _handle(self, items: list[bytes], stream: bool = False) -> None:
        parsed = self._parsed(items)
        if not parsed:
            return
        objects = [obj for _, payload in parsed for obj in payload.objects]
        skipped = [entry for _, payload in parsed for entry in payload.skipped]
        while (
            True
        ):  # once even when stopping: what a gathering step holds goes out before the process ends
            failure = None
            try:
                result = self.intake.submit(objects, skipped, taper=not stream)
            except (BrokerUnavailable, StorageError) as exc:
                failure = exc
            if failure is not None or result.retry_later:
                if self.stop_event.is_set():
                    return  # left in the processing list: the next start replays it
                if failure is not None:
                    log.warning(
                        "redis bridge: will retry in %.1fs: %s", self.retry_s, failure.message
                    )
                self.stop_event.wait(self.retry_s)
                continue
            for item, _ in parsed:
                self._ack(item)
            self.stats.elements += len(parsed)
            self.stats.enqueued += len(result.enqueued)
            self.stats.duplicates += len(result.duplicates)
            self.stats.submissions += 1
            self.stats.gathered += stream
            self.observe(len(parsed), stream)
            return

    def run(self) -> None:
        """Until `stop()`: recover, then drain the list. Redis outages are waited out."""
        recovered = False
        while not self.stop_event.is_set():
            try:
                if not recovered:
                    self.recover()
                    recovered = True
                self.step()
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                log.warning(
                    "redis bridge: %s unreachable, retrying in %.1fs: %s",
                    self.list_name,
                    self.retry_s,
                    exc,
                )
                recovered = False  # an element may be stranded in the processing list: replay it
                self.stop_event.wait(self.retry_s)


def bridge_client(url: str, block_s: float = 1.0) -> redis.Redis:
    """A bytes client whose socket timeout outlasts the blocking BLMOVE."""
    return redis.Redis.from_url(url, socket_timeout=block_s + 10, socket_connect_timeout=5)


def start_bridge(bridge: RedisBridge) -> threading.Thread:
    thread = threading.Thread(target=bridge.run, name="pagefleet-redis-bridge", daemon=True)
    thread.start()
    bridge.thread = thread
    return thread


def stop_bridges(bridges: list[RedisBridge], timeout_s: float = 10.0) -> None:
    """Stop them and wait (bounded) for the step each is in: events a gathering step holds are sent
    first, so a receiver scaled down does not leave accepted events in the processing list."""
    for bridge in bridges:
        bridge.stop()
    end = time.monotonic() + timeout_s
    for bridge in bridges:
        if bridge.thread is not None:
            bridge.thread.join(max(0.0, end - time.monotonic()))
