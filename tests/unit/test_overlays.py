"""The kustomize overlays as a cluster would receive them (rendered by kubectl where installed,
else by tests/support/kustomize.py, with the operator's secret env files written by the test):
every object validates, no Secret holds a placeholder and a checkout without the env files does
not build, KEDA can reach Redis from its own namespace, KEDA alone owns replicas, GPU pods find
their weights on a volume that outlives them, the watchdog runs in its own process, and every
worker honours the log-level setting."""

from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support.kustomize import KustomizeError, build, pod_templates, render, write_test_secrets
from pagefleet.workers.settings import QUEUES

kubernetes_validate = pytest.importorskip("kubernetes_validate")

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "k8s"
OVERLAYS = ["cpu-only", "gpu"]
KEDA_KINDS = {"ScaledObject", "TriggerAuthentication"}
FQDN = re.compile(r"^(?P<service>[a-z0-9-]+)\.(?P<namespace>[a-z0-9-]+)\.svc\.cluster\.local:\d+$")


PLACEHOLDER = re.compile(r"change[-_ ]?me|example|replace|<[a-z_ ]+>|xxx|todo", re.IGNORECASE)


def rendered(overlay: str) -> list[dict[str, Any]]:
    return build(overlay)


def secret_values(secret: dict[str, Any]) -> dict[str, str]:
    values = dict(secret.get("stringData") or {})
    values.update({k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()})
    return values


def by_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def config_env(objects: list[dict[str, Any]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for config in by_kind(objects, "ConfigMap").values():
        env.update(config.get("data") or {})
    for secret in by_kind(objects, "Secret").values():
        env.update(secret_values(secret))
    return env


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlays_render_and_validate(overlay: str) -> None:
    objects = rendered(overlay)
    for obj in objects:
        if obj["kind"] not in KEDA_KINDS:
            kubernetes_validate.validate(obj, "1.30", strict=True)
        if obj["kind"] != "Namespace":
            assert obj["metadata"]["namespace"] == "pagefleet", obj["metadata"]["name"]
    names = {f"{o['kind']}/{o['metadata']['name']}" for o in objects}
    config = by_kind(objects, "ConfigMap")["pagefleet-config"]["data"]
    if overlay == "cpu-only":
        assert "Deployment/worker-gpu" not in names and "ScaledObject/worker-gpu" not in names
        assert config["PAGEFLEET_GPU__ENABLED"] == "0"
    else:
        assert "ScaledObject/worker-gpu" in names and config["PAGEFLEET_GPU__ENABLED"] == "1"
    images = {
        c["image"]
        for o in objects
        for spec in pod_templates(o)
        for c in [*spec.get("initContainers", []), *spec["containers"]]
        if "pagefleet-" in c["image"]
    }
    assert images and all(i.startswith("registry.example.com/") for i in images), images


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_keda_reaches_redis_by_its_fully_qualified_name(overlay: str) -> None:
    """KEDA's operator resolves addresses from its own namespace: `redis:6379` finds nothing."""
    objects = rendered(overlay)
    env = config_env(objects)
    services = set(by_kind(objects, "Service"))
    triggers = [t for s in by_kind(objects, "ScaledObject").values() for t in s["spec"]["triggers"]]
    assert triggers
    for trigger in triggers:
        meta = trigger["metadata"]
        address = meta.get("address") or env[meta["addressFromEnv"]]
        match = FQDN.match(address)
        assert match, f"trigger on {meta['listName']}: {address!r} is not fully qualified"
        assert match["namespace"] == "pagefleet" and match["service"] in services, address
    broker = env["PAGEFLEET_BROKER__URL"].rsplit("@", 1)[-1].split("/", 1)[0]
    assert FQDN.match(broker), broker


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_keda_alone_owns_replicas(overlay: str) -> None:
    objects = rendered(overlay)
    deployments = by_kind(objects, "Deployment")
    scaled = [
        s["spec"]["scaleTargetRef"]["name"] for s in by_kind(objects, "ScaledObject").values()
    ]
    assert len(scaled) == len([q for q in QUEUES if overlay == "gpu" or q != "gpu"])
    for name in scaled:
        assert "replicas" not in deployments[name]["spec"], (
            f"{name}: kubectl apply would reset KEDA's count"
        )


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_no_secret_holds_a_placeholder(overlay: str) -> None:
    """Every Secret `apply -k` applies comes from the env files the operator wrote (here: the test)."""
    objects = rendered(overlay)
    secrets = by_kind(objects, "Secret")
    assert set(secrets) == {"pagefleet-secrets", "flower-auth"}
    for name, secret in secrets.items():
        for key, value in secret_values(secret).items():
            assert not PLACEHOLDER.search(value), f"Secret {name}: {key} holds a placeholder"
    for path in K8S.rglob("*.yaml"):  # no Secret, and no value, written into a manifest
        assert "kind: Secret" not in path.read_text(encoding="utf-8"), path
    for example in K8S.rglob(
        "*.env.example"
    ):  # the examples name keys, and hold no value to forget
        values = [
            line.partition("=")[2]
            for line in example.read_text().splitlines()
            if line and line[0] != "#"
        ]
        assert values and not any(values), f"{example}: leave every value empty"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_without_the_env_files_the_build_fails_naming_them(overlay: str) -> None:
    with pytest.raises(KustomizeError, match=r"secrets/pagefleet-secrets\.env"):
        build(overlay, secrets=False)
    assert (K8S / "base" / "secrets" / "pagefleet-secrets.env.example").is_file()
    gitignore = (ROOT / ".gitignore").read_text(encoding="utf-8")
    assert "k8s/**/*.env" in gitignore.splitlines(), "the operator's secrets stay out of git"


def test_gpu_workers_find_their_models_on_a_volume_that_outlives_them() -> None:
    objects = rendered("gpu")
    env = config_env(objects)
    spec = pod_templates(by_kind(objects, "Deployment")["worker-gpu"])[0]
    claims = {
        v["name"]: v["persistentVolumeClaim"]
        for v in spec["volumes"]
        if "persistentVolumeClaim" in v
    }
    worker = spec["containers"][0]
    models = env["PAGEFLEET_OCR__MODELS__DIR"]
    [mount] = [m for m in worker["volumeMounts"] if m["mountPath"] == models]
    claim = claims[mount["name"]]
    pvc = by_kind(objects, "PersistentVolumeClaim")[claim["claimName"]]
    assert "ReadOnlyMany" in pvc["spec"]["accessModes"] and claim["readOnly"] and mount["readOnly"]
    [init] = spec["initContainers"]  # verifies, never downloads
    assert init["args"] == ["models", "verify", "--quick", models], init["args"]
    assert {m["mountPath"]: m["name"] for m in init["volumeMounts"]}[models] == mount["name"]
    assert {"name": "HF_HUB_OFFLINE", "value": "1"} in worker["env"]
    [job] = by_kind(objects, "Job").values()  # fills the claim once
    job_spec = pod_templates(job)[0]
    args = job_spec["containers"][0]["args"]
    assert args[:2] == ["models", "pull"], args
    source = re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], args[args.index("--from") + 1])
    assert source.startswith("s3://") and args[args.index("--to") + 1] == models
    [job_claim] = [
        v["persistentVolumeClaim"] for v in job_spec["volumes"] if "persistentVolumeClaim" in v
    ]
    assert job_claim["claimName"] == claim["claimName"] and not job_claim.get("readOnly")
    cpu = rendered("cpu-only")
    assert not by_kind(cpu, "PersistentVolumeClaim") and not by_kind(cpu, "Job"), (
        "no GPU, no model volume"
    )


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_watchdog_runs_apart_from_every_worker(overlay: str) -> None:
    """`pagefleet watchdog` sweeps in its own pod: a dead collect worker cannot take it along."""
    objects = rendered(overlay)
    watchdogs = [
        o
        for o in by_kind(objects, "Deployment").values()
        if pod_templates(o)[0]["containers"][0].get("args") == ["watchdog"]
    ]
    assert len(watchdogs) == 1, "nothing runs the deadline watchdog"
    [deployment] = watchdogs
    assert len(pod_templates(deployment)[0]["containers"]) == 1, "no worker shares its pod"
    assert (
        deployment["spec"].get("replicas") == 1
        and deployment["spec"]["strategy"]["type"] == "Recreate"
    )


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_workers_honour_the_log_level_setting(overlay: str) -> None:
    objects = rendered(overlay)
    env = config_env(objects)
    assert (
        env["PAGEFLEET_OBSERVABILITY__LOGLEVEL"]
        and env["PAGEFLEET_OBSERVABILITY__LOG_FORMAT"] == "json"
    )
    workers = [
        d
        for d in by_kind(objects, "Deployment").values()
        if (pod_templates(d)[0]["containers"][0].get("args") or [""])[0] == "worker"
    ]
    assert len(workers) == len([q for q in QUEUES if overlay == "gpu" or q != "gpu"])
    for deployment in workers:
        args = pod_templates(deployment)[0]["containers"][0]["args"]
        assert args[args.index("--loglevel") + 1] == "$(PAGEFLEET_OBSERVABILITY__LOGLEVEL)", (
            deployment["metadata"]["name"]
        )


def test_renderer_applies_deletes_merges_and_generators(tmp_path: Path) -> None:
    """The Python renderer itself: the cpu-only overlay deletes, the gpu overlay merges, secrets are generated."""
    shutil.copytree(K8S, tmp_path / "k8s", ignore=shutil.ignore_patterns("*.env"))
    with pytest.raises(KustomizeError, match="pagefleet-secrets.env"):
        render(tmp_path / "k8s" / "overlays" / "gpu")
    write_test_secrets(tmp_path / "k8s")
    cpu = {
        (o["kind"], o["metadata"]["name"])
        for o in render(tmp_path / "k8s" / "overlays" / "cpu-only")
    }
    assert ("Deployment", "worker-gpu") not in cpu and ("Deployment", "worker-cpu") in cpu
    assert ("Secret", "pagefleet-secrets") in cpu and (
        "PersistentVolumeClaim",
        "pagefleet-models",
    ) not in cpu
    gpu = by_kind(render(tmp_path / "k8s" / "overlays" / "gpu"), "Deployment")["worker-gpu"]
    spec = pod_templates(gpu)[0]
    assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"} and spec["tolerations"]


def test_dashboard_queries_only_exported_metrics() -> None:
    dashboard = json.loads((K8S / "dashboards" / "pagefleet.json").read_text())
    exported = {
        "pagefleet_queue_depth",
        "pagefleet_pages_total",
        "pagefleet_gate_refusals_total",
        "pagefleet_documents_total",
        "pagefleet_rung_seconds_sum",
        "pagefleet_rung_seconds_count",
        "pagefleet_receiver_requests_total",
        "pagefleet_generate_calls_total",
        "pagefleet_generate_pages_total",
        "pagefleet_generate_tasks_total",
        "pagefleet_bridge_submissions_total",
        "pagefleet_bridge_events_total",
    }
    used = {
        m
        for panel in dashboard["panels"]
        for t in panel["targets"]
        for m in re.findall(r"pagefleet_\w+", t["expr"])
    }
    assert used and used <= exported, used - exported
