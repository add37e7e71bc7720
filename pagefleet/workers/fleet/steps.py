"""The worker's bootsteps that keep its liveness visible: the heartbeat file Kubernetes' probes read
(`pagefleet.workers.fleet.heartbeat`) and the consumer's beats in Redis that let peers put a dead worker's
messages back (`pagefleet.workers.fleet.liveness`). `pagefleet.workers.app` adds them to the Celery app."""

from __future__ import annotations

import logging
from typing import Any

import redis
from celery import bootsteps
from celery.signals import celeryd_init, task_received
from kombu.exceptions import OperationalError

from pagefleet.workers.errors import BrokerUnavailable
from pagefleet.workers.fleet import heartbeat, liveness
from pagefleet.workers.settings import get_settings

HEARTBEAT = heartbeat.Heartbeat()


class HeartbeatStep(bootsteps.StartStopStep):
    """Touches the liveness file on the worker's event-loop timer (see pagefleet/workers/fleet/heartbeat.py)."""

    requires = {"celery.worker.components:Timer"}

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self.tref: Any = None

    def start(self, worker: Any) -> None:
        if HEARTBEAT.enabled:
            HEARTBEAT.start()
            self.tref = worker.timer.call_repeatedly(
                HEARTBEAT.settings.interval_s, HEARTBEAT.beat, priority=10
            )

    def stop(self, worker: Any) -> None:
        if self.tref is not None:
            self.tref.cancel()
            self.tref = None


class LivenessStep(bootsteps.StartStopStep):
    """The consumer's side of `pagefleet.workers.fleet.liveness`: at every connection, what the last one held
    goes back on its queues; then a beat on the event loop's timer, which also puts a dead peer's
    messages back."""

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def __init__(self, c: Any, **kwargs: Any) -> None:
        super().__init__(c, **kwargs)
        self.tref: Any = None
        self.restore = liveness.Restorer(c.app.connection_for_write)
        self.keeper = liveness.Keeper(self.restore)

    def start(self, c: Any) -> None:
        if not liveness.SELF["worker"]:
            liveness.start(c.hostname)
        _quietly(
            "putting back what the last connection held",
            liveness.put_back,
            liveness.SELF["worker"],
            self.restore,
        )
        interval = get_settings().broker.worker_heartbeat_s
        self.beat(c)
        self.tref = c.timer.call_repeatedly(interval, self.beat, (c,), priority=10)

    def beat(self, c: Any) -> None:
        pool = (c.pool.info or {}).get("processes") or [] if c.pool is not None else []
        _quietly("the worker's beat", self.keeper, list(pool))

    def stop(self, c: Any) -> None:
        if self.tref is not None:
            self.tref.cancel()
            self.tref = None
        self.restore.close()


def _quietly(what: str, fn: Any, *args: Any) -> bool:
    """Run a liveness step on the event loop; a broker that is away only delays it."""
    try:
        fn(*args)
        return True
    except (redis.RedisError, BrokerUnavailable, OperationalError, OSError) as exc:
        logging.getLogger(__name__).warning("%s failed: %s", what, exc)
        return False


@celeryd_init.connect
def _liveness_self(sender: Any = None, **_: object) -> None:
    liveness.start(str(sender))  # before the pool forks: its processes know their worker


@task_received.connect
def _received(request: Any = None, **_: object) -> None:
    """Which worker holds the message, for its peers to put back if it dies (`pagefleet.workers.fleet.liveness`)."""
    tag = getattr(getattr(request, "message", None), "delivery_tag", None)
    if tag is not None:
        _quietly("recording a held message", liveness.hold, str(tag), request.id)
