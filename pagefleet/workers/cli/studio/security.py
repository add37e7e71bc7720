"""Safe by default, as an ASGI middleware in front of every route.

- Host check: on a loopback bind only loopback Host headers are answered (a DNS-rebinding page
  cannot talk to the studio through its own name).
- Token: when set, every request needs it — `Authorization: Bearer T`, the `pagefleet_studio`
  cookie, or `?token=T` once (answered with the HttpOnly, SameSite=Strict cookie and a redirect
  that drops it from the address bar). Compared in constant time.
- Writes: a POST needs the per-process CSRF token (form field `csrf` or header `X-CSRF-Token`) and,
  when the browser sends one, an Origin equal to the Host.
- Headers: a strict Content-Security-Policy (no inline script, no third-party anything),
  nosniff, no referrer to other sites (same-origin: Chrome sends `Origin: null` under no-referrer), no framing.
"""

from __future__ import annotations

import hmac
import secrets
import urllib.parse
from http.cookies import SimpleCookie
from typing import Any

from starlette.datastructures import Headers, QueryParams
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pagefleet.workers.cli.studio.config import is_loopback

COOKIE = "pagefleet_studio"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


def same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))


def new_csrf() -> str:
    return secrets.token_urlsafe(32)


def _host_name(host_header: str) -> str:
    if host_header.startswith("["):
        return host_header[1:].split("]", 1)[0]
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


class Guard:
    def __init__(self, app: ASGIApp, *, token: str | None, loopback_only: bool) -> None:
        self.app = app
        self.token = token or None
        self.loopback_only = loopback_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            await self._secured(refusal, scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [
                    h for h in HEADERS if h[0] not in present
                ]
            await send(message)

        await self.app(scope, receive, send_secured)

    async def _secured(
        self, response: Response, scope: Scope, receive: Receive, send: Send
    ) -> None:
        response.raw_headers.extend(HEADERS)
        await response(scope, receive, send)

    def _refusal(self, scope: Scope) -> Response | None:
        headers = Headers(scope=scope)
        if self.loopback_only and not is_loopback(_host_name(headers.get("host", ""))):
            return PlainTextResponse("forbidden: this studio answers loopback host names only", 403)
        if scope["method"] == "POST" and not self._same_origin(headers):
            return PlainTextResponse("forbidden: cross-origin write", 403)
        if self.token is None:
            return None
        return self._token_refusal(scope, headers)

    def _same_origin(self, headers: Headers) -> bool:
        origin = headers.get("origin")
        if origin is None:
            return True
        return urllib.parse.urlsplit(origin).netloc == headers.get("host", "")

    def _token_refusal(self, scope: Scope, headers: Headers) -> Response | None:
        assert self.token is not None
        auth = headers.get("authorization", "")
        if auth.startswith("Bearer ") and same(auth[len("Bearer ") :], self.token):
            return None
        cookie: SimpleCookie = SimpleCookie(headers.get("cookie", ""))
        if COOKIE in cookie and same(cookie[COOKIE].value, self.token):
            return None
        params = QueryParams(scope.get("query_string", b""))
        given = params.get("token")
        if scope["method"] == "GET" and given is not None and same(given, self.token):
            rest = urllib.parse.urlencode([(k, v) for k, v in params.multi_items() if k != "token"])
            response = RedirectResponse(
                urllib.parse.quote(scope["path"]) + (f"?{rest}" if rest else ""), 303
            )
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="strict", path="/")
            return response
        return PlainTextResponse(
            "unauthorized: open the address the studio printed (it carries ?token=…)",
            401,
            headers={"www-authenticate": 'Bearer realm="pagefleet review"'},
        )


def check_csrf(expected: str, form: dict[str, Any], headers: Headers) -> bool:
    given = headers.get("x-csrf-token") or str(form.get("csrf", ""))
    return bool(given) and same(given, expected)
