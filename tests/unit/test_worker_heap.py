"""A worker's start-up heap leaves the cycle collector's generations (issue 15): in the main process
when the worker is built (before its pool forks) and in each pool child as it starts. Checked on a
real Celery worker as `celery worker` builds it (app.Worker; not started) and on the pool child's
start-up signal."""

from __future__ import annotations

import gc

import pytest
from celery.signals import worker_process_init

from pagefleet.workers.app import app


@pytest.fixture
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()  # the rest of the test process collects as usual


def test_building_a_worker_freezes_what_the_main_process_holds(unfrozen: None) -> None:
    assert gc.get_freeze_count() == 0
    kept = [
        [i] for i in range(1000)
    ]  # containers the main process holds before the worker is built
    app.Worker(queues=["cpu"], pool_cls="solo", hostname="test-heap@localhost")
    assert gc.get_freeze_count() >= len(kept)
    walked = {id(o) for o in gc.get_objects()}
    assert not any(id(x) in walked for x in kept)  # no longer in any generation a collection walks


def test_a_pool_child_freezes_what_it_inherited(
    unfrozen: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "OMP_THREAD_LIMIT", "1"
    )  # the signal's other receiver sets it: restored after
    kept = [[i] for i in range(1000)]  # containers made before the child's start-up signal
    worker_process_init.send(sender="test-heap@localhost")
    assert gc.get_freeze_count() >= len(kept)
    walked = {id(o) for o in gc.get_objects()}
    assert not any(id(x) in walked for x in kept)


def test_building_a_worker_imports_the_s3_client_once_for_every_pool_process() -> None:
    """minio, which a pool process's first S3 call imported on its own (~84 ms of CPU each), is
    imported by the main process before its pool forks, and frozen with the rest of its heap. In a
    fresh interpreter: this one may have imported minio already."""
    import subprocess
    import sys

    script = (
        "import gc, sys\n"
        "from pagefleet.workers.app import app\n"
        "assert 'minio' not in sys.modules, 'imported before the worker was built'\n"
        "app.Worker(queues=['split'], pool_cls='solo', hostname='test-preload@localhost')\n"
        "import minio\n"
        "walked = {id(o) for o in gc.get_objects()}\n"
        "print('minio' in sys.modules, id(minio.Minio) in walked)\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert found.returncode == 0, found.stderr[-2000:]
    assert found.stdout.split() == ["True", "False"]


def test_a_module_that_cannot_be_preloaded_is_left_to_its_first_use(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from pagefleet.workers.app import preload

    assert preload(("json", "pagefleet_no_such_module")) == ["json"]
    assert "pagefleet_no_such_module" in caplog.text
