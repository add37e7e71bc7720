"""The HTTP side of `pagefleet events`: MinIO's webhook notification target (and anything else that
POSTs S3 event records), a Starlette app served by uvicorn.

    POST /  or /events   Authorization: Bearer <token>; body = S3 event JSON
        200  {"accepted": true, "enqueued": [...], "duplicates": [...], "in_progress": [], "skipped": [...],
              "refused": []} only once every job it names is durably enqueued (or already was).
             An object that is gone is `refused` (`{"job_id", "code": "source_missing", ...}`), its
             typed error.json written; with nothing else to run: `"accepted": false,
             "reason": "source_missing"` — still a 200, since no replay can bring the object back
        400  body is not JSON / not an S3 event: retrying cannot fix it
        401  missing or wrong token (compared in constant time; nothing else is said)
        413  body larger than max_body_bytes (Content-Length, or counted while streaming)
        503  + Retry-After: overloaded (more than max_concurrency requests in flight), the broker
             unreachable or refusing writes (maxmemory/OOM, read-only replica), the object store
             unavailable, or the same upload being enqueued by a concurrent delivery. MinIO keeps
             the event in its queue_dir and replays it; the replay is deduplicated.
    HEAD / or /events    MinIO's liveness check of the target: 200 with the token, 401 without
    GET  /healthz        200 while the process serves (liveness)
    GET  /readyz         200 when the broker accepts a write, else 503 with the reason (readiness)

With an inbox (`pagefleet events --inbox-list NAME`), a POST is parsed (400 as above) and its body
pushed onto that Redis list, where a bridge in the same process drains it, gathering the events of
a burst into batches (`pagefleet.workers.intake.bridge`):

        200  {"queued": <objects>, "skipped": [...]}  once the event is on the list (as durable as a
             task on the broker); the job ids are not known yet. 503 as above when Redis refuses.

Responses are small JSON documents; errors are `{"error": {"code", "message"}}` and never carry a
traceback. The blocking work (Redis, S3) runs in a thread pool sized to max_concurrency.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from pagefleet.workers.errors import BrokerFull, BrokerUnavailable, StorageError
from pagefleet.workers.fleet.broker import check_room
from pagefleet.workers.intake.events import Intake, redis_guard
from pagefleet.workers.intake.parse import EventFilter, EventParseError, parse_body

log = logging.getLogger(__name__)

EVENT_PATHS = ("/", "/events")
Ready = Callable[[], "tuple[bool, str]"]
Observe = Callable[[str], None]


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


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = 1024 * 1024
    max_concurrency: int = 64  # event POSTs in flight; more get 503 + Retry-After at once
    retry_after_s: int = 5


class Inbox:
    """Where an inbox receiver puts the events it accepts: a Redis list a `RedisBridge` drains.
    `filters`: the intake's, so an event whose objects would all be skipped is answered so and
    never queued."""

    def __init__(self, client: Any, list_name: str, filters: EventFilter | None = None) -> None:
        self.client = client
        self.list_name = list_name
        self.filters = filters or EventFilter()

    def put(self, body: bytes, content_type: str | None = None) -> dict[str, Any]:
        """Parse the event (`EventParseError` → 400) and queue its body when it names objects the
        filters keep (the bridge parses and filters it again: the list holds bodies as they came)."""
        parsed = parse_body(body, content_type)
        dropped = [self.filters.skipped(obj) for obj in parsed.objects]
        skipped = [*parsed.skipped, *(entry for entry in dropped if entry is not None)]
        kept = dropped.count(None)
        if kept:
            check_room(self.client)  # at (or right below) maxmemory the jobs could not run: 503
            with redis_guard("queue event"):
                self.client.rpush(self.list_name, body)
        return {"queued": kept, "skipped": skipped}


class _BodyTooLarge(Exception):
    pass


def error(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers=headers
    )


async def _not_found(request: Request, exc: Exception) -> Response:
    return error(404, "not_found", "POST S3 event records to / or /events")


async def _not_allowed(request: Request, exc: Exception) -> Response:
    return error(405, "method_not_allowed", "POST S3 event records here", {"Allow": "POST, HEAD"})


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused (`_BodyTooLarge`) past `limit` bytes whether or not Content-Length says so."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _BodyTooLarge
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


class Receiver:
    """The endpoints; `app()` builds the Starlette application around them."""

    def __init__(
        self,
        intake: Intake,
        auth: BearerAuth,
        *,
        limits: Limits = Limits(),
        ready: Ready | None = None,
        observe: Observe | None = None,
        inbox: Inbox | None = None,
    ) -> None:
        self.intake = intake
        self.inbox = inbox
        self.auth = auth
        self.limits = limits
        self.ready = ready or (lambda: (True, "ok"))
        self.observe = observe or (lambda outcome: None)
        self.in_flight = 0  # touched only on the event loop: no lock needed

    def app(self) -> Starlette:
        routes = [
            Route("/healthz", self.healthz, methods=["GET", "HEAD"]),
            Route("/readyz", self.readyz, methods=["GET", "HEAD"]),
        ]
        routes += [Route(path, self.events, methods=["POST", "HEAD"]) for path in EVENT_PATHS]
        handlers = {404: _not_found, 405: _not_allowed}
        return Starlette(routes=routes, lifespan=self._lifespan, exception_handlers=handlers)  # type: ignore[arg-type]

    @asynccontextmanager
    async def _lifespan(self, _app: Starlette) -> AsyncIterator[None]:
        import anyio.to_thread

        anyio.to_thread.current_default_thread_limiter().total_tokens = (
            max(self.limits.max_concurrency, 8) + 4
        )
        yield

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def readyz(self, request: Request) -> Response:
        ok, reason = await run_in_threadpool(self._ready)
        return JSONResponse({"ok": ok, "reason": reason}, status_code=200 if ok else 503)

    def _ready(self) -> tuple[bool, str]:
        try:
            return self.ready()
        except Exception as exc:  # noqa: BLE001 - a probe answers, it never raises
            return False, f"readiness check failed: {type(exc).__name__}"

    def _retry(self) -> dict[str, str]:
        return {"Retry-After": str(self.limits.retry_after_s)}

    async def events(self, request: Request) -> Response:
        if not self.auth.check(request.headers.get("authorization")):
            self.observe("unauthorized")
            return error(
                401,
                "unauthorized",
                "missing or invalid bearer token",
                {"WWW-Authenticate": 'Bearer realm="pagefleet-events"'},
            )
        if request.method == "HEAD":
            return Response(status_code=200)
        if self.in_flight >= self.limits.max_concurrency:
            self.observe("overloaded")
            return error(503, "overloaded", "too many requests in flight; retry", self._retry())
        self.in_flight += 1
        try:
            outcome, response = await self._post(request)
        finally:
            self.in_flight -= 1
        self.observe(outcome)
        return response

    async def _post(self, request: Request) -> tuple[str, Response]:
        try:
            body = await read_body(request, self.limits.max_body_bytes)
        except _BodyTooLarge:
            return "too_large", error(
                413, "too_large", f"event bodies are limited to {self.limits.max_body_bytes} bytes"
            )
        try:
            if self.inbox is not None:
                queued = await run_in_threadpool(
                    self.inbox.put, body, request.headers.get("content-type")
                )
                return ("queued" if queued["queued"] else "skipped"), JSONResponse(queued)
            result = await run_in_threadpool(
                self.intake.submit_body, body, request.headers.get("content-type")
            )
        except EventParseError as exc:
            return "invalid", error(400, exc.code, exc.message)
        except (BrokerUnavailable, StorageError) as exc:
            log.warning("event not accepted, sender will retry: %s", exc.message)
            why = exc.message if isinstance(exc, BrokerFull) else "temporarily unavailable; retry"
            return "unavailable", error(503, exc.code, why, self._retry())
        except Exception:  # noqa: BLE001 - the boundary: log it, tell the client nothing about internals
            log.exception("event request failed")
            return "error", error(500, "internal_error", "internal error; see the receiver's log")
        if result.retry_later:
            return "in_progress", error(
                503,
                "in_progress",
                "the same upload is being enqueued by another delivery; retry",
                self._retry(),
            )
        outcome = (
            "enqueued"
            if result.enqueued
            else "duplicate"
            if result.duplicates
            else "refused"
            if result.refused
            else "skipped"
        )
        return outcome, JSONResponse(result.summary())


def redis_ready(client: Any) -> Ready:
    """Ready when the broker accepts a write: PING alone passes on a Redis at maxmemory (noeviction
    refuses every write with OOM) and on a read-only replica."""
    import redis

    def ready() -> tuple[bool, str]:
        try:
            client.set("pagefleet:events:readyz", "1", ex=60)
            check_room(client)
        except BrokerUnavailable as exc:  # full: at or right below maxmemory
            return False, exc.message
        except redis.exceptions.OutOfMemoryError as exc:
            return False, f"redis refuses writes (maxmemory reached): {exc}"
        except redis.exceptions.ReadOnlyError as exc:
            return False, f"redis refuses writes (read-only replica): {exc}"
        except redis.RedisError as exc:
            return False, f"redis unavailable: {type(exc).__name__}"
        return True, "ok"

    return ready
