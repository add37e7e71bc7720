"""docker/compose.yaml: valid against the official Compose specification (vendored, offline), and
wired as the fleet needs it: MinIO's webhook to the receiver, every queue consumed, Redis with
maxmemory + noeviction, the watchdog apart from every worker, the GPU profile with its models pulled first."""

from __future__ import annotations

import importlib.resources
import json
import re
from typing import Any

import jsonschema
import pytest

from tests.unit.test_manifests import compose
from pagefleet.workers.app import app
from pagefleet.workers.pdf.scratch import SCRATCH_SHM_MB
from pagefleet.workers.settings import QUEUES


def test_compose_matches_the_compose_specification() -> None:
    """The official Compose JSON schema, as vendored by check-jsonschema (no network)."""
    vendored = pytest.importorskip("check_jsonschema.builtin_schemas.vendor")
    schema = json.loads(
        importlib.resources.files(vendored)
        .joinpath("compose-spec.json")
        .read_text(encoding="utf-8")
    )
    validator = jsonschema.validators.validator_for(schema)(schema)
    validator.validate(compose())
    broken = compose()
    broken["services"]["flower"]["stop_grace_periodx"] = "1s"
    assert list(validator.iter_errors(broken)), "the schema rejects unknown keys"


def test_compose_wiring() -> None:
    services = compose()["services"]
    redis_cmd = " ".join(services["redis"]["command"])
    assert "--maxmemory-policy noeviction" in redis_cmd and "--appendonly yes" in redis_cmd
    assert re.search(r"--maxmemory \S+", redis_cmd), "noeviction means nothing without a maxmemory"
    assert services["models-init"]["profiles"] == ["gpu"] and services["models-init"]["command"][
        :2
    ] == ["models", "pull"]
    assert (
        services["worker-gpu"]["depends_on"]["models-init"]["condition"]
        == "service_completed_successfully"
    )
    for name, service in services.items():
        if _compose_queues(service):
            command = service["command"]
            assert (
                command[command.index("--loglevel") + 1]
                == "${PAGEFLEET_OBSERVABILITY__LOGLEVEL:-INFO}"
            ), name
    minio_env = services["minio"]["environment"]
    for key in ("ENABLE", "ENDPOINT", "AUTH_TOKEN", "QUEUE_DIR"):
        assert minio_env[f"MINIO_NOTIFY_WEBHOOK_{key}_PRIMARY"], key
    assert minio_env["MINIO_NOTIFY_WEBHOOK_ENDPOINT_PRIMARY"] == "http://events:8080/events"
    assert minio_env["MINIO_NOTIFY_WEBHOOK_AUTH_TOKEN_PRIMARY"].startswith("${EVENTS_TOKEN")
    assert services["events"]["environment"]["EVENTS_TOKEN"].startswith("${EVENTS_TOKEN")
    init = services["minio-init"]["command"][0]
    assert "mc mb" in init and "arn:minio:sqs::primary:webhook" in init and "--event put" in init
    assert services["minio-init"]["restart"] == "no"
    consumed = sorted(q for s in services.values() for q in _compose_queues(s))
    assert consumed == sorted(QUEUES)
    gpu = services["worker-gpu"]
    assert gpu["profiles"] == ["gpu"] and gpu["build"]["target"] == "gpu"
    assert gpu["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]
    for name, service in services.items():
        assert set(service.get("depends_on") or {}) <= set(services), name
        if _compose_queues(service):
            assert (
                _seconds(service["stop_grace_period"])
                >= app.conf.task_time_limit + app.conf.worker_soft_shutdown_timeout
            )
            # Docker's default /dev/shm (64 MB) is too small for the sandbox's scratch files (scratch_base)
            assert int(service["shm_size"].rstrip("m")) >= SCRATCH_SHM_MB, name
            assert service["healthcheck"]["test"][1:4] == [
                "python",
                "-m",
                "pagefleet.workers.fleet.heartbeat",
            ]


def _compose_queues(service: dict[str, Any]) -> list[str]:
    command = service.get("command") or []
    return command[command.index("--queues") + 1].split(",") if "--queues" in command else []


def _seconds(duration: str) -> float:
    units = {"h": 3600, "m": 60, "s": 1}
    return sum(float(n) * units[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)([hms])", duration))


def test_the_watchdog_runs_apart_from_every_worker() -> None:
    """In compose and in the README's fleet commands, `pagefleet watchdog` is a process of its own:
    the sweep does not wait on a collect worker that may be the thing that died."""
    from tests.unit.test_manifests import ROOT

    services = compose()["services"]
    watchdogs = [name for name, s in services.items() if s.get("command") == ["watchdog"]]
    assert watchdogs == ["watchdog"], "compose runs no `pagefleet watchdog`"
    assert (
        not _compose_queues(services["watchdog"])
        and services["watchdog"]["restart"] == "unless-stopped"
    )
    assert "profiles" not in services["watchdog"], "it runs in every fleet, not only a profile's"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    fleet = readme[readme.index("## The fleet") :]
    block = fleet[fleet.index("```sh") : fleet.index("```", fleet.index("```sh") + 5)]
    commands = [line.split("#")[0].split() for line in block.splitlines()[1:]]
    assert ["pagefleet", "watchdog"] in commands, "README's fleet commands leave out the watchdog"
    assert not any("watchdog" in c and "worker" in c for c in commands)
