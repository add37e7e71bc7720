"""`pagefleet` command line. The one boundary that maps errors to exit codes (`pagefleet.workers.cli.exitcodes`)
and one-line messages.

    pagefleet run PATH... --out DIR [--ocr auto|off|force] [--workers N] [--broker URL] [--force]
    pagefleet worker --queues cpu,gpu [--concurrency N] [--loglevel LEVEL]
    pagefleet submit PATH|DIR|s3://bucket/key... --storage URL [--prefix P] [--ocr ...] [--force]
    pagefleet status JOB
    pagefleet deadletter list|replay|clear [--job ID]   (pagefleet/workers/cli/deadletter.py)
    pagefleet events ...            (bucket-event receiver, see `pagefleet events --help`)
    pagefleet eval CORPUS --labels LABELS.json
    pagefleet review OUT|s3://bucket/prefix [--port 4173] [--host H --token T] [--broker URL]   (review studio)
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import NoReturn

from rich.console import Console

from pagefleet.workers.cli.exitcodes import ExitCode, for_error
from pagefleet.workers.errors import PagefleetError
from pagefleet.workers.fleet import logs
from pagefleet.workers.settings import PIPELINE_VERSION, QUEUES, Options, get_settings

OCR_CHOICES = ("auto", "off", "force")


def _options(args: argparse.Namespace) -> Options:
    from pagefleet.workers.split.pages import parse_options

    raw = {"ocr": args.ocr}
    if getattr(args, "max_pages", None):
        raw["max_pages"] = args.max_pages
    if getattr(args, "structured_recovery", None):
        raw["structured_recovery"] = args.structured_recovery
    if getattr(args, "no_structure", False):
        raw["structure"] = False
    return parse_options(raw)


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    from pagefleet.workers.engines.tesseract import require_tesseract
    from pagefleet.workers.cli.run import run

    options = _options(args)
    if options.ocr != "off":
        require_tesseract()
    return run(
        args.paths,
        args.out,
        options,
        workers=args.workers,
        broker=args.broker,
        force=args.force,
        gpu=args.gpu,
        console=console,
    )


def cmd_worker(args: argparse.Namespace, console: Console) -> int:
    from pagefleet.workers.fleet.launcher import default_concurrency, pool_for

    queues = [q.strip() for q in args.queues.split(",") if q.strip()]
    bad = [q for q in queues if q not in QUEUES]
    if bad or not queues:
        console.print(
            f"pagefleet: error: unknown queue(s) {bad or queues}; choose from {', '.join(QUEUES)}"
        )
        return EX_USAGE
    names = ",".join(queues)
    argv = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "pagefleet.workers.app",
        "worker",
        "-Q",
        names,
        "-c",
        str(args.concurrency or default_concurrency(names)),
        *pool_for(names),
        "-l",
        args.loglevel,
        "-E",
        "-n",
        f"{'-'.join(queues)}@%h",
    ]
    os.execv(sys.executable, argv)
    return 0  # pragma: no cover


def cmd_submit(args: argparse.Namespace, console: Console) -> int:
    """Enqueue the sources as one submission (`submit.enqueue_many`: small documents go in
    batches and share a sandbox child); prints a job id a line, in the sources' order (a folder's
    PDFs in name order)."""
    from pagefleet.workers.app import use_broker
    from pagefleet.workers.cli.run import expand_inputs, unique_stems
    from pagefleet.workers.store import lookup
    from pagefleet.workers.store.uri import is_s3, split_s3_uri
    from pagefleet.workers.split.submit import enqueue_many, spec_for_object, spec_for_path

    entries: list[str | Path] = []
    missing: list[str] = []
    for source in args.sources:
        found, gone = ([source], []) if is_s3(source) else expand_inputs([source])
        entries += found
        missing += gone
    if missing or not entries:
        console.print(
            f"pagefleet: error: no such file: {', '.join(missing)}"
            if missing
            else "pagefleet: error: no PDF in " + ", ".join(args.sources)
        )
        return ExitCode.INPUT_ERROR
    if args.prefix and len(entries) > 1:
        console.print(
            "pagefleet: error: --prefix names one document's artifacts: submit one source with it"
        )
        return EX_USAGE
    if args.broker:
        use_broker(args.broker)
    options = _options(args)
    stems = iter(unique_stems([entry for entry in entries if isinstance(entry, Path)]))
    # a size decides whether an object joins a batch (none to join alone): all looked up at once
    objects = [entry for entry in entries if isinstance(entry, str)]
    found = dict(zip(objects, lookup.sizes(objects) if len(entries) > 1 else [None] * len(objects)))
    specs = [
        spec_for_object(
            *split_s3_uri(entry),
            args.storage,
            options,
            force=args.force,
            size=found[entry],
            prefix_template=args.prefix or "artifacts/{sha256}",
        )
        if isinstance(entry, str)
        else spec_for_path(
            str(entry), args.storage, args.prefix or next(stems), options, force=args.force
        )
        for entry in entries
    ]
    for job_id in enqueue_many(specs):
        print(job_id)
    return 0


def cmd_status(args: argparse.Namespace, console: Console) -> int:
    from pagefleet.workers.fleet import jobs
    from pagefleet.workers.app import use_broker

    if args.broker:
        use_broker(args.broker)
    info = jobs.get(args.job)
    if not info:
        console.print(f"pagefleet: error: no job {args.job}")
        return ExitCode.INPUT_ERROR
    print(json.dumps(info, indent=1, ensure_ascii=False))
    return 0


EX_USAGE = ExitCode.USAGE  # 64, sysexits.h; 2 means "artifacts written, some page needs review"


class UsageParser(argparse.ArgumentParser):
    """argparse with usage errors exiting 64 (EX_USAGE) instead of 2; subcommands inherit it."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EX_USAGE, f"{self.prog}: error: {message}\n")


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("pagefleet")
    except PackageNotFoundError:
        return PIPELINE_VERSION


def parser() -> argparse.ArgumentParser:
    p = UsageParser(
        prog="pagefleet", description="PDFs to trustworthy text, RTL first, at fleet scale"
    )
    p.add_argument(
        "--version",
        action="version",
        version=f"pagefleet {version()}",
        help="print the version and exit",
    )
    sub = p.add_subparsers(dest="command", required=True)
    _run_command(sub)
    _worker_command(sub)
    _submit_command(sub)
    _status_command(sub)
    _optional_commands(sub)
    return p


def _run_command(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser("run", help="process PDFs on the embedded default fleet")
    run.add_argument("paths", nargs="+", help="PDF files or directories of PDFs")
    run.add_argument("--out", required=True, help="output directory: DIR/<stem>/document.json …")
    run.add_argument(
        "--ocr",
        default="auto",
        choices=OCR_CHOICES,
        help="OCR pages that fail the gate (auto), never (off) or always (force)",
    )
    run.add_argument(
        "--workers", type=int, default=os.cpu_count() or 2, help="CPU OCR worker processes"
    )
    run.add_argument("--broker", help="use this Redis instead of starting one")
    run.add_argument("--max-pages", type=int, help="reject documents with more pages")
    run.add_argument("--force", action="store_true", help="reprocess documents already in DIR")
    run.add_argument(
        "--gpu", action="store_true", help="also start a gpu-queue worker and use GPU chains"
    )
    _structure_options(run)


def _worker_command(sub: argparse._SubParsersAction) -> None:
    worker = sub.add_parser("worker", help="run a Celery worker for some queues")
    worker.add_argument(
        "--queues", required=True, help="comma-separated: split,cpu,gpu,collect,notify"
    )
    worker.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="pool processes (default: the CPU count); for the gpu queue alone, task "
        "threads whose pages share generate calls (default: vlm.batch_size); for the "
        "notify queue alone, task threads making callback POSTs (default: 8)",
    )
    worker.add_argument(
        "--loglevel", default="INFO", help="DEBUG, INFO, WARNING or ERROR (default INFO)"
    )


def _submit_command(sub: argparse._SubParsersAction) -> None:
    submit = sub.add_parser(
        "submit", help="enqueue documents (one submission: small ones go in batches)"
    )
    submit.add_argument(
        "sources",
        nargs="+",
        metavar="SOURCE",
        help="a local PDF or folder of PDFs the workers can read, or s3://bucket/key",
    )
    submit.add_argument(
        "--storage", required=True, help="file:///dir or s3://bucket/prefix for artifacts"
    )
    submit.add_argument("--prefix", help="artifact prefix inside storage")
    submit.add_argument(
        "--ocr",
        default="auto",
        choices=OCR_CHOICES,
        help="OCR pages that fail the gate (auto), never (off) or always (force)",
    )
    submit.add_argument(
        "--force", action="store_true", help="reprocess even if this job already completed"
    )
    submit.add_argument("--broker", help="Redis broker URL (default: PAGEFLEET_BROKER__URL)")
    _structure_options(submit)


def _status_command(sub: argparse._SubParsersAction) -> None:
    status = sub.add_parser("status", help="show a job's state")
    status.add_argument("job", help="the job id `submit` printed")
    status.add_argument("--broker", help="Redis broker URL (default: PAGEFLEET_BROKER__URL)")


def _structure_options(cmd: argparse.ArgumentParser) -> None:
    from typing import get_args

    cmd.add_argument(
        "--structured-recovery",
        choices=get_args(Options.model_fields["structured_recovery"].annotation),
        help="a layout-aware extractor for tables the text layer could not give (default off)",
    )
    cmd.add_argument(
        "--no-structure",
        action="store_true",
        help="no blocks, tables or chunks: text only (faster)",
    )


def _optional_commands(sub: argparse._SubParsersAction) -> None:
    for module in (
        "pagefleet.workers.cli.event_receiver",
        "pagefleet.workers.cli.evaluate",
        "pagefleet.workers.cli.routes",
        "pagefleet.workers.watchdog",
        "pagefleet.workers.cli.review",
        "pagefleet.workers.cli.deadletter",
        "pagefleet.workers.cli.metrics_exporter",
        "pagefleet.workers.cli.models",
        "pagefleet.workers.cli.wse_commands",
        "pagefleet.workers.cli.reparse",
    ):
        try:
            mod = __import__(module, fromlist=["register"])
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue
        mod.register(sub)


COMMANDS = {"run": cmd_run, "worker": cmd_worker, "submit": cmd_submit, "status": cmd_status}


def main(argv: list[str] | None = None) -> int:
    settings = get_settings()
    logs.configure(settings.observability.loglevel, settings.observability.log_format)
    args = parser().parse_args(argv)
    console = Console(stderr=True, markup=False, width=None if sys.stderr.isatty() else 140)
    handler = COMMANDS.get(args.command) or getattr(args, "handler", None)
    try:
        return int(handler(args, console))
    except PagefleetError as exc:
        console.print(f"pagefleet: error: {exc.message}", markup=False)
        return for_error(exc)
    except KeyboardInterrupt as exc:
        from pagefleet.workers.cli.embedded import Terminated

        console.print(
            "pagefleet: terminated" if isinstance(exc, Terminated) else "pagefleet: interrupted"
        )
        return ExitCode.TERMINATED if isinstance(exc, Terminated) else ExitCode.INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the one boundary: a line, never a traceback
        logging.getLogger("pagefleet").debug("unhandled", exc_info=True)
        console.print(f"pagefleet: internal error: {type(exc).__name__}: {exc}", markup=False)
        return ExitCode.INTERNAL_ERROR


if __name__ == "__main__":
    sys.exit(main())
