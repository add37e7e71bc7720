"""Shared fixtures: generated PDFs, and real services for integration tests — a private
redis-server on a free loopback port, real Celery worker processes, and moto's S3 server."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import pagefleet.workers  # noqa: F401 - the fleet's start-up first: the gate's compiled build, where current, for every test

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"


def _generate(
    tmp_path_factory: pytest.TempPathFactory, script: str, name: str, timeout_s: int
) -> Path:
    """Run one of the fixtures/ generator scripts into a fresh session folder."""
    out = tmp_path_factory.mktemp(name)
    subprocess.run(
        [sys.executable, str(ROOT / "fixtures" / script), str(out)],
        check=True,
        capture_output=True,
        timeout=timeout_s,
    )
    return out


@pytest.fixture(scope="session")
def fixtures_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's fixture PDFs, generated fresh by fixtures/make_fixtures.py."""
    return _generate(tmp_path_factory, "make_fixtures.py", "fixtures", 120)


@pytest.fixture(scope="session")
def structure_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Documents with known structure (+ NAME.truth.json), by fixtures/make_structure_fixtures.py."""
    return _generate(tmp_path_factory, "make_structure_fixtures.py", "structure", 300)


@pytest.fixture(scope="module")
def torch_one_thread() -> Iterator[None]:
    """Tiny models gain nothing from threads; on a shared 2-core machine they only contend."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def free_port() -> int:
    from pagefleet.workers.fleet.launcher import free_port as launcher_free_port

    return launcher_free_port()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from pagefleet.workers.fleet.launcher import RedisServer

    server = RedisServer(tmp_path_factory.mktemp("redis"))
    url = server.start()
    yield url
    server.stop()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    """moto's S3 application on loopback (real HTTP, real S3 protocol), served with HTTP/1.1
    keep-alive as MinIO and S3 serve it (`tests/support/s3_server.py`; `moto_server` itself closes every
    connection, so a worker's kept connections would never meet a server that keeps them)."""
    from tests.support.s3_server import MotoServer

    try:
        server = MotoServer(tls=False).start()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    yield server.env()["PAGEFLEET_STORAGE__S3_ENDPOINT"]
    server.stop()


@pytest.fixture(scope="session")
def service_env(redis_server: str, s3_server: str) -> Iterator[dict[str, str]]:
    """Point this process and the workers it starts at the test Redis and S3 server."""
    from pagefleet.workers.app import use_broker
    from pagefleet.workers.settings import get_settings

    env = {
        "PAGEFLEET_BROKER__URL": redis_server,
        "PAGEFLEET_BROKER__RESULT_BACKEND": redis_server,
        "PAGEFLEET_STORAGE__S3_ENDPOINT": s3_server,
        "PAGEFLEET_STORAGE__S3_ACCESS_KEY": "testing",
        "PAGEFLEET_STORAGE__S3_SECRET_KEY": "testing",
        "PAGEFLEET_STORAGE__S3_REGION": "us-east-1",
        "PAGEFLEET_GPU__ENABLED": "0",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    get_settings.cache_clear()
    use_broker(redis_server)
    yield env
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    get_settings.cache_clear()


@pytest.fixture(scope="session")
def fleet(service_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[list]:
    """Real Celery workers: split+collect and cpu queues, prefork, and notify (callbacks, threads),
    against the test Redis."""
    from pagefleet.workers.fleet.launcher import Fleet

    logdir = tmp_path_factory.mktemp("worker-logs")
    started = Fleet(
        logdir,
        (("split,collect", 1), ("cpu", 2), ("notify", 2)),
        broker_url=service_env["PAGEFLEET_BROKER__URL"],
        env={**service_env, "PAGEFLEET_STORAGE__CACHE_DIR": str(logdir / "cache")},
    ).start()
    yield started.workers
    started.stop()


def wait_for_job(job_id: str, timeout_s: float = 240.0) -> dict[str, str]:
    from pagefleet.workers.fleet import jobs

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        info = jobs.get(job_id)
        if info.get("state") in jobs.TERMINAL:
            return info
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not finish in {timeout_s}s: {jobs.get(job_id)}")


@pytest.fixture
def s3_bucket(service_env: dict[str, str]):
    """A fresh bucket on the test S3 server; returns (name, minio client)."""
    import uuid

    from pagefleet.workers.settings import get_settings
    from pagefleet.workers.store.s3_clients import s3_client

    client = s3_client(get_settings())
    name = f"t-{uuid.uuid4().hex[:12]}"
    client.make_bucket(name)
    return name, client


class PrivateFleet:
    """A fleet of its own for tests that change settings or kill things: Redis + workers
    (`pagefleet.workers.fleet.launcher.Fleet`), started at once; inside `with`, this process's broker too."""

    def __init__(
        self, tmp: Path, env_extra: dict[str, str], queues: tuple[tuple[str, int], ...]
    ) -> None:
        from pagefleet.workers.fleet.launcher import Fleet

        self.fleet = Fleet(
            tmp, queues, env={"PAGEFLEET_STORAGE__CACHE_DIR": str(tmp / "cache"), **env_extra}
        ).start()
        self.redis, self.url, self.env, self.workers = (
            self.fleet.redis,
            self.fleet.broker_url,
            self.fleet.env,
            self.fleet.workers,
        )

    def __enter__(self) -> "PrivateFleet":
        from pagefleet.workers.app import use_broker

        self.previous = os.environ.get("PAGEFLEET_BROKER__URL")
        use_broker(self.url)
        return self

    def __exit__(self, *exc: object) -> None:
        from pagefleet.workers.app import use_broker
        from pagefleet.workers.settings import get_settings

        self.fleet.stop()
        if self.previous:
            use_broker(self.previous)
        else:
            for key in ("PAGEFLEET_BROKER__URL", "PAGEFLEET_BROKER__RESULT_BACKEND"):
                os.environ.pop(key, None)
            get_settings.cache_clear()
