"""Render a kustomize overlay in Python, for the tests (kubectl/kustomize are not installed here).

Covers exactly the features k8s/ uses, and fails loudly on any other key so a new feature cannot
be silently ignored: `resources` (files and directories), `namespace`, `labels` (pairs, metadata
only), `patches` (strategic-merge files: maps merged, lists of named items merged by `name`,
`$patch: delete` removes the object) and `images` (newName/newTag, in containers and
initContainers of Deployments, StatefulSets and CronJobs).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

KNOWN_KEYS = {"apiVersion", "kind", "namespace", "labels", "resources", "patches", "images"}
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
    if isinstance(target, list) and isinstance(patch, list) and all(isinstance(i, dict) and "name" in i for i in target + patch):
        by_name = {item["name"]: item for item in target}
        out = [merge(by_name[i["name"]], i) if i["name"] in by_name else copy.deepcopy(i) for i in patch]
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
                        container["image"] = f"{rule.get('newName', name)}:{rule.get('newTag', tag)}"


def render(directory: Path) -> list[dict[str, Any]]:
    config = yaml.safe_load((directory / "kustomization.yaml").read_text(encoding="utf-8"))
    unknown = set(config) - KNOWN_KEYS
    if unknown:
        raise NotImplementedError(f"{directory}: kustomize features not rendered here: {sorted(unknown)}")
    objects: list[dict[str, Any]] = []
    for resource in config.get("resources", []):
        path = (directory / resource).resolve()
        objects += render(path) if path.is_dir() else _docs(path)
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
