"""The Celery application's configuration (`pagefleet.workers.app.make_app`), following
../shared/docs/RELIABILITY.md: the broker and result backend (Redis, JSON only, the queues, late
acks, time limits and visibility timeouts), then the workers (prefork, recycling, events, soft
shutdown) and the watchdog's beat schedule.
"""

from __future__ import annotations

from typing import Any

from kombu import Queue

from pagefleet.workers.settings import QUEUES, Settings


def celery_config(s: Settings, routes: dict[str, dict[str, str]]) -> dict[str, Any]:
    """Celery's settings for these settings; `routes`: the queue of each task by its name."""
    return {**_broker_config(s, routes), **_worker_config(s)}


def _broker_config(s: Settings, routes: dict[str, dict[str, str]]) -> dict[str, Any]:
    # longer than the longest task (its hard limit), short enough that a dead worker's unacked
    # pages come back in minutes; the watchdog's deadline (limits) covers what never comes back
    visibility = s.broker.visibility_for(s.limits.task_time_limit)
    return dict(
        broker_url=s.broker.url,
        # kombu's Redis transport, with an ack that works at maxmemory (pagefleet/workers/fleet/broker.py)
        broker_transport="pagefleet.workers.fleet.broker:Transport",
        # a Redis error on the consumer's connection (a refused write) reconnects, never stops the worker
        broker_channel_error_retry=True,
        result_backend=f"pagefleet.workers.app:ResultBackend+{s.broker.result_backend or s.broker.url}",
        # the job hash is the one record of a job's state: no task's result is stored (a chord's
        # header results still reach its body: the backend keeps those in the chord's own keys)
        task_ignore_result=True,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_accept_content=["json"],
        task_queues=[Queue(name) for name in QUEUES],
        task_default_queue="split",
        task_routes=routes,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_soft_time_limit=s.limits.task_soft_time_limit,
        task_time_limit=s.limits.task_time_limit,
        broker_transport_options=s.broker.transport_options(s.limits.task_time_limit),
        result_backend_transport_options={"visibility_timeout": visibility},
        # the result backend's connections (a chord's counter): the same timeouts as the broker's
        redis_socket_timeout=s.broker.redis_socket_timeout_s,
        redis_socket_connect_timeout=s.broker.redis_connect_timeout_s,
        redis_socket_keepalive=True,
        redis_backend_health_check_interval=s.broker.redis_health_check_s,
        visibility_timeout=visibility,
    )


def _worker_config(s: Settings) -> dict[str, Any]:
    return dict(
        worker_pool="prefork",
        worker_max_tasks_per_child=200,  # CPU queues only: see pagefleet.workers.app._recycle_cpu_workers_only
        worker_max_memory_per_child=2_000_000,  # KiB; CPU queues only
        worker_send_task_events=True,
        task_send_sent_event=True,
        task_track_started=True,
        worker_cancel_long_running_tasks_on_connection_loss=True,
        worker_soft_shutdown_timeout=30.0,
        worker_enable_soft_shutdown_on_idle=True,
        broker_connection_retry_on_startup=True,
        result_expires=86400,
        worker_hijack_root_logger=False,
        # `celery -A pagefleet.workers.app beat` runs the deadline watchdog (pagefleet/workers/watchdog.py)
        beat_schedule={
            "pagefleet-watchdog": {
                "task": "pagefleet.watchdog",
                "schedule": s.limits.watchdog_interval_s,
                "options": {"queue": "collect", "expires": s.limits.watchdog_interval_s},
            }
        },
    )
