"""GPU workers keep their pool children (and the models loaded in them); CPU workers are recycled
by memory and task count. Checked on real Celery workers (app.Worker, as `celery worker` builds it; not started)."""

from __future__ import annotations

import gc

import pytest

from pagefleet.workers.app import app


@pytest.fixture
def restore_conf():
    saved = (app.conf.worker_max_memory_per_child, app.conf.worker_max_tasks_per_child)
    yield
    app.conf.worker_max_memory_per_child, app.conf.worker_max_tasks_per_child = saved
    gc.unfreeze()  # building a worker froze this process's heap (pagefleet.workers.app): the next tests collect as usual


@pytest.mark.parametrize(
    "queues, recycled", [(["cpu"], True), (["split", "collect"], True), (["gpu"], False)]
)
def test_only_cpu_queues_are_recycled(
    queues: list[str], recycled: bool, restore_conf: None
) -> None:
    worker = app.Worker(
        queues=queues, pool_cls="solo", hostname=f"test-{'-'.join(queues)}@localhost"
    )
    if recycled:
        assert worker.max_memory_per_child == 2_000_000 and worker.max_tasks_per_child == 200
    else:
        assert worker.max_memory_per_child is None and worker.max_tasks_per_child is None
