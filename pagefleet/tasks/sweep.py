"""pagefleet.watchdog (the beat schedule's sweep), pagefleet.redispatch (a new chord for the pages
a stalled job is missing) and pagefleet.collect_final (the watchdog's last word: collect with what
exists, missing pages `failed`). See pagefleet/workers/watchdog.py."""

from __future__ import annotations

import logging

from pagefleet.tasks.chords import dispatch
from pagefleet.workers import watchdog as wd
from pagefleet.workers.app import task
from pagefleet.workers.collect.finish import finish
from pagefleet.workers.settings import get_settings
from pagefleet.workers.split.pages import SplitOutcome

log = logging.getLogger(__name__)


@task("pagefleet.watchdog", max_retries=0)
def watchdog() -> list[list[str]]:
    return [list(x) for x in wd.sweep()]


@task("pagefleet.redispatch")
def redispatch(spec: dict, pending: dict[str, list[int]]) -> dict:
    outcome = SplitOutcome(
        spec["job_id"], pending={q: [int(n) for n in ns] for q, ns in pending.items()}
    )
    dispatch(spec, outcome, get_settings().gpu.vlm.batch_size)
    return {"job_id": spec["job_id"], "redispatched": outcome.pending}


@task("pagefleet.collect_final")
def collect_final(spec: dict) -> dict:
    return finish(spec, final_attempt=True)
