"""Deterministic storage keys. Work state lives under `.pagefleet/work/<job>/`; artifacts under the
job's artifact prefix (`<stem>` locally, `artifacts/<sha256>` in object storage)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pagefleet.workers.settings import PIPELINE_VERSION

WORK = ".pagefleet/work"
ARTIFACTS = ("document.json", "document.md", "text.txt", "report.json")


def job_id_for(sha256: str, options: dict[str, Any], target: str = "") -> str:
    """sha256 of the source bytes + pipeline version + options + output target (storage URL and
    artifact prefix): a re-upload to the same place is the same job; the same bytes sent to two
    places are two jobs (never one work folder and one set of artifacts for both)."""
    identity: dict[str, Any] = {"sha256": sha256, "version": PIPELINE_VERSION, "options": options}
    if target:
        identity["target"] = target
    blob = json.dumps(identity, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def work(job_id: str, *parts: str) -> str:
    return "/".join((WORK, job_id, *parts))


def job_manifest(job_id: str) -> str:
    return work(job_id, "job.json")


def page(job_id: str, number: int) -> str:
    return work(job_id, "pages", f"{number:05d}.json")


def pending(job_id: str, number: int) -> str:
    return work(job_id, "pending", f"{number:05d}.json")


def artifact(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name
