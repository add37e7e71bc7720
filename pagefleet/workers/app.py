"""The Celery application: Redis broker and result backend, JSON only, five queues.

Settings follow ../shared/docs/RELIABILITY.md: late acks with prefetch 1 (KEDA sees waiting work), redelivery
on a lost worker *with* a per-page delivery cap (counted in the OCR task), soft limit below hard
limit, a visibility timeout above the hard limit, prefork only, task events on, soft shutdown so
unacknowledged work returns to the queue on scale-down.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import logging
import os
import signal
import threading
from typing import Any

from celery import Celery
from celery.backends.redis import RedisBackend
from celery.exceptions import Reject
from celery.signals import (
    celeryd_init,
    setup_logging,
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
    worker_shutdown,
    worker_shutting_down,
)
from kombu.exceptions import OperationalError
import redis

from pagefleet.routing import compiled
from pagefleet.workers.fleet import broker, logs, observability, steps
from pagefleet.workers.fleet.celery_config import celery_config
from pagefleet.workers.fleet.launcher import die_with_parent
from pagefleet.workers.errors import BrokerUnavailable, StorageError
from pagefleet.workers.settings import get_settings

# The one retry policy of the tasks: an explicit tuple of transient errors, backoff with jitter.
TRANSIENT = (StorageError, BrokerUnavailable, ConnectionError)
RETRY_POLICY: dict[str, Any] = {
    "autoretry_for": TRANSIENT,
    "retry_backoff": True,
    "retry_jitter": True,
    "max_retries": 5,
}
TASK_ROUTES = {
    "pagefleet.split": {"queue": "split"},
    "pagefleet.split_batch": {"queue": "split"},
    "pagefleet.split_range": {
        "queue": "cpu"
    },  # the split task names settings.advanced.split_range_queue
    "pagefleet.split_done": {"queue": "collect"},
    "pagefleet.structure_range": {
        "queue": "cpu"
    },  # split_done names settings.advanced.split_range_queue
    "pagefleet.ranges_structured": {"queue": "collect"},
    "pagefleet.ocr_cpu": {"queue": "cpu"},
    "pagefleet.ocr_gpu": {"queue": "gpu"},
    "pagefleet.collect": {"queue": "collect"},
    "pagefleet.collect_after_error": {"queue": "collect"},
    "pagefleet.collect_final": {"queue": "collect"},
    "pagefleet.redispatch": {"queue": "collect"},
    "pagefleet.watchdog": {"queue": "collect"},
    "pagefleet.callback": {"queue": "notify"},  # its own worker: a slow endpoint holds no collect
}


class ResultBackend(RedisBackend):
    """Celery's Redis result backend, whose commands wait for a full Redis in a worker
    (`pagefleet.workers.fleet.broker`), as the job records' do: a split's chord size refused at maxmemory
    would fail the split with an error no retry covers, and a count refused would leave the chord
    one short for ever — either way the document waits for the watchdog's deadline. Redis refuses
    a command (and the chord's counting script) before it runs, so sending it again does it once."""

    def _create_client(self, **params: Any) -> Any:
        return super()._create_client(**{**params, **broker.client_options()})


def make_app() -> Celery:
    celery = Celery(
        "pagefleet",
        include=[
            "pagefleet.tasks.split",
            "pagefleet.tasks.big_document",
            "pagefleet.tasks.ocr",
            "pagefleet.tasks.collect",
            "pagefleet.tasks.sweep",
            "pagefleet.tasks.callback",
        ],
    )
    celery.conf.update(**celery_config(get_settings(), TASK_ROUTES))
    return celery


app = make_app()


class FleetTask(app.Task):  # type: ignore[name-defined,misc]
    """A task whose retry that cannot be sent goes back to its queue. Celery drops the message
    (`Reject(requeue=False)`) when publishing the retry fails — which is exactly when the broker
    is unreachable, the error the retry was for: a split lost that way leaves no record behind."""

    def retry(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().retry(*args, **kwargs)
        except Reject as exc:
            if exc.requeue:
                raise
            raise Reject(exc.reason, requeue=True) from exc


def task(name: str, **overrides: Any) -> Any:
    """`@task("pagefleet.x")`: a Celery task under the one retry policy (overrides for the odd one)."""
    return app.task(name=name, base=FleetTask, **{**RETRY_POLICY, **overrides})


@worker_process_init.connect
def _process_init(**_: object) -> None:
    """Cheap: the pod's CPU share for Tesseract/OpenMP; models load lazily on first use. A pool
    process dies with the worker's main process (SIGKILLed, or by the OOM killer): an orphan could
    not report or acknowledge its task, which comes back to another worker anyway."""
    os.environ["OMP_THREAD_LIMIT"] = str(get_settings().ocr.omp_thread_limit)
    die_with_parent(signal.SIGKILL, os.getppid())


@worker_init.connect
def _freeze_main_heap(**_: object) -> None:
    """What a worker holds once it has started (Celery, kombu, pydantic, the gate's tables: a few
    hundred thousand objects) leaves the cycle collector's generations, in the main process before
    the pool forks: start-up's garbage collected first, the rest frozen (a pool child does not
    write to those objects' pages either). Otherwise every full collection, which the gate's and
    the collector's allocations trigger every few pages, walks them all again: ~10 % of a cpu
    worker's CPU on a 1000-page document (issue 15). The S3 client's modules are imported here
    too (`preload`), once for every pool process."""
    preload(S3_MODULES)
    gc.collect()
    gc.freeze()


# what a pool process's first S3 call imported on its own (~84 ms of CPU for minio, its private
# memory): imported by the worker's main process before it forks, shared by every pool process
S3_MODULES = ("certifi", "minio", "minio.credentials", "minio.deleteobjects", "minio.error")


def preload(names: tuple[str, ...]) -> list[str]:
    """Import `names` now; those that cannot be imported are left to their first use (which
    reports it there). Returns the ones imported."""
    done = []
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            logging.getLogger(__name__).warning(
                "preloading %s failed (%s): it is imported on first use", name, exc
            )
            continue
        done.append(name)
    return done


@worker_process_init.connect
def _freeze_child_heap(**_: object) -> None:
    """The same in each pool child for what it inherited (no collection first: it would write to
    every inherited object's page)."""
    gc.freeze()


def send(
    name: str, args: list[Any], *, queue: str, task_id: str | None = None, label: str = ""
) -> None:
    """Send one task by name to the broker configured *now* (producers switch brokers with
    `use_broker`; the app's cached producer pool would still point at the old one), on this
    process's connection to that broker: a connection per message (connect, declare the queue)
    cost a producer ~10 ms of CPU per document. A send that fails on the kept connection (Redis
    restarted, a socket gone stale) is tried once more on a fresh one before the error goes up.
    Results are ignored (job state lives in the registry) and arguments are hidden from task events."""
    url = get_settings().broker.url
    with _SENDING:
        for fresh in (False, True):
            try:
                _send_on(_producer_connection(url), name, args, queue, task_id, label)
                return
            except (OperationalError, OSError, redis.ConnectionError, redis.TimeoutError):
                _drop_producer_connection()  # the next send starts on a new connection
                if fresh:
                    raise


def _send_on(
    conn: Any, name: str, args: list[Any], queue: str, task_id: str | None, label: str
) -> None:
    app.send_task(
        name,
        args=args,
        task_id=task_id,
        queue=queue,
        connection=conn,
        ignore_result=True,
        argsrepr=label or "(hidden)",
        kwargsrepr="{}",
        retry=True,
        retry_policy={
            "max_retries": 2,
            "interval_start": 0.2,
            "interval_step": 0.5,
            "interval_max": 1.0,
        },
    )


_SENDING = threading.Lock()  # a kombu connection is not for two threads at once
_producer: dict[str, Any] = {}  # "key": (broker url, pid), "conn": the connection


def _producer_connection(url: str) -> Any:
    """This process's connection to `url` (a forked child or another broker gets a new one)."""
    key = (url, os.getpid())
    if _producer.get("key") != key:
        _drop_producer_connection()
        _producer.update(key=key, conn=app.connection_for_write(url))
    return _producer["conn"]


def _drop_producer_connection() -> None:
    conn = _producer.pop("conn", None)
    _producer.pop("key", None)
    if conn is not None:
        with contextlib.suppress(
            Exception
        ):  # closing a broken connection may fail: it is gone either way
            conn.release()


def use_broker(url: str) -> None:
    """Point this process (a producer: the CLI, the event receiver) at another broker."""
    os.environ["PAGEFLEET_BROKER__URL"] = url
    os.environ["PAGEFLEET_BROKER__RESULT_BACKEND"] = url
    get_settings.cache_clear()
    with _SENDING:
        _drop_producer_connection()
    app.conf.broker_url = url
    app.conf.result_backend = url


# --- probes: the heartbeat file and the beats in Redis (pagefleet/workers/fleet/steps.py), Sentry init -------
app.steps["worker"].add(steps.HeartbeatStep)
app.steps["consumer"].add(steps.LivenessStep)


@setup_logging.connect
def _logging(loglevel: Any = None, logfile: Any = None, **_: object) -> None:
    """Workers log through pagefleet/workers/fleet/logs.py: `--loglevel`, PAGEFLEET_OBSERVABILITY__LOG_FORMAT=json for one JSON
    object a line with job id and page, `--logfile` honoured."""
    stream = open(logfile, "a", buffering=1, encoding="utf-8") if logfile else None  # noqa: SIM115 - lives as long as the worker
    logs.configure(loglevel or "INFO", get_settings().observability.log_format, stream)


_LOG_TOKENS: dict[str, Any] = {}


@task_prerun.connect
def _bind_log_context(task_id: str | None = None, args: Any = None, **_: object) -> None:
    """Every log line of a task carries its job id and page(s) (payloads are [spec, pages?])."""
    spec = args[0] if args and isinstance(args[0], dict) else {}
    pages = args[1] if args and len(args) > 1 and isinstance(args[1], list) else None
    page = pages[0] if pages and len(pages) == 1 else pages
    if task_id:
        _LOG_TOKENS[task_id] = logs.push(job_id=spec.get("job_id"), page=page, task_id=task_id)


@task_postrun.connect
def _unbind_log_context(task_id: str | None = None, **_: object) -> None:
    token = _LOG_TOKENS.pop(task_id or "", None)
    if token is not None:
        logs.pop(token)


@celeryd_init.connect
def _recycle_cpu_workers_only(
    conf: Any = None, options: dict[str, Any] | None = None, **_: object
) -> None:
    """A pool child of a gpu worker holds its models for its whole life: billiard compares peak RSS
    after every task, and a VLM loaded once exceeds any sane limit, so recycling would reload the
    model after every task. GPU workers are not recycled; CPU queues (MuPDF, Tesseract) are."""
    if conf is not None and "gpu" in _queues(options):
        conf.worker_max_memory_per_child = None
        conf.worker_max_tasks_per_child = None


@celeryd_init.connect
def _count_generate_calls(options: dict[str, Any] | None = None, **_: object) -> None:
    """A gpu worker counts the pages and tasks of each VLM call for the metrics exporter."""
    if "gpu" in _queues(options):
        from pagefleet.workers.engines.batching import BATCHES, count_calls

        BATCHES.observe = count_calls


def _queues(options: dict[str, Any] | None) -> list[str]:
    """The queues a `celery worker` command consumes (its -Q option, a list or a comma-separated string)."""
    queues = (options or {}).get("queues") or []
    return queues.split(",") if isinstance(queues, str) else list(queues)


@celeryd_init.connect
def _wait_when_broker_full(**_: object) -> None:
    """A worker (its main process, then its pool) waits for a full Redis instead of failing."""
    broker.wait_when_full()


@celeryd_init.connect
def _sentry_main(**_: object) -> None:
    observability.init_sentry(component="worker")


@worker_process_init.connect
def _sentry_child(**_: object) -> None:
    observability.init_sentry(component="worker")  # idempotent: inherited from the parent


@worker_ready.connect
def _ready(**_: object) -> None:
    logging.getLogger(__name__).info(
        "quality gate: %s", "compiled (mypyc)" if compiled.active() else "from its sources"
    )
    if steps.HEARTBEAT.enabled:
        steps.HEARTBEAT.mark_ready()


@worker_shutting_down.connect
def _stopping(**_: object) -> None:
    if steps.HEARTBEAT.enabled:
        steps.HEARTBEAT.mark_stopping()


@worker_shutdown.connect
@worker_process_shutdown.connect
def _flush_metrics(**_: object) -> None:
    """What the process's buffered recorder still holds (a gpu worker's calls) goes out before it ends."""
    from pagefleet.workers.metrics import shared_recorder

    if shared_recorder.cache_info().currsize:
        shared_recorder().flush()
