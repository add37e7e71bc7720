"""Render a kustomize overlay for the tests: `kubectl kustomize` where it is installed, else in Python.

`build(overlay)` renders from a copy of k8s/ in which the env files the operator writes
(`secrets/*.env`, from the `*.env.example` beside each) hold test values; `build(overlay,
secrets=False)` leaves them out, as a fresh checkout does (KustomizeError, naming the file).

`render(directory)`, the Python renderer, covers exactly the features k8s/ uses, and fails loudly
on any other key so a new feature cannot be silently ignored: `resources` (files and directories),
`namespace`, `labels` (pairs, metadata only), `patches` (strategic-merge files: maps merged, lists
of named items merged by `name`, `$patch: delete` removes the object), `images` (newName/newTag, in
containers and initContainers of Deployments, StatefulSets, Jobs and CronJobs) and
`secretGenerator` (`envs` files, with `generatorOptions.disableNameSuffixHash`).
"""

from __future__ import annotations

import base64
import copy
import functools
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml

KNOWN_KEYS = {
    "apiVersion",
    "kind",
    "namespace",
    "labels",
    "resources",
    "patches",
    "images",
    "secretGenerator",
    "generatorOptions",
}
K8S = Path(__file__).resolve().parents[2] / "k8s"
# what a test writes into the operator's env files: real-looking values, never a placeholder
TEST_SECRETS = {
    "PAGEFLEET_BROKER__URL": "redis://:test-redis-password@redis.pagefleet.svc.cluster.local:6379/0",
    "REDIS_PASSWORD": "test-redis-password",
    "FLOWER_BASIC_AUTH": "admin:test-flower-password",
}


class KustomizeError(RuntimeError):
    """The build failed; the message is kustomize's (or the Python renderer's)."""


CLUSTER_SCOPED = {"Namespace"}


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def _identity(obj: dict[str, Any]) -> tuple[str, str]:
    return obj["kind"], obj["metadata"]["name"]


def merge(target: Any, patch: Any) -> Any:
    """Strategic merge as far as k8s/ needs it."""
    if isinstance(target, dict) and isinstance(patch, dict):
        merged = dict(target)
        for key, value in patch.items():
            merged[key] = merge(target[key], value) if key in target else copy.deepcopy(value)
        return merged
    if (
        isinstance(target, list)
        and isinstance(patch, list)
        and all(isinstance(i, dict) and "name" in i for i in target + patch)
    ):
        by_name = {item["name"]: item for item in target}
        out = [
            merge(by_name[i["name"]], i) if i["name"] in by_name else copy.deepcopy(i)
            for i in patch
        ]
        patched = {i["name"] for i in patch}
        return [i for i in target if i["name"] not in patched] + out
    return copy.deepcopy(patch)


def pod_templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod specs inside a workload object (none for other kinds)."""
    if obj["kind"] in ("Deployment", "StatefulSet", "DaemonSet"):
        return [obj["spec"]["template"]["spec"]]
    if obj["kind"] == "CronJob":
        return [obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]]
    if obj["kind"] == "Job":
        return [obj["spec"]["template"]["spec"]]
    return []


def _set_images(objects: list[dict[str, Any]], images: list[dict[str, str]]) -> None:
    for obj in objects:
        for spec in pod_templates(obj):
            for container in [*spec.get("initContainers", []), *spec["containers"]]:
                name, _, tag = container["image"].partition(":")
                for rule in images:
                    if rule["name"] == name:
                        container["image"] = (
                            f"{rule.get('newName', name)}:{rule.get('newTag', tag)}"
                        )


def env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines as kustomize reads an `envs` file (comments and blank lines skipped)."""
    pairs = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            pairs[key.strip()] = value
    return pairs


def _generated(directory: Path, config: dict[str, Any]) -> list[dict[str, Any]]:
    if config.get("secretGenerator") and not (config.get("generatorOptions") or {}).get(
        "disableNameSuffixHash"
    ):
        raise NotImplementedError(f"{directory}: name suffix hashes are not rendered here")
    secrets = []
    for generator in config.get("secretGenerator", []):
        data: dict[str, str] = {}
        for name in generator["envs"]:
            if not (directory / name).is_file():
                raise KustomizeError(
                    f"loading KV pairs: env source files: [{name}]: no such file: {directory / name}"
                )
            data.update(
                {
                    k: base64.b64encode(v.encode()).decode()
                    for k, v in env_file(directory / name).items()
                }
            )
        secrets.append(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": generator["name"]},
                "type": generator.get("type", "Opaque"),
                "data": data,
            }
        )
    return secrets


def write_test_secrets(tree: Path) -> None:
    """Every `*.env.example` under `tree` copied to its `*.env` with test values."""
    for example in tree.rglob("*.env.example"):
        keys = env_file(example)
        lines = [f"{k}={TEST_SECRETS.get(k, 'test-' + k.lower().replace('_', '-'))}" for k in keys]
        example.with_suffix("").write_text("\n".join(lines) + "\n", encoding="utf-8")


@functools.cache
def _build(overlay: str, secrets: bool) -> str:
    with tempfile.TemporaryDirectory(prefix="pagefleet-k8s-") as tmp:
        tree = Path(tmp) / "k8s"
        shutil.copytree(
            K8S, tree, ignore=shutil.ignore_patterns("*.env")
        )  # never the operator's own
        if secrets:
            write_test_secrets(tree)
        if shutil.which("kubectl"):
            proc = subprocess.run(
                ["kubectl", "kustomize", str(tree / "overlays" / overlay)],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            if proc.returncode != 0:
                raise KustomizeError(proc.stderr.replace(tmp, "<copy>"))
            return proc.stdout
        return yaml.safe_dump_all(render(tree / "overlays" / overlay))


def build(overlay: str, secrets: bool = True) -> list[dict[str, Any]]:
    """The overlay's objects, as `kubectl apply -k` would receive them (see the module docstring)."""
    return [d for d in yaml.safe_load_all(_build(overlay, secrets)) if d]


def render(directory: Path) -> list[dict[str, Any]]:
    config = yaml.safe_load((directory / "kustomization.yaml").read_text(encoding="utf-8"))
    unknown = set(config) - KNOWN_KEYS
    if unknown:
        raise NotImplementedError(
            f"{directory}: kustomize features not rendered here: {sorted(unknown)}"
        )
    objects: list[dict[str, Any]] = []
    for resource in config.get("resources", []):
        path = (directory / resource).resolve()
        objects += render(path) if path.is_dir() else _docs(path)
    objects += _generated(directory, config)
    for patch_ref in config.get("patches", []):
        for patch in _docs(directory / patch_ref["path"]):
            index = next(i for i, o in enumerate(objects) if _identity(o) == _identity(patch))
            if patch.get("$patch") == "delete":
                del objects[index]
            else:
                objects[index] = merge(objects[index], patch)
    for rule in config.get("labels", []):
        for obj in objects:
            obj["metadata"].setdefault("labels", {}).update(rule["pairs"])
    if "namespace" in config:
        for obj in objects:
            if obj["kind"] not in CLUSTER_SCOPED:
                obj["metadata"]["namespace"] = config["namespace"]
    _set_images(objects, config.get("images", []))
    return objects
