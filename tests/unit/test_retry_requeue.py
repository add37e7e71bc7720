"""A retry that cannot be sent (the broker is unreachable: the error the retry was for) puts the
message back on its queue instead of dropping it, as Celery's own `Task.retry` would."""

from __future__ import annotations

import socket

import pytest
from celery.exceptions import Reject

from pagefleet.workers.app import app, task, use_broker


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens here once the socket is closed


@task("pagefleet.test_retry_requeue", max_retries=3, ignore_result=True)
def _flaky(x: int) -> int:  # pragma: no cover - only its retry is exercised
    return x


def test_a_retry_that_cannot_be_sent_is_requeued() -> None:
    saved, publish_retry = app.conf.broker_url, app.conf.task_publish_retry
    use_broker(f"redis://127.0.0.1:{_closed_port()}/0")
    app.conf.task_publish_retry = False  # one refused connection is enough
    _flaky.push_request(
        id="job-1",
        args=[1],
        kwargs={},
        retries=0,
        delivery_info={"routing_key": "cpu"},
        called_directly=False,
        is_eager=False,
    )
    try:
        with pytest.raises(Reject) as caught:
            _flaky.retry(exc=ConnectionError("broker gone"), countdown=0, max_retries=3)
    finally:
        _flaky.pop_request()
        app.conf.task_publish_retry = publish_retry
        use_broker(saved)
    assert caught.value.requeue is True
