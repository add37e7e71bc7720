"""The kustomize overlays as a cluster would receive them (rendered by kubectl where installed,
else by tests/support/kustomize.py): every object validates, KEDA can reach Redis from its own
namespace, KEDA alone owns replicas, GPU pods get their weights from an initContainer, the
watchdog is scheduled, and every worker honours the log-level setting."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.kustomize import pod_templates, render
from workers.app import QUEUES, app

kubernetes_validate = pytest.importorskip("kubernetes_validate")

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "k8s"
OVERLAYS = ["cpu-only", "gpu"]
KEDA_KINDS = {"ScaledObject", "TriggerAuthentication"}
FQDN = re.compile(r"^(?P<service>[a-z0-9-]+)\.(?P<namespace>[a-z0-9-]+)\.svc\.cluster\.local:\d+$")


def rendered(overlay: str) -> list[dict[str, Any]]:
    directory = K8S / "overlays" / overlay
    if shutil.which("kubectl"):
        out = subprocess.run(["kubectl", "kustomize", str(directory)], capture_output=True, text=True, timeout=60,
                             check=True).stdout
        return [d for d in yaml.safe_load_all(out) if d]
    return render(directory)


def by_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def config_env(objects: list[dict[str, Any]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for config in by_kind(objects, "ConfigMap").values():
        env.update(config.get("data") or {})
    for secret in by_kind(objects, "Secret").values():
        env.update(secret.get("stringData") or {})
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
        assert config["PAGEFLEET_GPU"] == "0"
    else:
        assert "ScaledObject/worker-gpu" in names and config["PAGEFLEET_GPU"] == "1"
    images = {c["image"] for o in objects for spec in pod_templates(o)
              for c in [*spec.get("initContainers", []), *spec["containers"]] if "pagefleet-" in c["image"]}
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
    broker = env["PAGEFLEET_BROKER_URL"].rsplit("@", 1)[-1].split("/", 1)[0]
    assert FQDN.match(broker), broker


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_keda_alone_owns_replicas(overlay: str) -> None:
    objects = rendered(overlay)
    deployments = by_kind(objects, "Deployment")
    scaled = [s["spec"]["scaleTargetRef"]["name"] for s in by_kind(objects, "ScaledObject").values()]
    assert len(scaled) == len([q for q in QUEUES if overlay == "gpu" or q != "gpu"])
    for name in scaled:
        assert "replicas" not in deployments[name]["spec"], f"{name}: kubectl apply would reset KEDA's count"


def test_gpu_workers_pull_their_models_first() -> None:
    objects = rendered("gpu")
    env = config_env(objects)
    spec = pod_templates(by_kind(objects, "Deployment")["worker-gpu"])[0]
    [init] = spec["initContainers"]
    args = init["args"]
    assert args[:2] == ["models", "pull"], args
    source = args[args.index("--from") + 1]
    source = re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], source)
    assert source.startswith("s3://"), source
    target = args[args.index("--to") + 1]
    assert target == env["PAGEFLEET_MODELS_DIR"]
    worker = spec["containers"][0]
    mounted = {m["mountPath"]: m["name"] for m in worker["volumeMounts"]}
    assert {m["mountPath"]: m["name"] for m in init["volumeMounts"]}[target] == mounted[target]
    assert {"name": "HF_HUB_OFFLINE", "value": "1"} in worker["env"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_watchdog_is_scheduled(overlay: str) -> None:
    objects = rendered(overlay)
    jobs = [o for o in objects if o["kind"] == "CronJob"]
    beat = [o for o in by_kind(objects, "Deployment").values()
            if (pod_templates(o)[0]["containers"][0].get("args") or [])[2:3] == ["beat"]]
    scheduled = [pod_templates(o)[0]["containers"][0]["args"] for o in jobs]
    assert ["watchdog", "--once"] in scheduled or beat, "nothing runs the deadline watchdog"
    for job in jobs:
        assert job["spec"]["concurrencyPolicy"] == "Forbid"
        assert job["spec"]["jobTemplate"]["spec"]["activeDeadlineSeconds"] < 300  # shorter than the period
    for deployment in beat:
        assert deployment["spec"].get("replicas") == 1, "one beat, or every sweep runs twice"
        assert deployment["spec"]["strategy"]["type"] == "Recreate", "a rolling update runs two beats"
        assert "pagefleet.watchdog" in {e["task"] for e in app.conf.beat_schedule.values()}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_workers_honour_the_log_level_setting(overlay: str) -> None:
    objects = rendered(overlay)
    env = config_env(objects)
    assert env["PAGEFLEET_LOGLEVEL"] and env["PAGEFLEET_LOG_FORMAT"] == "json"
    workers = [d for d in by_kind(objects, "Deployment").values()
               if (pod_templates(d)[0]["containers"][0].get("args") or [""])[0] == "worker"]
    assert len(workers) == len([q for q in QUEUES if overlay == "gpu" or q != "gpu"])
    for deployment in workers:
        args = pod_templates(deployment)[0]["containers"][0]["args"]
        assert args[args.index("--loglevel") + 1] == "$(PAGEFLEET_LOGLEVEL)", deployment["metadata"]["name"]


def test_renderer_applies_deletes_and_merges() -> None:
    """The Python renderer itself: the cpu-only overlay deletes, the gpu overlay merges."""
    cpu = {(o["kind"], o["metadata"]["name"]) for o in render(K8S / "overlays" / "cpu-only")}
    assert ("Deployment", "worker-gpu") not in cpu and ("Deployment", "worker-cpu") in cpu
    gpu = by_kind(render(K8S / "overlays" / "gpu"), "Deployment")["worker-gpu"]
    spec = pod_templates(gpu)[0]
    assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"} and spec["tolerations"]


def test_dashboard_queries_only_exported_metrics() -> None:
    dashboard = json.loads((K8S / "dashboards" / "pagefleet.json").read_text())
    exported = {"pagefleet_queue_depth", "pagefleet_pages_total", "pagefleet_gate_refusals_total",
                "pagefleet_documents_total", "pagefleet_rung_seconds_sum", "pagefleet_rung_seconds_count",
                "pagefleet_receiver_requests_total", "pagefleet_generate_calls_total", "pagefleet_generate_pages_total",
                "pagefleet_generate_tasks_total", "pagefleet_bridge_submissions_total", "pagefleet_bridge_events_total"}
    used = {m for panel in dashboard["panels"] for t in panel["targets"] for m in re.findall(r"pagefleet_\w+", t["expr"])}
    assert used and used <= exported, used - exported
