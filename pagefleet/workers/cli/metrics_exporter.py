"""`pagefleet metrics`: the fleet's Prometheus exporter (see pagefleet/workers/metrics.py).

pagefleet metrics [--host 0.0.0.0] [--port 9808] [--broker URL]
"""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "metrics", help="serve the fleet's Prometheus metrics (queue depth, pages, refusals, …)"
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="bind address (0.0.0.0 in containers; default 127.0.0.1)",
    )
    p.add_argument(
        "--port", type=int, default=9808, help="port of /metrics and /healthz (default 9808)"
    )
    p.add_argument("--broker", help="Redis broker URL (default: PAGEFLEET_BROKER__URL)")
    p.set_defaults(handler=cmd_metrics)


def cmd_metrics(args: argparse.Namespace, console: Any) -> int:
    from pagefleet.workers.fleet import jobs
    from pagefleet.workers.app import use_broker
    from pagefleet.workers.fleet.asgi import AsgiServer
    from pagefleet.workers.metrics import exporter_app

    if args.broker:
        use_broker(args.broker)
    server = AsgiServer(exporter_app(jobs.client()), args.host, args.port)
    console.print(
        f"pagefleet metrics: serving http://{args.host}:{args.port}/metrics", markup=False
    )
    server.run()
    return 0
