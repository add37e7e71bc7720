"""The HTTP side of `pagefleet events`: MinIO's webhook notification target (and anything else that
POSTs S3 event records), on the standard library's threading HTTP server.

    POST /  or /events   Authorization: Bearer <token>; body = S3 event JSON
        200  {"enqueued": [...], "duplicates": [...], "in_progress": [], "skipped": [...]}
             only once every job it names is durably enqueued (or already was)
        400  body is not JSON / not an S3 event: retrying cannot fix it. MinIO never sends such
             a body (it marshals its own records); a hand-written client gets told why.
        401  missing or wrong token (compared in constant time; nothing else is said)
        411/413  no Content-Length / body larger than max_body_bytes
        503  broker (or the object store, when an ETag had to be looked up) unavailable, or the
             same upload is being enqueued by a concurrent delivery: MinIO keeps the event in
             its queue_dir and replays it, and the retry is deduplicated
    HEAD / or /events    MinIO's liveness check of the target: 200 with the token, 401 without
    GET  /healthz        200 while the process serves (liveness)
    GET  /readyz         200 when the broker answers PING, else 503 (readiness)

Responses are small JSON documents; errors are `{"error": {"code", "message"}}` and never carry
a traceback. Each request is answered on its own connection (HTTP/1.0 semantics), so a shutdown
waits only for requests in flight.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from workers.errors import BrokerUnavailable, PagefleetError, StorageError
from workers.intake.events import EventParseError, Intake

log = logging.getLogger(__name__)

EVENT_PATHS = ("/", "/events")


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8", "surrogateescape")).digest()


class BearerAuth:
    """`Authorization: Bearer <token>` checked with `hmac.compare_digest` on fixed-size digests,
    so neither the token nor its length leaks through timing."""

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("an empty token would accept everyone")
        self._expected = _digest(f"Bearer {token}")

    def check(self, header: str | None) -> bool:
        return hmac.compare_digest(_digest((header or "").strip()), self._expected)


class EventServer(ThreadingHTTPServer):
    """Threads per request; `server_close()` joins the ones still running (graceful stop)."""

    daemon_threads = False
    block_on_close = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], intake: Intake, auth: BearerAuth, *,
                 max_body_bytes: int = 1024 * 1024, ready: Callable[[], bool] | None = None) -> None:
        self.intake = intake
        self.auth = auth
        self.max_body_bytes = max_body_bytes
        self.ready = ready or (lambda: True)
        super().__init__(address, EventHandler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


class EventHandler(BaseHTTPRequestHandler):
    server: EventServer
    timeout = 30  # a client that stalls mid-request is dropped
    server_version = "pagefleet-events"
    sys_version = ""

    # -- plumbing ---------------------------------------------------------------------------
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
        log.debug("%s %s", self.address_string(), format % args)

    def _send(self, status: int, payload: dict[str, Any] | None, headers: dict[str, str] | None = None) -> None:
        body = b"" if payload is None else json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)
        self.close_connection = True

    def _error(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        self._send(status, {"error": {"code": code, "message": message}}, headers)

    def _path(self) -> str:
        path = self.path.split("?", 1)[0]
        return path.rstrip("/") or "/"

    def _authorised(self) -> bool:
        if self.server.auth.check(self.headers.get("Authorization")):
            return True
        self._drain()
        self._error(HTTPStatus.UNAUTHORIZED, "unauthorized", "missing or invalid bearer token",
                    {"WWW-Authenticate": 'Bearer realm="pagefleet-events"'})
        return False

    def _drain(self) -> None:
        """Read (and drop) a small unread body, so closing the socket does not reset the
        connection before the client has read our answer."""
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            return
        if 0 < length <= self.server.max_body_bytes:
            self.rfile.read(length)

    def _guarded(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except (BrokenPipeError, ConnectionResetError):
            log.info("client %s went away", self.address_string())
        except Exception:  # the boundary: log it, tell the client nothing about internals
            log.exception("event request %s %s failed", self.command, self._path())
            try:
                self._error(HTTPStatus.INTERNAL_SERVER_ERROR, "internal_error", "internal error; see the receiver's log")
            except OSError:
                pass

    # -- verbs ------------------------------------------------------------------------------
    def do_HEAD(self) -> None:  # noqa: N802 (stdlib naming)
        self._guarded(self._head)

    def do_GET(self) -> None:  # noqa: N802
        self._guarded(self._get)

    def do_POST(self) -> None:  # noqa: N802
        self._guarded(self._post)

    def _head(self) -> None:
        path = self._path()
        if path in ("/healthz", "/readyz"):
            self._get()
        elif path in EVENT_PATHS:
            if self._authorised():
                self._send(HTTPStatus.OK, None)
        else:
            self._send(HTTPStatus.NOT_FOUND, None)

    def _get(self) -> None:
        path = self._path()
        if path == "/healthz":
            self._send(HTTPStatus.OK, {"ok": True})
        elif path == "/readyz":
            ok = self._ready()
            self._send(HTTPStatus.OK if ok else HTTPStatus.SERVICE_UNAVAILABLE, {"ok": ok})
        elif path in EVENT_PATHS:
            self._error(HTTPStatus.METHOD_NOT_ALLOWED, "method_not_allowed", "POST S3 event records here",
                        {"Allow": "POST, HEAD"})
        else:
            self._error(HTTPStatus.NOT_FOUND, "not_found", "no such path")

    def _ready(self) -> bool:
        try:
            return bool(self.server.ready())
        except PagefleetError:
            return False

    def _read_body(self) -> bytes | None:
        length_header = self.headers.get("Content-Length")
        if length_header is None:
            self._error(HTTPStatus.LENGTH_REQUIRED, "length_required", "send a Content-Length")
            return None
        try:
            length = int(length_header)
        except ValueError:
            self._error(HTTPStatus.BAD_REQUEST, "bad_request", "Content-Length is not a number")
            return None
        if length < 0 or length > self.server.max_body_bytes:
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "too_large",
                        f"event bodies are limited to {self.server.max_body_bytes} bytes")
            return None
        return self.rfile.read(length)

    def _post(self) -> None:
        if self._path() not in EVENT_PATHS:
            self._error(HTTPStatus.NOT_FOUND, "not_found", "POST to / or /events")
            return
        if not self._authorised():
            return
        body = self._read_body()
        if body is None:
            return
        retry = {"Retry-After": "5"}
        try:
            result = self.server.intake.submit_body(body, self.headers.get("Content-Type"))
        except EventParseError as exc:
            self._error(HTTPStatus.BAD_REQUEST, exc.code, exc.message)
            return
        except (BrokerUnavailable, StorageError) as exc:
            log.warning("event not accepted, sender will retry: %s", exc.message)
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, exc.code, "temporarily unavailable; retry", retry)
            return
        if result.retry_later:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, "in_progress",
                        "the same upload is being enqueued by another delivery; retry", retry)
            return
        self._send(HTTPStatus.OK, result.summary())


def serve_in_thread(server: EventServer) -> threading.Thread:
    """Run `server.serve_forever` in a daemon thread (tests, and the CLI's bridge mode)."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2},
                              name="pagefleet-events-http", daemon=True)
    thread.start()
    return thread
