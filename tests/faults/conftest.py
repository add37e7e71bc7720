"""Fixtures of the fault drills: a fleet per drill (tests/support/drills.py), a bucket, a ledger,
and `submit`/`settle` helpers. Every drill ends with `finish(...)`: the invariant, no orphaned
process, and one line of tallies that the fault drills' table (docs/benchmarks/faults.md) is filled from."""

from __future__ import annotations

import json
import os
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.drills import OPTIONS, DrillFleet, Ledger, make_docs

# one JSON line per drill (bench/faults_table.py turns them into docs/benchmarks/faults.md's table)
RESULTS = Path(
    os.environ.get(
        "PAGEFLEET_FAULTS_RESULTS", Path(tempfile.gettempdir()) / "pagefleet-faults.jsonl"
    )
)


@pytest.fixture
def drill(tmp_path: Path, s3_server: str, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A factory: `with drill(env={...}, queues=...) as fleet:`; also makes a bucket and a ledger."""

    class Drill:
        def __call__(self, **kwargs: Any) -> DrillFleet:
            self.fleet = DrillFleet(tmp_path / f"fleet-{uuid.uuid4().hex[:6]}", s3_server, **kwargs)
            self.fleet.tmp.mkdir(parents=True)
            client = self.fleet.s3()
            self.bucket = f"drill-{uuid.uuid4().hex[:10]}"
            client.make_bucket(self.bucket)
            self.ledger = Ledger(self.bucket, client)
            return self.fleet

        def docs(self, count: int, pages: int) -> list[Path]:
            return make_docs(tmp_path / "docs", count, pages)

    yield Drill()


def submit(
    d: Any,
    paths: list[Path],
    pages: int,
    *,
    on_s3: bool = False,
    force: bool = False,
    callback_url: str | None = None,
    together: bool = False,
    options: dict[str, Any] | None = None,
) -> list[str]:
    """One job a path, each enqueued alone, or with `together` as one submission (`enqueue_many`:
    small documents in batches). `options`: the jobs' options (default: the drills' OCR on every page)."""
    from pagefleet.workers.settings import Options
    from pagefleet.workers.split.submit import enqueue, enqueue_many, spec_for_object, spec_for_path

    opts = Options(**(OPTIONS if options is None else options))
    ids, specs = [], []
    for path in paths:
        prefix = f"out/{path.stem}"
        storage = f"s3://{d.bucket}"
        if on_s3:
            key = f"in/{path.name}"
            info = d.ledger.client.fput_object(d.bucket, key, str(path))
            spec = spec_for_object(
                d.bucket,
                key,
                storage,
                opts,
                etag=info.etag,
                prefix_template=prefix,
                force=force,
                callback_url=callback_url,
            )
        else:
            spec = spec_for_path(
                str(path), storage, prefix, opts, force=force, callback_url=callback_url
            )
        if together:
            specs.append(spec)
            ids.append(spec.job_id)
        else:
            ids.append(enqueue(spec))
        d.ledger.add(spec.job_id, prefix, pages, storage)
    if specs:
        enqueue_many(specs)
    return ids


def settle(job_ids: list[str], timeout_s: float) -> float:
    """Wait until every job is final (or dead-lettered without a record); the seconds it took."""
    from pagefleet.workers.fleet import jobs

    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        try:
            states = [jobs.get(j).get("state") for j in job_ids]
        except Exception:  # noqa: BLE001 - the broker may be down during a drill
            states = [None]
        if all(s in ("done", "error") for s in states):
            return time.monotonic() - started
        time.sleep(0.5)
    print("not settled:", dict(zip(job_ids, states, strict=False)))  # shown with a failing drill
    return time.monotonic() - started


def finish(d: Any, name: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Assert the invariant, stop the fleet, assert nothing of it is left; record the tallies."""
    fleet = d.fleet
    tally = d.ledger.check(fleet.snapshot)
    fleet.__exit__(None, None, None)
    time.sleep(0.5)
    orphans = fleet.orphans()
    tally.update(drill=name, orphans=len(orphans), **(extra or {}))
    with RESULTS.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(tally, ensure_ascii=False) + "\n")
    assert tally["problems"] == [], f"{tally['problems']}\n{log_tails(fleet.tmp)}"
    assert tally["lost"] == 0 and orphans == []
    return tally


def log_tails(folder: Path, lines: int = 25) -> str:
    """The last warnings and errors of each process the drill started (its logs go with tmp_path,
    and a CI run keeps only what the assertion prints)."""
    out = []
    for log in sorted(folder.glob("*.log")):
        notable = [
            ln[:300]
            for ln in log.read_text(encoding="utf-8", errors="replace").splitlines()
            if " WARNING " in ln or " ERROR " in ln or " CRITICAL " in ln or "received" in ln
        ]
        out.append(f"--- {log.name}\n" + "\n".join(notable[-lines:]))
    return "\n".join(out)
