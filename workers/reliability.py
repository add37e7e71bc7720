"""The reliability section of the settings tree (`Settings().reliability`, env
`PAGEFLEET_RELIABILITY__*`): how long a job may go without progress, how often the watchdog looks,
how many times lost work is re-dispatched, how long finished state stays in Redis, how callbacks
are retried.

    job_deadline_minutes   a job whose last progress is older is stalled; the watchdog re-dispatches
                           what is missing (up to `max_redispatch` times), then finishes it: missing
                           pages `failed`, a dead-letter record. Must exceed the visibility timeout
                           (a worker's unacked pages come back first).
    visibility_timeout_s   unacked messages of a dead worker return after this; it exceeds the hard
                           task time limit (`visibility_for`), so a running task is never redelivered.
    redis_socket_timeout_s a Redis command (a publish, a chord's count, a result) on a connection
                           that stops answering fails after this instead of waiting for ever: a
                           failover, a NAT or firewall drop leaves connections half-open, no RST.
    redis_health_check_s   a consumer's BRPOP connection whose answer is this much overdue is dropped
                           and made again (kombu's check); redis-py pings a connection idle longer.
    broker_full_ratio      producers refuse new jobs (`broker_full`) once Redis uses this share of its
                           `maxmemory`: a job accepted at the very limit could not run.
    broker_full_wait_s     a worker whose write Redis refuses at `maxmemory` waits (backing off) up
                           to this long for memory to free, instead of failing the task.
    worker_heartbeat_s     how often a worker's consumer beats in Redis (`workers.fleet.liveness`):
                           its pool's processes, the messages it holds; it looks for dead peers then.
    worker_dead_after_s    a worker silent this long is dead: its unacknowledged messages go back
                           on their queues at once, not after the visibility timeout.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ReliabilitySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    job_deadline_minutes: float = Field(15.0, gt=0, description="minutes without progress before a job is stalled")
    watchdog_interval_s: float = Field(60.0, gt=0, description="how often the beat schedule sweeps")
    max_redispatch: int = Field(2, ge=0, description="re-dispatches of a stalled job before it is finished")
    job_record_ttl_s: int = Field(7 * 86400, ge=60, description="a finished job's Redis records expire after")
    jobs_index_max: int = Field(100_000, ge=100, description="the jobs index keeps at most this many ids")
    deadletter_max: int = Field(100_000, ge=100, description="the dead-letter list keeps the newest")
    visibility_margin_s: int = Field(60, ge=5, description="visibility timeout = hard time limit + this")
    # kombu looks for unacked messages past the visibility timeout every interval × throttle seconds
    # (10 × 10 by default: up to 100 s late); we scan on every interval
    unacked_restore_interval_s: int = Field(10, ge=1, description="how often workers restore a dead worker's messages")
    # above the consumers' BRPOP (1 s, answered by the server) and any command we send
    redis_socket_timeout_s: float = Field(30.0, ge=5, description="a Redis command on a dead connection fails after")
    redis_connect_timeout_s: float = Field(5.0, gt=0, description="connecting to Redis gives up after")
    redis_health_check_s: int = Field(10, ge=1, description="a half-open consumer connection is dropped after ~this")
    worker_heartbeat_s: float = Field(5.0, gt=0, description="how often a worker beats and looks for dead peers")
    worker_dead_after_s: float = Field(30.0, gt=0, description="a worker silent this long is dead: its messages go back")
    callback_timeout_s: float = Field(5.0, gt=0, description="a completion callback POST gives up after")
    callback_max_retries: int = Field(8, ge=0, description="retries of a failed callback before it is dead-lettered")
    callback_backoff_max_s: int = Field(600, ge=1, description="longest wait between two callback retries")
    broker_full_ratio: float = Field(0.95, gt=0, le=1, description="producers refuse jobs above this share of Redis maxmemory")
    broker_full_wait_s: float = Field(300.0, ge=0, description="a worker waits this long for a full Redis to free memory")

    @property
    def deadline_s(self) -> float:
        return self.job_deadline_minutes * 60.0

    def transport_options(self, task_time_limit: int) -> dict[str, Any]:
        """The Redis transport's options: visibility timeout and how often it is enforced; how long
        a command waits on a connection that stopped answering, and kombu's check of its consumers'."""
        return {"visibility_timeout": self.visibility_for(task_time_limit),
                "unacked_restore_interval": self.unacked_restore_interval_s, "unacked_restore_throttle": 1,
                "socket_timeout": self.redis_socket_timeout_s, "socket_connect_timeout": self.redis_connect_timeout_s,
                "socket_keepalive": True, "health_check_interval": self.redis_health_check_s}

    def visibility_for(self, task_time_limit: int) -> int:
        """Longer than the longest task (its hard limit), so only a dead worker's work comes back."""
        return int(task_time_limit) + self.visibility_margin_s

