"""The signatures the chords of a document's tasks are made of (no task here): tasks are named,
not imported, so no task module imports another; each is labelled with its job alone, so task
events and Flower never show file names."""

from __future__ import annotations

from typing import Any

from celery import Signature

from pagefleet.workers.app import app


def signature(name: str, *args: Any, job_id: str, **options: Any) -> Signature:
    """An immutable signature of task `name`, labelled with the job only."""
    return app.signature(name, args=args, immutable=True).set(
        argsrepr=f"(job {job_id})", kwargsrepr="{}", **options
    )


def after_error(spec: dict) -> Signature:
    """A document chord's error callback (collect what there is, record the failure)."""
    return signature("pagefleet.collect_after_error", spec, job_id=spec["job_id"])
