"""Review decisions counted where `pagefleet metrics` reads the fleet's counters (pagefleet.workers.metrics),
and the decided document's job state brought up to date.

    pagefleet_review_decisions_total{decision}   counter  decisions made, by approve / reject / flag
    pagefleet_review_corrected_total             counter  approvals that carried a correction
    pagefleet_review_decision_seconds            summary  from the document's artifacts being written
                                                          (its pages entering the queue) to a decision

Only a studio that knows its fleet's broker counts (`--broker`, or PAGEFLEET_BROKER__URL set): a
studio over a folder with no fleet behind it has nowhere to count. Counting never raises.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

import redis

from pagefleet.workers.metrics import HASH, field
from pagefleet.workers.review.decisions import Decision
from pagefleet.workers.store import objects
from pagefleet.workers.settings import get_settings
from pagefleet.workers.store.storage import Storage

log = logging.getLogger(__name__)


def _job_key(job_id: str) -> str:
    from pagefleet.workers.fleet.jobs import job_key

    return job_key(job_id)


def broker_url(broker: str | None) -> str | None:
    settings = get_settings().broker
    return broker or (settings.url if "url" in settings.model_fields_set else None)


def written_at(storage: Storage, key: str) -> dt.datetime | None:
    """When an artifact was last written (`pagefleet.workers.store.objects.written_at`)."""
    return objects.written_at(storage, key)


def _decided_at(made: Decision) -> dt.datetime:
    return dt.datetime.fromisoformat(made.at)


def series(
    made: Decision, queued_at: dt.datetime | None
) -> tuple[dict[str, int], dict[str, float]]:
    """The counters and the float sums one decision adds."""
    counts = {field("review_decisions_total", decision=made.decision): 1}
    if made.corrected:
        counts[field("review_corrected_total")] = 1
    sums: dict[str, float] = {}
    if queued_at is not None:
        counts[field("review_decision_seconds_count")] = 1
        sums[field("review_decision_seconds_sum")] = max(
            0.0, (_decided_at(made) - queued_at).total_seconds()
        )
    return counts, sums


def record(
    url: str | None,
    made: Decision,
    queued_at: dt.datetime | None,
    job_id: str | None,
    summary: dict[str, Any] | None,
) -> None:
    """Count one decision and update the job's state (status, review counts) on the broker at `url`."""
    if not url:
        return
    counts, sums = series(made, queued_at)
    try:
        client = redis.Redis.from_url(
            url, decode_responses=True, socket_timeout=5, socket_connect_timeout=2
        )
        pipe = client.pipeline(transaction=False)
        for name, value in counts.items():
            pipe.hincrby(HASH, name, value)
        for name, fvalue in sums.items():
            pipe.hincrbyfloat(HASH, name, fvalue)
        if job_id and summary and client.exists(_job_key(job_id)):
            from pagefleet.workers.fleet.jobs import _mapping

            review = {k: summary[k] for k in ("reviewed", "pending", "rejected", "stale")}
            fields: dict[Any, Any] = _mapping({"status": summary["status"], "review": review})
            pipe.hset(_job_key(job_id), mapping=fields)
        pipe.execute()
    except redis.RedisError as exc:
        log.warning("review metrics not recorded: %s", exc)
