"""Security: response headers, a request body limit, CSRF tokens (signed double submit), the
operator console's Basic authentication (constant-time compare; refused outright when no
credentials are configured, unless the local demo switch is on; failed logins limited and
logged) and the bearer token of /metrics."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import math
import secrets
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bf4ps.db.connect import Conn
from bf4ps.settings import Settings
from bf4ps.web import clients
from bf4ps.web.errors import WebError
from bf4ps.web.login_limit import LoginLimiter, LoginPolicy, retry_header

log = logging.getLogger("bf4ps.web.login")

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
HEADERS = {
    "content-security-policy": CSP,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cross-origin-opener-policy": "same-origin",
    "permissions-policy": "camera=(), microphone=(), geolocation=()",
}
PRIVATE_PREFIXES = ("/ops", "/api/ops")
CSRF_COOKIE = "bf4ps_csrf"
CSRF_FIELD = "csrf_token"
BODY_LIMIT = 16 * 1024


class HttpMiddleware:
    """An ASGI middleware of HTTP requests (`http`): other scopes (the lifespan) pass through."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self.http(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        raise NotImplementedError


class SecurityHeaders(HttpMiddleware):
    """Adds the security headers to every HTTP response; operator pages are never cached."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        private = str(scope.get("path", "")).startswith(PRIVATE_PREFIXES)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in HEADERS.items():
                    headers.setdefault(name, value)
                if private:
                    headers["cache-control"] = "no-store"
            await send(message)

        await self.app(scope, receive, send_with_headers)


class _TooLarge(Exception):
    pass


class BodyLimit(HttpMiddleware):
    """Refuses request bodies over `max_bytes` with 413, by Content-Length or while reading."""

    def __init__(self, app: ASGIApp, max_bytes: int = BODY_LIMIT) -> None:
        super().__init__(app)
        self.max_bytes = max_bytes

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await _refuse(send, self.max_bytes)
            return
        seen = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _TooLarge:
            if not started:
                await _refuse(send, self.max_bytes)


async def _refuse(send: Send, limit: int) -> None:
    body = json.dumps({"error": f"request body larger than {limit} bytes",
                       "status": 413}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class Csrf:
    """Signed double submit: a random value + its HMAC, in a SameSite=Strict cookie and in the
    form; a POST must carry the same valid token in both."""

    def __init__(self, secret: bytes) -> None:
        self._key = hashlib.sha256(b"bf4ps-csrf:" + secret).digest()

    def _sign(self, raw: str) -> str:
        return hmac.new(self._key, raw.encode(), hashlib.sha256).hexdigest()[:32]

    def new_token(self) -> str:
        raw = secrets.token_urlsafe(24)
        return f"{raw}.{self._sign(raw)}"

    def valid(self, token: str | None) -> bool:
        if not token or len(token) > 100 or "." not in token:
            return False
        raw, _, sig = token.partition(".")
        return hmac.compare_digest(sig.encode(), self._sign(raw).encode())

    def token_for(self, request: Request) -> tuple[str, bool]:
        """The request's valid cookie token, or a new one (True: set the cookie)."""
        cookie = request.cookies.get(CSRF_COOKIE)
        if cookie and self.valid(cookie):
            return cookie, False
        return self.new_token(), True

    def check(self, request: Request, submitted: object) -> None:
        cookie = request.cookies.get(CSRF_COOKIE)
        if not (isinstance(submitted, str) and cookie and self.valid(cookie)
                and hmac.compare_digest(cookie.encode(), submitted.encode())):
            raise WebError(403, "the form's security token is missing or expired: reload the "
                                "page and submit again")


def set_csrf_cookie(response: Response, token: str, request: Request) -> None:
    response.set_cookie(CSRF_COOKIE, token, max_age=12 * 3600, path="/", httponly=True,
                        samesite="strict", secure=request.url.scheme == "https")


class OpsAuth:
    """HTTP Basic for /ops and /api/ops/*, failed logins limited per client network and per
    account (login_limit.py: counted in the database, through `connect`), each one logged and
    counted."""

    REALM = 'Basic realm="BF4PS operator console", charset="UTF-8"'

    def __init__(self, settings: Settings,
                 connect: Callable[[], AbstractAsyncContextManager[Conn]],
                 counted: Callable[[str], None] = lambda outcome: None) -> None:
        password = settings.ops_password.get_secret_value() if settings.ops_password else ""
        self._user = (settings.ops_username or "").encode()
        self._password = password.encode()
        self.configured = bool(self._user and self._password)
        self.demo = settings.ops_local_demo
        self.limiter = LoginLimiter(LoginPolicy.from_settings(settings), connect)
        self._prefix = settings.client_ipv6_prefix_length
        self._counted = counted

    async def check(self, request: Request) -> str:
        """The operator's name, or a WebError: 403 when the console is not configured, 401
        when the credentials are missing or wrong, 429 while the client or the account is
        locked out after failed logins."""
        if not self.configured:
            if self.demo:
                return "local-demo"
            raise WebError(403, "the operator console is disabled: set BF4PS_OPS_USERNAME and "
                                "BF4PS_OPS_PASSWORD (or BF4PS_OPS_LOCAL_DEMO=true on a local "
                                "demo)")
        header = request.headers.get("authorization", "")
        if not header:  # a browser's first request, before it shows the password dialog
            raise WebError(401, "operator credentials required",
                           headers={"WWW-Authenticate": self.REALM})
        user, password = _basic(header)
        host = clients.address(request)
        keys = (f"client:{clients.network(host, self._prefix)}",
                "account:" + user[:64].decode("utf-8", "replace"))
        ok_user = hmac.compare_digest(user, self._user)
        ok_password = hmac.compare_digest(password, self._password)
        right = ok_user and ok_password
        # a wrong attempt is counted before it is answered; a right one clears the records,
        # counted only when an attempt now would be refused (login_limit.py)
        counted = await (self.limiter.verified(*keys) if right
                         else self.limiter.attempt(*keys))
        if counted.wait > 0:
            self._log("refused", host, user, counted.failures, counted.wait)
            raise WebError(429, f"too many failed operator logins: retry in "
                                f"{retry_header(counted.wait)} s",
                           headers={"Retry-After": retry_header(counted.wait)})
        if not right:
            now = await self.limiter.standing(*keys)  # a lock this attempt started, if any
            self._log("failed", host, user, now.failures, now.wait)
            headers = {"WWW-Authenticate": self.REALM}
            if now.wait > 0:
                headers["Retry-After"] = retry_header(now.wait)
            raise WebError(401, "operator credentials required", headers=headers)
        return user.decode("utf-8", "replace")

    def _log(self, outcome: str, host: str, user: bytes, failures: int, lock: float) -> None:
        """One line per failed or refused login, the client first (docs/operations.md: the
        fail2ban filter); the user name as a JSON string, so it cannot forge a line."""
        self._counted(outcome)
        name = json.dumps(user[:64].decode("utf-8", "replace"))
        log.warning("ops login %s: client=%s network=%s failures=%d retry_after=%d user=%s",
                    outcome, host, clients.network(host, self._prefix), failures,
                    math.ceil(lock), name)


def _basic(header: str) -> tuple[bytes, bytes]:
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic" or not value or len(value) > 1024:
        return b"", b""
    try:
        decoded = base64.b64decode(value.strip(), validate=True)
    except (binascii.Error, ValueError):
        return b"", b""
    user, sep, password = decoded.partition(b":")
    return (user, password) if sep else (b"", b"")


class MetricsAuth:
    """/metrics needs `Authorization: Bearer <BF4PS_METRICS_TOKEN>`. Without a token set, it
    answers only a scraper on the website's own host: the website bound to a loopback
    address, the connection from loopback and no proxy's forwarding header on it; anyone else
    gets 403 naming the setting (docs/operations.md, Monitoring)."""

    def __init__(self, settings: Settings) -> None:
        token = settings.metrics_token.get_secret_value() if settings.metrics_token else ""
        self._token = token.encode()
        self._loopback_bound = clients.is_loopback(settings.web_host)

    def check(self, request: Request) -> None:
        if not self._token:
            if self._loopback_bound and clients.direct_from_loopback(request):
                return
            raise WebError(403, "/metrics needs a bearer token: set BF4PS_METRICS_TOKEN (and "
                                "give Prometheus the same), or scrape it on the website's "
                                "own host with the website bound to 127.0.0.1 and no proxy "
                                "in between")
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        given = value.strip().encode() if scheme.lower() == "bearer" else b""
        if not hmac.compare_digest(given, self._token):
            raise WebError(401, "a metrics bearer token is required",
                           headers={"WWW-Authenticate": 'Bearer realm="BF4PS metrics"'})
