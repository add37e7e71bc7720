"""`pagefleet run`: process local PDFs on the embedded fleet, show progress, write `DIR/<stem>/…`.

Exit status (`pagefleet.workers.cli.exitcodes`): 0 every page of every document accepted; 2 artifacts written
but some page needs review; an input error (3–5) for a document that gave error.json; a fleet
failure (10–13) when a worker died, the broker was lost or the deadline passed; 130 or 143 on
SIGINT or SIGTERM. A batch exits with its most severe outcome and prints the count of each.

Whatever ends the run early — a dead worker, its Redis dying or unreachable, the deadline, SIGINT
or SIGTERM — everything it started is stopped first, then every document that has no complete
artifacts gets an `aborted` error.json: no document is left with nothing. Two runs over one
`--out` are serialized by a lock file (the second finds the first one's documents done). A run that
could not do this itself (SIGKILL, the OOM killer) leaves its list of documents in `--out`; the next
run over that folder writes `aborted` for those that have neither artifacts nor an error.json.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import redis
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from pagefleet.workers.cli.embedded import (
    EmbeddedFleet,
    Terminated,
    end_run,
    left_by_dead_run,
    out_lock,
    record_run,
    signals_as_interrupt,
)
from pagefleet.workers.cli.exitcodes import ExitCode, for_code, for_error, summary
from pagefleet.workers.errors import AbortedError, BrokerUnavailable, PagefleetError, error_record
from pagefleet.workers.fleet import jobs
from pagefleet.workers.model import JobSpec
from pagefleet.workers.settings import Options, get_settings
from pagefleet.workers.split.submit import enqueue_many, spec_for_path
from pagefleet.workers.store.storage import LocalStorage

log = logging.getLogger(__name__)


@dataclass
class Tracked:
    spec: JobSpec
    stem: str
    started: float = field(default_factory=time.monotonic)
    state: str = "queued"
    pages: int = 0
    done: int = 0
    status: str = ""
    routes: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    cached: bool = False


def expand_inputs(paths: list[str]) -> tuple[list[Path], list[str]]:
    files: list[Path] = []
    missing: list[str] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            files.extend(
                sorted(x for x in p.iterdir() if x.is_file() and x.suffix.lower() == ".pdf")
            )
        elif p.is_file():
            files.append(p)
        else:
            missing.append(raw)
    return files, missing


def unique_stems(files: list[Path]) -> list[str]:
    seen: Counter[str] = Counter()
    stems = []
    for f in files:
        stem = f.stem or "document"
        seen[stem] += 1
        stems.append(stem if seen[stem] == 1 else f"{stem}-{seen[stem]}")
    return stems


def _cached(out: Path, t: Tracked) -> bool:
    report = out / t.stem / "report.json"
    if t.spec.force or not report.exists():
        return False
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if data.get("job_id") != t.spec.job_id:
        return False
    t.cached, t.state, t.status = True, "done", data.get("status", "")
    t.pages = t.done = int(data.get("page_count", 0))
    t.routes = data.get("routes", {})
    return True


def run(
    paths: list[str],
    out: str,
    options: Options,
    *,
    workers: int,
    broker: str | None,
    force: bool,
    gpu: bool = False,
    console: Console | None = None,
) -> int:
    console = console or Console(stderr=True, markup=False)
    files, missing = expand_inputs(paths)
    if missing:
        console.print(
            f"pagefleet: error: no such file or directory: {', '.join(missing)}", markup=False
        )
        return ExitCode.INPUT_ERROR
    if not files:
        console.print("pagefleet: error: no PDF files given")
        return ExitCode.INPUT_ERROR
    outdir = Path(out).resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    storage = LocalStorage(outdir)
    started = time.monotonic()
    waiting = lambda: console.print(f"pagefleet: waiting for another run writing to {outdir}")  # noqa: E731
    tracked: list[Tracked] = []
    failure: ExitCode | None = None
    try:
        # SIGTERM is `Terminated` (exit 143) from here on, also while waiting for another run's lock
        with (
            signals_as_interrupt(),
            out_lock(outdir, get_settings().limits.job_deadline_s, waiting),
        ):
            _account_dead_run(outdir, storage, console)
            tracked = [
                Tracked(spec_for_path(str(f), storage.url, stem, options, force=force), stem)
                for f, stem in zip(files, unique_stems(files))
            ]
            record_run(outdir, [t.stem for t in tracked])
            failure = _run_locked(
                tracked, outdir, storage, broker=broker, workers=workers, gpu=gpu, console=console
            )
            end_run(
                outdir
            )  # on any other end the record stays: the next run accounts for what is left
    except KeyboardInterrupt as exc:  # the fleet is stopped and unfinished documents aborted by now
        failure = ExitCode.TERMINATED if isinstance(exc, Terminated) else ExitCode.INTERRUPTED
    wall = time.monotonic() - started
    _print_summary(tracked, wall, console)
    code, line = summary([outcome(t, failure) for t in tracked], failure)
    console.print(line)
    return code


def _account_dead_run(outdir: Path, storage: LocalStorage, console: Console) -> None:
    """The documents a killed run left with nothing get `aborted` (this run redoes those it was given)."""
    stems = left_by_dead_run(outdir)
    if stems:
        console.print(
            f"pagefleet: an earlier run over {outdir} was killed; {len(stems)} of its documents aborted"
        )
    for stem in stems:
        storage.put_json(
            f"{stem}/error.json",
            error_record(AbortedError("aborted: the run writing it was killed")),
        )


def _run_locked(
    tracked: list[Tracked],
    outdir: Path,
    storage: LocalStorage,
    *,
    broker: str | None,
    workers: int,
    gpu: bool,
    console: Console,
) -> ExitCode | None:
    """Process what DIR does not hold yet; what ended the run early, if anything."""
    todo = [t for t in tracked if not _cached(outdir, t)]
    first: dict[str, Tracked] = {}
    copies: list[tuple[Tracked, Tracked]] = []
    for t in todo:  # the same bytes and options twice: one job (ids differ only by output folder)
        same = (
            f"{t.spec.sha256}:{json.dumps(t.spec.options, sort_keys=True)}"
            if t.spec.sha256
            else t.spec.job_id
        )
        original = first.setdefault(same, t)
        if original is not t:
            copies.append((t, original))
    unique = list(first.values())
    failure = (
        _process(unique, outdir, storage, broker=broker, workers=workers, gpu=gpu, console=console)
        if unique
        else None
    )
    for (
        duplicate,
        original,
    ) in copies:  # the same bytes twice in one run: one job, two output folders
        _copy_result(outdir, original, duplicate)
    return failure


def _process(
    unique: list[Tracked],
    outdir: Path,
    storage: LocalStorage,
    *,
    broker: str | None,
    workers: int,
    gpu: bool,
    console: Console,
) -> ExitCode | None:
    """Start the fleet, enqueue, wait; on any early end stop the fleet, then abort what is unfinished
    and say what ended it."""
    from pagefleet.workers.app import use_broker

    ended: tuple[ExitCode, str] | None = None
    try:
        with (
            signals_as_interrupt(),
            EmbeddedFleet(
                broker_url=broker,
                cpu_workers=workers,
                gpu=gpu,
                logdir=outdir / ".pagefleet" / "logs",
            ) as fleet,
        ):
            use_broker(fleet.broker_url or "")
            for t in unique:
                (outdir / t.stem / "error.json").unlink(missing_ok=True)
            # not in OUT (checked above): done in a shared broker's memory is not done here
            enqueue_many([t.spec.model_copy(update={"force": True}) for t in unique])
            ended = _wait(unique, fleet, console)
    except KeyboardInterrupt as exc:
        _abort(
            unique,
            outdir,
            storage,
            "terminated" if isinstance(exc, Terminated) else "interrupted",
            console,
        )
        raise
    except (PagefleetError, redis.RedisError) as exc:
        code = for_error(exc) if isinstance(exc, PagefleetError) else ExitCode.BROKER_LOST
        ended = (code, f"{type(exc).__name__}: {exc}")
    if ended is None:
        return None
    _abort(unique, outdir, storage, ended[1], console)
    return ended[0]


def _copy_result(outdir: Path, original: Tracked, duplicate: Tracked) -> None:
    target = outdir / duplicate.stem
    if target.exists():
        shutil.rmtree(target)
    if (outdir / original.stem).exists():
        shutil.copytree(outdir / original.stem, target)
        for name in ("document.json", "report.json"):  # same bytes, but this copy's own file name
            path = target / name
            if path.exists():
                data = json.loads(path.read_text(encoding="utf-8"))
                data["source"]["filename"] = duplicate.spec.filename
                data["job_id"] = duplicate.spec.job_id
                path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    for name in ("state", "pages", "done", "status", "routes", "seconds"):
        setattr(duplicate, name, getattr(original, name))


def _wait(
    todo: list[Tracked], fleet: EmbeddedFleet, console: Console
) -> tuple[ExitCode, str] | None:
    """None when every document finished; else what ends the run early, and why."""
    deadline = time.monotonic() + get_settings().limits.job_deadline_s
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("pages"),
        TextColumn("{task.fields[docs]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        bar = progress.add_task("pagefleet", total=None, docs="")
        while True:
            try:
                for t in todo:
                    _poll(t, console)
            except BrokerUnavailable as exc:
                return ExitCode.BROKER_LOST, f"the broker is unreachable: {exc}"
            finished = sum(t.state in jobs.TERMINAL for t in todo)
            total = sum(t.pages for t in todo)
            progress.update(
                bar,
                total=total or None,
                completed=sum(t.done for t in todo),
                docs=f"{finished}/{len(todo)} documents",
            )
            if finished == len(todo):
                return None
            if fleet.redis_died():
                return ExitCode.BROKER_LOST, "the embedded redis-server died"
            dead = fleet.dead_worker()
            if dead is not None:
                return ExitCode.WORKER_DIED, f"worker {dead.name} died:\n{dead.tail()}"
            if time.monotonic() > deadline:
                return ExitCode.DEADLINE, "the run deadline passed"
            time.sleep(0.25)


def _poll(t: Tracked, console: Console) -> None:
    if t.state in jobs.TERMINAL:
        return
    info = jobs.get(t.spec.job_id)
    t.state = info.get("state", t.state)
    t.pages = int(info.get("pages", t.pages) or 0)
    t.done = min(int(info.get("pages_done", t.done) or 0), t.pages)
    if t.state in jobs.TERMINAL:
        t.seconds = time.monotonic() - t.started
        t.status = (
            info.get("status", "") if t.state == "done" else f"error: {info.get('error_code', '?')}"
        )
        t.routes = json.loads(info.get("routes", "{}") or "{}")
        t.done = t.pages
        mark = (
            ("✓", "green")
            if t.status == "accepted"
            else (("!", "yellow") if t.state == "done" else ("✗", "red"))
        )
        console.print(
            Text.assemble(
                mark, f" {t.spec.filename}: {t.status} {_routes(t.routes)} ({t.seconds:.1f}s)"
            )
        )


def _abort(
    todo: list[Tracked], outdir: Path, storage: LocalStorage, why: str, console: Console
) -> None:
    """After the fleet stopped: a document with complete artifacts is done, any other unfinished one
    gets `aborted`."""
    console.print(f"pagefleet: error: {why}", markup=False)
    for t in todo:
        if t.state not in jobs.TERMINAL and not _cached(outdir, t):
            record = error_record(AbortedError(f"aborted: {why.splitlines()[0]}"))
            storage.put_json(f"{t.stem}/error.json", record)
            t.state, t.status = "error", "error: aborted"


def _routes(routes: dict[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(routes.items()))


def _print_summary(tracked: list[Tracked], wall: float, console: Console) -> None:
    table = Table(title=f"pagefleet run: {len(tracked)} documents in {wall:.1f}s")
    for col in ("file", "pages", "status", "routes", "done after s"):
        table.add_column(col, overflow="fold")
    totals: Counter[str] = Counter()
    for t in tracked:
        totals.update(t.routes)
        secs = "cached" if t.cached else f"{t.seconds:.1f}"
        table.add_row(t.spec.filename, str(t.pages), t.status, _routes(t.routes), secs)
    console.print(table)
    console.print(
        f"pages per route: {_routes(dict(totals)) or 'none'}; total pages {sum(totals.values())}; "
        f"wall time {wall:.1f}s"
    )


def outcome(t: Tracked, failure: ExitCode | None = None) -> ExitCode:
    """One document's outcome: accepted, needs review, or its error's class; a document the run
    aborted takes what ended the run (`failure`)."""
    if t.state == "error" or t.status.startswith("error"):
        code = t.status.removeprefix("error:").strip()
        return failure if code == "aborted" and failure is not None else for_code(code)
    if t.state != "done" and failure is not None:
        return failure
    return (
        ExitCode.OK if t.status in ("accepted", "accepted_after_review") else ExitCode.REVIEW_NEEDED
    )
