"""Serving an ASGI app (the event receiver, the metrics exporter) with uvicorn: in the foreground
for the CLI (uvicorn turns SIGTERM/SIGINT into a graceful stop: no new connections, requests in
flight finish), or in a thread for tests and for a process that serves beside other work."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import uvicorn


class AsgiServer:
    def __init__(self, app: Any, host: str, port: int, *, graceful_s: int = 30) -> None:
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=graceful_s,
            backlog=2048,
            timeout_keep_alive=5,
        )
        self.server = uvicorn.Server(config)
        self.host = host
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.server.servers[0].sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def run(self) -> None:
        """Serve until SIGTERM/SIGINT (main thread) or `stop()`. uvicorn re-raises a captured signal
        after its graceful shutdown; a handler of ours takes it, so a graceful stop exits 0."""
        stopped: list[int] = []
        previous = {
            sig: signal.signal(sig, lambda signum, _frame: stopped.append(signum))
            for sig in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            self.server.run()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def start(self, timeout_s: float = 20.0) -> "AsgiServer":
        """Serve in a daemon thread; return once the socket is listening."""
        self._thread = threading.Thread(target=self.server.run, name="pagefleet-asgi", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"server on {self.host} did not start")
            time.sleep(0.02)
        return self

    def stop(self, timeout_s: float = 30.0) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=timeout_s)
