"""`pagefleet events`: the bucket-event receiver (MinIO webhook target, AWS-shaped events), and
optionally the bridge for MinIO's Redis target. Registered by `pagefleet.workers.cli.main` when importable.

    pagefleet events --output s3://results/prefix --token-env EVENTS_TOKEN \\
        [--host 0.0.0.0] [--port 8080] [--suffix-filter .pdf] [--prefix-filter incoming/] \\
        [--bucket NAME] [--callback-url URL] [--ocr auto|off|force] [--broker URL] \\
        [--redis-bridge-list bucketevents [--redis-bridge-url redis://...]] [--inbox-list NAME]

`--inbox-list`: each POSTed event is queued on that list of the broker (200 once it is there) and a
bridge in this process drains it, gathering a burst's events into batches while the split workers
are busy (`PAGEFLEET_EVENTS__GATHER_S`, 0.5 s at most): a bucket's small uploads then go as
`split_batch` tasks instead of a task each. Without it a POST's 200 names the enqueued jobs.

Command-line values override `PAGEFLEET_EVENTS__*` settings. Served by uvicorn (Starlette app in
`pagefleet.workers.intake.receiver`); SIGTERM/SIGINT stop accepting new requests and wait for the ones in
flight.
"""

from __future__ import annotations

import argparse
import logging
import os
from typing import Any

import pydantic

from pagefleet.workers.intake.events import EventConfigError
from pagefleet.workers.settings import EventSettings, Settings

log = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "events", help="receive bucket events (MinIO webhook / AWS S3) and enqueue jobs"
    )
    p.add_argument("--host", help="bind address (default 127.0.0.1; 0.0.0.0 in containers)")
    p.add_argument("--port", type=int, help="port (default 8080; 0 picks a free one)")
    p.add_argument("--token", help="bearer token (prefer --token-env: arguments are visible in ps)")
    p.add_argument(
        "--token-env", metavar="NAME", help="read the bearer token from this environment variable"
    )
    p.add_argument("--output", help="artifact storage: s3://bucket/prefix")
    p.add_argument(
        "--prefix-template", help="artifact prefix inside the output (default artifacts/{sha256})"
    )
    p.add_argument(
        "--prefix-filter",
        action="append",
        metavar="PREFIX",
        help="only keys starting with it (repeatable)",
    )
    p.add_argument(
        "--suffix-filter",
        action="append",
        metavar="SUFFIX",
        help="only keys ending with it, e.g. .pdf (repeatable)",
    )
    p.add_argument(
        "--bucket",
        action="append",
        metavar="NAME",
        help="only events from this bucket (repeatable)",
    )
    p.add_argument("--callback-url", help="POST a completion notice for each job here")
    p.add_argument(
        "--ocr",
        choices=("auto", "off", "force"),
        help="OCR option for the jobs (part of the job id)",
    )
    p.add_argument("--broker", help="Redis broker URL (default: PAGEFLEET_BROKER__URL)")
    _intake_options(p)
    p.set_defaults(handler=cmd_events)


def _intake_options(p: argparse.ArgumentParser) -> None:
    """How events come in besides the webhook, and how many POSTs are handled at once."""
    p.add_argument(
        "--redis-bridge-list",
        metavar="NAME",
        help="also drain MinIO's Redis target list (format=access)",
    )
    p.add_argument(
        "--redis-bridge-url", metavar="URL", help="Redis holding that list (default: the broker)"
    )
    p.add_argument(
        "--inbox-list",
        metavar="NAME",
        help="queue POSTed events on this broker list and enqueue them in batches (200 once queued)",
    )
    p.add_argument(
        "--max-concurrency",
        type=int,
        metavar="N",
        help="event POSTs handled at once; more are answered 503 + Retry-After (default 64)",
    )


def event_settings(args: argparse.Namespace) -> EventSettings:
    """`PAGEFLEET_EVENTS__*` settings with the command line on top; invalid values → typed error."""
    overrides: dict[str, Any] = {}
    for name in (
        "host",
        "port",
        "output",
        "prefix_template",
        "callback_url",
        "redis_bridge_list",
        "redis_bridge_url",
        "inbox_list",
        "max_concurrency",
    ):
        value = getattr(args, name, None)
        if value is not None:
            overrides[name] = value
    for arg, name in (
        ("prefix_filter", "prefix_filters"),
        ("suffix_filter", "suffix_filters"),
        ("bucket", "buckets"),
    ):
        if getattr(args, arg, None):
            overrides[name] = list(getattr(args, arg))
    try:
        settings = EventSettings.model_validate(
            {**Settings().events.model_dump(), **overrides}
        )  # read now
        if getattr(args, "ocr", None):
            settings.options = settings.options.model_copy(update={"ocr": args.ocr})
    except pydantic.ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise EventConfigError(f"invalid events settings: {problems}") from exc
    if not settings.output:
        raise EventConfigError(
            "no output: pass --output s3://bucket/prefix or set PAGEFLEET_EVENTS__OUTPUT"
        )
    return settings


def resolve_token(args: argparse.Namespace, settings: EventSettings) -> str:
    if getattr(args, "token_env", None):
        token = os.environ.get(args.token_env, "")
        if not token:
            raise EventConfigError(
                f"--token-env {args.token_env}: that environment variable is empty or unset"
            )
        return token
    if getattr(args, "token", None):
        return str(args.token)
    if settings.token is not None and settings.token.get_secret_value():
        return settings.token.get_secret_value()
    raise EventConfigError(
        "no bearer token: pass --token-env NAME (or set PAGEFLEET_EVENTS__TOKEN)"
    )


def start_bridges(
    settings: EventSettings, broker: str, intake: Any, recorder: Any = None
) -> list[Any]:
    """The bridges this receiver runs: one on its inbox list, one on MinIO's Redis target list;
    both hold a burst's events for a batch while split tasks wait on the broker."""
    from pagefleet.workers.intake.bridge import (
        RedisBridge,
        bridge_client,
        split_backlog,
        start_bridge,
    )
    from pagefleet.workers.settings import get_settings

    hold = split_backlog(bridge_client(broker))
    lists = [
        (broker, settings.inbox_list),
        (settings.redis_bridge_url or broker, settings.redis_bridge_list),
    ]
    observe = recorder.bridge_submission if recorder is not None else None
    bridges = [
        RedisBridge(
            bridge_client(url),
            name,
            intake,
            batch=get_settings().advanced.split_batch_documents,
            hold=hold,
            hold_s=settings.gather_s,
            observe=observe,
        )
        for url, name in dict.fromkeys(lists)
        if name
    ]
    for bridge in bridges:
        start_bridge(bridge)
    return bridges


def cmd_events(args: argparse.Namespace, console: Any) -> int:
    from pagefleet.workers import metrics
    from pagefleet.workers.fleet import jobs
    from pagefleet.workers.app import use_broker
    from pagefleet.workers.intake.bridge import stop_bridges
    from pagefleet.workers.intake.events import build_intake
    from pagefleet.workers.intake.receiver import BearerAuth, Inbox, Limits, Receiver, redis_ready
    from pagefleet.workers.fleet.asgi import AsgiServer
    from pagefleet.workers.fleet.observability import init_sentry
    from pagefleet.workers.settings import get_settings

    settings = event_settings(args)
    auth = BearerAuth(resolve_token(args, settings))
    if args.broker:
        use_broker(args.broker)
    init_sentry(component="events")
    broker = get_settings().broker.url
    client = jobs.client(broker)
    intake = build_intake(settings, client)
    limits = Limits(
        max_body_bytes=settings.max_body_bytes,
        max_concurrency=settings.max_concurrency,
        retry_after_s=settings.retry_after_s,
    )
    recorder = metrics.Recorder(client)
    receiver = Receiver(
        intake,
        auth,
        limits=limits,
        ready=redis_ready(client),
        observe=recorder.receiver_request,
        inbox=Inbox(client, settings.inbox_list, intake.filters) if settings.inbox_list else None,
    )
    server = AsgiServer(receiver.app(), settings.host, settings.port)
    bridges = start_bridges(settings, broker, intake, recorder)
    drained = ", ".join(bridge.list_name for bridge in bridges)
    console.print(
        f"pagefleet events: listening on {settings.host}:{settings.port} → {settings.output}"
        + (f" (and draining redis list {drained})" if bridges else ""),
        markup=False,
        soft_wrap=True,
    )
    try:
        server.run()  # SIGTERM/SIGINT: stop accepting, finish the requests in flight
    finally:
        stop_bridges(bridges)  # a step holding a burst sends it first
    return 0
