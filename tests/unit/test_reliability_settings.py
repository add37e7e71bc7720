"""The reliability settings as the Celery app applies them: a visibility timeout longer than the
longest task but minutes, not hours; kombu's restore sweep on every interval; the watchdog on the
beat schedule, with a deadline no shorter than the visibility timeout."""

from __future__ import annotations

from pagefleet.workers.app import app
from pagefleet.workers.settings import get_settings


def test_visibility_exceeds_the_hard_limit_and_is_minutes() -> None:
    s = get_settings()
    options = app.conf.broker_transport_options
    assert (
        s.limits.task_soft_time_limit
        < s.limits.task_time_limit
        < options["visibility_timeout"]
        <= 15 * 60
    )
    assert options["unacked_restore_throttle"] == 1
    assert options["unacked_restore_interval"] <= 60


def test_watchdog_is_on_the_beat_schedule() -> None:
    entry = next(e for e in app.conf.beat_schedule.values() if e["task"] == "pagefleet.watchdog")
    assert entry["options"]["queue"] == "collect"
    assert entry["schedule"] == get_settings().limits.watchdog_interval_s


def test_the_deadline_is_minutes_and_outlasts_a_task() -> None:
    rel = get_settings().limits
    assert 60 <= rel.deadline_s <= 3600
    assert rel.deadline_s > get_settings().broker.visibility_for(rel.task_time_limit)


def test_every_redis_connection_gives_up_on_a_dead_peer() -> None:
    """A half-open connection (a failover, a NAT drop) never answers: the broker's and the result
    backend's connections time out (kombu's default waits for ever), keep alive, and kombu's check
    drops a consumer's overdue BRPOP; the drill `test_redis_connections_go_dead_mid_ocr` runs it."""
    rel = get_settings().broker
    options = app.conf.broker_transport_options
    assert options["socket_timeout"] == app.conf.redis_socket_timeout == rel.redis_socket_timeout_s
    assert (
        1 < rel.redis_socket_timeout_s < get_settings().limits.task_soft_time_limit
    )  # above BRPOP's 1 s, below a task
    assert (
        options["socket_connect_timeout"]
        == app.conf.redis_socket_connect_timeout
        == rel.redis_connect_timeout_s
    )
    assert options["socket_keepalive"] is True and app.conf.redis_socket_keepalive is True
    assert (
        options["health_check_interval"]
        == app.conf.redis_backend_health_check_interval
        == rel.redis_health_check_s
    )
