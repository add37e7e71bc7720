"""The reliability settings as the Celery app applies them: a visibility timeout longer than the
longest task but minutes, not hours; kombu's restore sweep on every interval; the watchdog on the
beat schedule, with a deadline no shorter than the visibility timeout."""

from __future__ import annotations

from workers.app import app
from workers.settings import get_settings


def test_visibility_exceeds_the_hard_limit_and_is_minutes() -> None:
    s = get_settings()
    options = app.conf.broker_transport_options
    assert s.task_soft_time_limit < s.task_time_limit < options["visibility_timeout"] <= 15 * 60
    assert options["unacked_restore_throttle"] == 1
    assert options["unacked_restore_interval"] <= 60


def test_watchdog_is_on_the_beat_schedule() -> None:
    entry = next(e for e in app.conf.beat_schedule.values() if e["task"] == "pagefleet.watchdog")
    assert entry["options"]["queue"] == "collect"
    assert entry["schedule"] == get_settings().reliability.watchdog_interval_s


def test_the_deadline_is_minutes_and_outlasts_a_task() -> None:
    rel = get_settings().reliability
    assert 60 <= rel.deadline_s <= 3600
    assert rel.deadline_s > rel.visibility_for(get_settings().task_time_limit)
