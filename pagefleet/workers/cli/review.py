"""`pagefleet review OUT|s3://bucket/prefix`: the review studio, a local web app over a run's artifacts.

    pagefleet review OUT [--port 4173] [--host 127.0.0.1] [--token T] [--broker URL]
    pagefleet review --apply OUT       write every document's reviewed artifacts from its review.json
                                       (no studio); exit 0 when no page is pending review, else 2

Binds loopback by default; any other host needs a token (`--token` or PAGEFLEET_STUDIO__TOKEN), and
then every request must carry it (the printed address does, once). Uploads go to `--broker`, or to
an embedded fleet started on the first upload and stopped with the studio. Registered by
`pagefleet.workers.cli.main`; also runnable as `python -m pagefleet.workers.cli.review`.
"""

from __future__ import annotations

import argparse
import functools
import logging
import socket
import sys
from typing import Any

import pydantic

from pagefleet.workers.cli.studio.config import StudioConfigError, StudioSettings, check_bind
from pagefleet.workers.settings import get_settings

USAGE_ERROR = 64  # as pagefleet.workers.cli.main.EX_USAGE: 2 means "needs review"
log = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "review", help="the review studio: a local web page to clear quarantined pages"
    )
    add_arguments(p)
    p.set_defaults(handler=cmd_review)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "where", metavar="OUT|s3://bucket/prefix", help="a folder of artifacts or an S3 prefix"
    )
    p.add_argument("--port", type=int, help="port (default 4173; 0 picks a free one)")
    p.add_argument("--host", help="bind address (default 127.0.0.1; anything else needs --token)")
    p.add_argument(
        "--token",
        help="require this token on every request (prefer PAGEFLEET_STUDIO__TOKEN: "
        "arguments are visible in ps)",
    )
    p.add_argument("--broker", help="submit uploads to this Redis (default: an embedded fleet)")
    p.add_argument(
        "--apply",
        action="store_true",
        help="apply review.json decisions to the artifacts and exit "
        "(0: no page pending review; 2: some still pending)",
    )


def studio_settings(args: argparse.Namespace) -> StudioSettings:
    overrides = {
        k: getattr(args, k) for k in ("host", "port", "token") if getattr(args, k, None) is not None
    }
    try:
        settings = StudioSettings.model_validate(
            {**get_settings().studio.model_dump(), **overrides}
        )
    except pydantic.ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise StudioConfigError(f"invalid studio settings: {problems}") from exc
    token = settings.token.get_secret_value() if settings.token else None
    check_bind(settings.host, token)
    return settings


def _bound_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise StudioConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    return sock


def address(host: str, port: int, token: str | None) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/" + (f"?token={token}" if token else "")


def cmd_review(args: argparse.Namespace, console: Any) -> int:
    import uvicorn

    from pagefleet.workers.cli.studio import create_app
    from pagefleet.workers.cli.studio.library import NotFound

    if getattr(args, "apply", False):
        return apply_all(args.where, console)
    try:
        settings = studio_settings(args)
        app = create_app(args.where, settings, broker=args.broker, host=settings.host)
    except (StudioConfigError, NotFound) as exc:
        console.print(f"pagefleet review: error: {getattr(exc, 'message', exc)}", markup=False)
        return USAGE_ERROR
    sock = _bound_socket(settings.host, settings.port)
    port = sock.getsockname()[1]
    token = settings.token.get_secret_value() if settings.token else None
    console.print(
        f"pagefleet review: serving {args.where} on {address(settings.host, port, token)}",
        markup=False,
        soft_wrap=True,
    )
    config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0


def apply_all(where: str, console: Any) -> int:
    """`--apply`: the reviewed artifacts of every document under `where`, from its review.json."""
    from pagefleet.workers.cli.studio.library import Library, NotFound
    from pagefleet.workers.review.reviewed import FINAL_STATUS, apply

    try:
        library = Library.open(where)
    except NotFound as exc:
        console.print(f"pagefleet review: error: {exc}", markup=False)
        return USAGE_ERROR
    pending = 0
    for ref in library.documents(fresh=True):
        report = library.read_json(ref, "report.json") or {}
        summary = apply(library.storage, ref.prefix, functools.partial(library.write, ref))
        status = (summary or {}).get("status") or report.get("status") or "error"
        if status not in ("accepted", FINAL_STATUS):
            pending += 1
        counts = (
            (
                f"reviewed {summary['reviewed']}, corrected {summary['corrected']}, rejected {summary['rejected']}, "
                f"pending {summary['pending']}, stale {summary['stale']}"
            )
            if summary
            else "no review.json"
        )
        console.print(f"{ref.id}: {status} ({counts})", markup=False)
    return 2 if pending else 0


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console

    from pagefleet.workers.cli.main import UsageParser

    parser = UsageParser(prog="pagefleet review", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    console = Console(stderr=True, markup=False)
    return cmd_review(args, console)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    sys.exit(main())
