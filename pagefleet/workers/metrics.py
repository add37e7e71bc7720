"""Prometheus metrics of the fleet itself (not only Flower's task view).

Workers are many short-lived processes (prefork children, pods KEDA scales to zero), so they do
not serve metrics themselves: they count into one Redis hash on the broker, and one exporter
(`pagefleet metrics`, k8s/base/metrics.yaml) reads it and the queue lengths at scrape time.

    pagefleet_queue_depth{queue}                 gauge    waiting messages per Celery queue (LLEN)
    pagefleet_broker_memory_bytes                gauge    Redis `used_memory`
    pagefleet_broker_maxmemory_bytes             gauge    Redis `maxmemory` (0: no limit); alert on used/max
    pagefleet_pages_total{route, rung}           counter  finished pages by route and deciding rung
    pagefleet_gate_refusals_total{reason}        counter  refused candidates by gate reason
    pagefleet_documents_total{status}            counter  finished documents by status (error: an error.json)
    pagefleet_rung_seconds{rung}                 summary  seconds spent per rung (_sum, _count)
    pagefleet_receiver_requests_total{outcome}   counter  event receiver requests by outcome
    pagefleet_bridge_submissions_total{gathered} counter  a bridge's submissions (gathered: held while split tasks waited)
    pagefleet_bridge_events_total{gathered}      counter  bucket events in them (÷ submissions: events a submission)
    pagefleet_generate_calls_total{engine}       counter  a gpu worker's VLM calls (forward passes of a batch)
    pagefleet_generate_pages_total{engine}       counter  pages those calls read (÷ calls: pages a call)
    pagefleet_generate_tasks_total{engine}       counter  tasks whose pages they read (÷ calls: tasks sharing a call)
    pagefleet_review_decisions_total{decision}   counter  review decisions (approve/reject/flag), from the studio
    pagefleet_review_corrected_total             counter  approvals that carried a correction
    pagefleet_review_decision_seconds            summary  artifacts written → decision (pagefleet.workers.review.decision_metrics)

A document is counted once (a marker per job id), when the collector has written its artifacts.
The receiver and a gpu worker's shared generate calls (`pagefleet.workers.engines.batching`) count in memory
and flush to Redis every few seconds from a thread, so a slow or full Redis never delays an answer
or a page. Counting never raises: metrics must not fail a page.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import Counter
from typing import Any

import redis

from pagefleet.workers.fleet.broker import memory

log = logging.getLogger(__name__)

HASH = "pagefleet:metrics"
COUNTED = "pagefleet:metrics:counted:{job_id}"
# attempt reasons that are not the gate's: an engine that could not run, OCR switched off
NOT_GATE = frozenset(
    {
        "engine_unavailable",
        "engine_crashed",
        "engine_timeout",
        "engine_error",
        "render_failed",
        "ocr_disabled",
        "attempts_exhausted",
        "stray_rtl_letters",
    }
)


def field(name: str, **labels: str) -> str:
    """Hash field for one series: `pages_total|route=ocr|rung=3_cpu_ocr` (labels sorted)."""
    return "|".join([name, *(f"{k}={v}" for k, v in sorted(labels.items()))])


def parse_field(text: str) -> tuple[str, dict[str, str]]:
    name, *pairs = text.split("|")
    return name, dict(pair.split("=", 1) for pair in pairs)


@functools.lru_cache(maxsize=256)
def _pages_field(route: str, rung: str) -> str:
    """`field("pages_total", route=…, rung=…)`, made once for each of the few pairs."""
    return field("pages_total", route=route, rung=rung)


def page_counts(page: Any, counts: Counter[str]) -> None:
    """Add one page's series (its route and rung, the gate's refusals) to `counts`."""
    from pagefleet.workers.store.artifacts import final_rung

    counts[_pages_field(page.route, final_rung(page))] += 1
    for attempt in page.attempts:
        if not attempt.accepted:
            for reason in set(attempt.reasons) - NOT_GATE:
                counts[field("gate_refusals_total", reason=reason)] += 1


def document_counts(
    status: str, pages: Counter[str], report: dict[str, Any]
) -> tuple[Counter[str], dict[str, float]]:
    """(integer increments, float increments) for one finished document (`pages`: `page_counts`
    over its pages)."""
    counts: Counter[str] = Counter({field("documents_total", status=status): 1})
    counts.update(pages)
    seconds: dict[str, float] = {}
    for rung, entry in (report.get("rungs") or {}).items():
        counts[field("rung_seconds_count", rung=rung)] += int(entry.get("attempts") or 0)
        seconds[field("rung_seconds_sum", rung=rung)] = float(entry.get("seconds") or 0.0)
    return counts, seconds


# the marker and the counts in one script: a document is counted once, in one round trip
COUNT_ONCE = """
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[1]) then
  for i = 2, #ARGV, 3 do
    if ARGV[i] == 'i' then
      redis.call('HINCRBY', KEYS[2], ARGV[i + 1], ARGV[i + 2])
    else
      redis.call('HINCRBYFLOAT', KEYS[2], ARGV[i + 1], ARGV[i + 2])
    end
  end
end
return 1
"""
_COUNTED_TTL_S = 7 * 86400


def counted_once(
    job_id: str, status: str, pages: Counter[str], report: dict[str, Any]
) -> tuple[list[str], list[str | int | float]]:
    """(keys, args) of `COUNT_ONCE` for one finished document (run by `Recorder.document`, or in
    the pipeline that marks a document done, `jobs.done`)."""
    counts, seconds = document_counts(status, pages, report)
    args: list[str | int | float] = [_COUNTED_TTL_S]
    for name, value in counts.items():
        args += ["i", name, int(value)]
    for name, fvalue in seconds.items():
        args += ["f", name, repr(float(fvalue))]
    return [COUNTED.format(job_id=job_id), HASH], args


class Recorder:
    """Counts into the broker's Redis. `client` defaults to the workers' broker."""

    def __init__(self, client: redis.Redis | None = None, flush_s: float = 2.0) -> None:
        self._client = client
        self.flush_s = flush_s
        self._pending: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._flusher: threading.Thread | None = None

    @property
    def client(self) -> redis.Redis:
        if self._client is None:
            from pagefleet.workers.fleet import jobs

            self._client = jobs.client()
        return self._client

    def document(
        self, job_id: str, status: str, pages: Counter[str], report: dict[str, Any]
    ) -> None:
        """Count a finished document once (redelivered collectors do not count it again); `pages`:
        its pages' series (`page_counts`). One round trip (`counted_once`)."""
        try:
            keys, args = counted_once(job_id, status, pages, report)
            self.client.eval(COUNT_ONCE, len(keys), *keys, *args)
        except redis.RedisError as exc:
            log.warning("metrics for job %s not recorded: %s", job_id, exc)

    def receiver_request(self, outcome: str) -> None:
        """One receiver request; buffered in memory, flushed by a background thread."""
        self.count({field("receiver_requests_total", outcome=outcome): 1})

    def bridge_submission(self, events: int, gathered: bool) -> None:
        """One submission of a bucket-event bridge (`pagefleet.workers.intake.bridge`), buffered."""
        flag = "true" if gathered else "false"
        self.count(
            {
                field("bridge_submissions_total", gathered=flag): 1,
                field("bridge_events_total", gathered=flag): events,
            }
        )

    def generate_call(self, engine: str, pages: int, tasks: int) -> None:
        """One VLM call of a gpu worker: the pages it read and the tasks they came from (buffered)."""
        self.count(
            {
                field("generate_calls_total", engine=engine): 1,
                field("generate_pages_total", engine=engine): pages,
                field("generate_tasks_total", engine=engine): tasks,
            }
        )

    def count(self, series: dict[str, int]) -> None:
        with self._lock:
            self._pending.update(series)
            if self._flusher is None:
                self._flusher = threading.Thread(
                    target=self._flush_loop, name="pagefleet-metrics", daemon=True
                )
                self._flusher.start()

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, Counter()
        if not pending:
            return
        try:
            pipe = self.client.pipeline(transaction=False)
            for name, value in pending.items():
                pipe.hincrby(HASH, name, value)
            pipe.execute()
        except redis.RedisError as exc:  # keep the counts for the next flush
            with self._lock:
                self._pending.update(pending)
            log.debug("metrics flush failed: %s", exc)

    def _flush_loop(self) -> None:
        stop = threading.Event()
        while not stop.wait(self.flush_s):
            self.flush()


@functools.lru_cache(maxsize=1)
def shared_recorder() -> Recorder:
    """This process's buffered recorder (a gpu worker's calls: many a minute, one flush every 2 s)."""
    return Recorder()


# ---------------------------------------------------------------- the exporter side

HELP = {
    "pages_total": ("counter", "finished pages by route and deciding rung", ["route", "rung"]),
    "gate_refusals_total": ("counter", "candidates refused, by quality-gate reason", ["reason"]),
    "documents_total": ("counter", "finished documents by status", ["status"]),
    "receiver_requests_total": (
        "counter",
        "bucket-event receiver requests by outcome",
        ["outcome"],
    ),
    "bridge_submissions_total": (
        "counter",
        "a bucket-event bridge's submissions (gathered: held while split tasks waited)",
        ["gathered"],
    ),
    "bridge_events_total": ("counter", "bucket events in those submissions", ["gathered"]),
    "generate_calls_total": ("counter", "a gpu worker's VLM generate calls", ["engine"]),
    "generate_pages_total": (
        "counter",
        "pages read by those calls (per call: the batch filled)",
        ["engine"],
    ),
    "generate_tasks_total": (
        "counter",
        "tasks whose pages those calls read (per call: tasks sharing one)",
        ["engine"],
    ),
    "review_decisions_total": (
        "counter",
        "review decisions made in the studio, by decision",
        ["decision"],
    ),
    "review_corrected_total": ("counter", "review approvals that carried a correction", []),
}


class FleetCollector:
    """A prometheus_client collector that reads the counters and queue lengths at scrape time."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def collect(self) -> Any:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        from pagefleet.workers.settings import QUEUES

        depth = GaugeMetricFamily(
            "pagefleet_queue_depth", "messages waiting in each Celery queue", labels=["queue"]
        )
        lengths = self._pipe(lambda pipe: [pipe.llen(queue) for queue in QUEUES])
        for queue, length in zip(QUEUES, lengths):
            depth.add_metric([queue], float(length))
        yield depth
        used, limit = memory(self.client)  # producers refuse jobs above broker.full_ratio of it
        yield GaugeMetricFamily(
            "pagefleet_broker_memory_bytes", "Redis used_memory", value=float(used)
        )
        yield GaugeMetricFamily(
            "pagefleet_broker_maxmemory_bytes", "Redis maxmemory (0: no limit)", value=float(limit)
        )
        raw = self.client.hgetall(HASH)
        series: dict[str, list[tuple[dict[str, str], float]]] = {}
        for key, value in raw.items():
            name, labels = parse_field(key.decode() if isinstance(key, bytes) else key)
            series.setdefault(name, []).append((labels, float(value)))
        for name, (_kind, text, labels) in HELP.items():
            family = CounterMetricFamily(
                f"pagefleet_{name.removesuffix('_total')}", text, labels=labels
            )
            for found, value in series.get(name, []):
                family.add_metric([found.get(label, "") for label in labels], value)
            yield family
        yield self._rung_seconds(series)
        yield _review_seconds(series)

    def _pipe(self, fill: Any) -> list[Any]:
        pipe = self.client.pipeline(transaction=False)
        fill(pipe)
        return list(pipe.execute())

    @staticmethod
    def _rung_seconds(series: dict[str, list[tuple[dict[str, str], float]]]) -> Any:
        from prometheus_client.core import SummaryMetricFamily

        family = SummaryMetricFamily(
            "pagefleet_rung_seconds", "seconds spent per ladder rung", labels=["rung"]
        )
        sums = {labels["rung"]: value for labels, value in series.get("rung_seconds_sum", [])}
        for labels, count in series.get("rung_seconds_count", []):
            family.add_metric(
                [labels["rung"]], count_value=count, sum_value=sums.get(labels["rung"], 0.0)
            )
        return family


def _review_seconds(series: dict[str, list[tuple[dict[str, str], float]]]) -> Any:
    from prometheus_client.core import SummaryMetricFamily

    family = SummaryMetricFamily(
        "pagefleet_review_decision_seconds",
        "seconds from a document's artifacts being written to a review decision",
    )
    count = sum(value for _, value in series.get("review_decision_seconds_count", []))
    total = sum(value for _, value in series.get("review_decision_seconds_sum", []))
    family.add_metric([], count_value=count, sum_value=total)
    return family


def exporter_app(client: redis.Redis) -> Any:
    """Starlette app: GET /metrics (Prometheus text format), GET /healthz."""
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(client))

    async def scrape(request: Request) -> Response:
        try:
            body = await run_in_threadpool(generate_latest, registry)
        except redis.RedisError as exc:
            return JSONResponse(
                {"error": {"code": "broker_unavailable", "message": str(exc)}}, status_code=503
            )
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True})

    return Starlette(routes=[Route("/metrics", scrape), Route("/healthz", healthz)])
