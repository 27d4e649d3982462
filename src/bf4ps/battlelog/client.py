"""The asynchronous Battlelog client: one call = one physical HTTP request, classified.

No retries (the queue engine retries), no proxies from the environment, no redirects followed
but the session page's; each phase and the whole request are bounded by ``timeout_seconds``;
bodies are streamed and cut at ``max_body_bytes``. ``fetch``, ``account_soldiers`` and
``search`` never raise for network, HTTP or payload problems: they return a FetchResult with
``error_class`` (bad arguments raise ValueError before any request). A send window is kept at
the socket, a kept-alive connection is reused only while a server still keeps it, and an empty
search answer is believed only once ``confirm_empty`` checked it. docs/battlelog.md "The
client" gives each rule and why.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType

import httpx

from bf4ps.battlelog.classify import (
    BodyTooLarge,
    Parser,
    classify_exception,
    classify_response,
    resource_parser,
)
from bf4ps.battlelog.endpoints import (
    SEARCH_PATH,
    SESSION_COOKIE,
    SESSION_PATH,
    account_soldiers_path,
    check_sum_of,
    search_form,
    stats_path,
)
from bf4ps.battlelog.models import FetchResult, SearchHit, Session
from bf4ps.battlelog.parse_search import parse_account_soldiers, parse_search
from bf4ps.battlelog.window import SendTooLate, SendWindow, WindowTrace
from bf4ps.domain import ErrorClass, Platform, Resource

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
SESSION_REDIRECTS = 3
SEARCH_UNAVAILABLE = "search unavailable (retried later)"
UNVERIFIED_EMPTY = "unverified_empty"
REUSE_WITHIN_SECONDS = 4.0  # a second inside Apache httpd's default 5 s keep-alive timeout
_SESSION_KEPT_ON = frozenset({ErrorClass.THROTTLE, ErrorClass.TIMEOUT})  # not the session's fault
# sends one further request in a slot of its own; None: no slot could be had (nothing sent)
Send = Callable[[SendWindow | None], Awaitable[FetchResult]]
Further = Callable[[Send], Awaitable[FetchResult | None]]


def _hits(result: FetchResult) -> tuple[SearchHit, ...]:
    parsed = result.parsed if isinstance(result.parsed, tuple) else ()
    return tuple(h for h in parsed if isinstance(h, SearchHit))


def _unverified(result: FetchResult, why: str) -> None:
    result.parsed, result.error_class = None, ErrorClass.UNRECOGNIZED
    result.message = f"{SEARCH_UNAVAILABLE}: {why}"
    result.details["signal"] = UNVERIFIED_EMPTY


def _start_page(body: bytes) -> None:
    """The start page is HTML; only its session cookie matters (checked after the request)."""


class NoAnswer(TimeoutError):
    """A sent request whose answer did not begin within the client's answer deadline."""


class BattlelogClient:
    def __init__(
        self,
        base_url: str,
        user_agent: str,
        timeout_seconds: float = 30.0,
        local_address: str | None = None,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        connect_lead: float = 0.0,
        reuse_within: float = REUSE_WITHIN_SECONDS,
        answer_timeout: float | None = None,
    ) -> None:
        if timeout_seconds <= 0:
            raise ValueError("timeout_seconds must be positive")
        if answer_timeout is not None and answer_timeout <= 0:
            raise ValueError("answer_timeout must be positive")
        self.base_url = base_url.rstrip("/")
        self.local_address = local_address
        self._deadline = timeout_seconds
        # how long a sent request may wait for its answer to begin (its status and headers)
        self._answer_deadline = min(answer_timeout or timeout_seconds, timeout_seconds)
        self._max_body_bytes = max_body_bytes
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers={
                "User-Agent": user_agent,
                "Accept": "application/json",
                "Accept-Encoding": "gzip, deflate",
            },
            timeout=httpx.Timeout(timeout_seconds),
            transport=httpx.AsyncHTTPTransport(
                local_address=local_address,
                retries=0,
                limits=httpx.Limits(
                    max_connections=100,
                    max_keepalive_connections=20,
                    keepalive_expiry=max(0.0, reuse_within - connect_lead),
                ),
            ),
            follow_redirects=False,
            max_redirects=SESSION_REDIRECTS,
            trust_env=False,
        )
        self._operator_session: str | None = None

    async def __aenter__(self) -> BattlelogClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def fetch(self, resource: Resource, persona_id: int, platform: Platform,
                    *, window: SendWindow | None = None) -> FetchResult:
        """GET one stats resource of one soldier; parsed is the resource's model."""
        resource, platform = Resource(resource), Platform(platform)
        path = stats_path(resource, persona_id, platform.battlelog_int)
        parser = resource_parser(resource, persona_id, platform.battlelog_int)
        return await self._request("GET", path, parser, resource, resource.value,
                                   window=window)

    async def account_soldiers(self, user_id: int, *, window: SendWindow | None = None
                               ) -> FetchResult:
        """GET a Battlelog user's BF4 soldiers; parsed is tuple[LinkedSoldier, ...]."""
        path = account_soldiers_path(user_id)
        return await self._request("GET", path, parse_account_soldiers, None, "account",
                                   window=window)

    async def search(self, name: str, *, window: SendWindow | None = None) -> FetchResult:
        """POST a name search; parsed is tuple[SearchHit, ...] of exact-name BF4 personas. The
        form carries the session's check-sum when a session is open. An answer without any
        BF4 persona is UNRECOGNIZED until `confirm_empty` believes it (see above)."""
        result = await self._search(name, window)
        if result.ok and isinstance(result.parsed, tuple):
            hits = _hits(result)
            if not hits:  # the session is kept for the check search
                _unverified(result, "an empty answer, not yet checked")
                return result
            wanted = name.strip().casefold()
            result.parsed = tuple(h for h in hits if h.name.casefold() == wanted)
        if result.error_class is not None and result.error_class not in _SESSION_KEPT_ON:
            self.forget_session()
        return result

    async def confirm_empty(self, empty: FetchResult, canary: str, *,
                            window: SendWindow | None = None) -> FetchResult:
        """Check an empty answer (`empty`, from `search`) in the same session: a search for
        `canary`, a soldier known to exist, must find a BF4 persona of that name. Then `empty`
        is believed (ok, parsed ``()``); otherwise it stays "search unavailable" and the
        session is dropped. Returns `empty`."""
        check = await self._search(canary, window)
        wanted = canary.strip().casefold()
        if check.ok and any(h.name.casefold() == wanted for h in _hits(check)):
            empty.parsed, empty.error_class, empty.message = (), None, ""
            empty.details.pop("signal", None)
            empty.details["canary"] = "passed"
            return empty
        why = (f"answered {check.error_class.value}" if check.error_class is not None
               else "came back empty")
        return self.unconfirmed(empty, f"the check search for {canary!r}, a soldier known to "
                                       f"exist, {why}")

    def unconfirmed(self, empty: FetchResult, why: str) -> FetchResult:
        """An empty answer that could not be believed: "search unavailable", with `why`."""
        _unverified(empty, f"an empty answer; {why}")
        empty.details["canary"] = "failed"
        self.forget_session()
        return empty

    async def _search(self, name: str, window: SendWindow | None) -> FetchResult:
        form = search_form(name, self.check_sum)
        result = await self._request("POST", SEARCH_PATH, parse_search, None, "search", form,
                                     window=window)
        result.details["check_sum"] = int("post-check-sum" in form)
        return result

    def use_session(self, session_id: str) -> None:
        """Search with an operator's (logged-in) Battlelog session instead of an anonymous one;
        it is restored whenever a failed search drops it (its empty answers are checked like
        any session's)."""
        if check_sum_of(session_id) is None:
            raise ValueError("the Battlelog session id is too short")
        self._operator_session = session_id.strip()
        self._set_session(self._operator_session)

    def _set_session(self, session_id: str) -> None:
        host = httpx.URL(self.base_url).host
        self._http.cookies.set(SESSION_COOKIE, session_id, domain=host)

    @property
    def check_sum(self) -> str | None:
        """The search check-sum of the open session; None when no session is open."""
        for cookie in self._http.cookies.jar:
            if cookie.name == SESSION_COOKIE and cookie.value:
                return check_sum_of(cookie.value)
        return None

    def forget_session(self) -> None:
        """Drop the session cookie (only it); an operator's session is set again, not lost."""
        for cookie in list(self._http.cookies.jar):
            if cookie.name == SESSION_COOKIE:
                self._http.cookies.delete(SESSION_COOKIE, domain=cookie.domain,
                                          path=cookie.path)
        if self._operator_session is not None:
            self._set_session(self._operator_session)

    async def open_session(self, *, window: SendWindow | None = None,
                           further: Further | None = None) -> FetchResult | None:
        """GET the start page for an anonymous session cookie; parsed is the Session. A
        redirect is followed (at most SESSION_REDIRECTS, on the same site, keeping their
        cookies) as a request of its own: `further(send)` sends it in a slot of its own (a
        counted one, for a collector) and None from it means no slot was had (None: nothing
        more was sent); without `further` hops follow at once. A page that sets no usable
        cookie is MALFORMED, too many hops SERVER (both retryable)."""
        self.forget_session()
        result = await self._session_page(SESSION_PATH, window)
        for _ in range(SESSION_REDIRECTS):
            location = self._same_site_redirect(result)
            if location is None:
                break
            if further is None:
                result = await self._session_page(location, None)
                continue
            hop = await further(self._hop_to(location))
            if hop is None:
                return None
            result = hop
        if result.ok:
            check_sum = self.check_sum
            if check_sum is None:
                result.error_class = ErrorClass.MALFORMED
                result.message = f"the start page set no usable {SESSION_COOKIE} cookie"
            else:
                result.parsed = Session(check_sum)
        return result

    def _hop_to(self, location: str) -> Send:
        async def send(window: SendWindow | None) -> FetchResult:
            return await self._session_page(location, window)
        return send

    async def _session_page(self, path: str, window: SendWindow | None) -> FetchResult:
        return await self._request("GET", path, _start_page, None, "session", window=window)

    def _same_site_redirect(self, result: FetchResult) -> str | None:
        """Where a redirect answer sends the session page (None: not a redirect, or one off
        the site, which is not followed)."""
        location = result.details.get("location")
        if not (300 <= (result.http_status or 0) < 400) or not isinstance(location, str):
            return None
        target = self._http.base_url.join(location)
        return location if target.host == self._http.base_url.host else None

    async def _request(
        self,
        method: str,
        path: str,
        parser: Parser,
        resource: Resource | None,
        kind: str,
        form: Mapping[str, str] | None = None,
        *,
        window: SendWindow | None = None,
    ) -> FetchResult:
        trace = WindowTrace(window) if window is not None else None
        hold = max(0.0, window.at - time.time()) if window is not None else 0.0
        started = time.perf_counter()
        try:
            async with asyncio.timeout(self._deadline + hold):  # the hold is not the request's
                status, headers, body, wire_bytes = await self._send(method, path, form, trace,
                                                                     hold)
        except SendTooLate:
            raise  # not a Battlelog outcome: nothing was sent
        except Exception as exc:  # classified, never raised: see the module docstring
            result = classify_exception(
                exc, resource=resource, duration_seconds=_since(started, trace)
            )
        else:
            result = classify_response(
                status=status,
                headers=headers,
                body=body,
                parser=parser,
                resource=resource,
                duration_seconds=_since(started, trace),
            )
            result.details["wire_bytes"] = wire_bytes
        result.details["kind"] = kind
        if trace is not None and trace.released_at is not None:
            result.sent_at = trace.released_at
        return result

    async def _send(
        self, method: str, path: str, form: Mapping[str, str] | None, trace: WindowTrace | None,
        hold: float,
    ) -> tuple[int, httpx.Headers, bytes, int]:
        data = dict(form) if form is not None else None
        extensions = {"trace": trace} if trace is not None else None
        request = self._http.build_request(method, path, data=data, extensions=extensions)
        try:  # the answer must begin within the answer deadline (after a window's hold)
            async with asyncio.timeout(self._answer_deadline + hold):
                response = await self._http.send(request, stream=True)
        except TimeoutError:
            raise NoAnswer(f"no answer within {self._answer_deadline:g} s") from None
        try:
            body = await self._read_body(response)
        finally:
            await response.aclose()
        return response.status_code, response.headers, body, response.num_bytes_downloaded

    async def _read_body(self, response: httpx.Response) -> bytes:
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > self._max_body_bytes:
                raise BodyTooLarge(f"body larger than {self._max_body_bytes} bytes")
            chunks.append(chunk)
        return b"".join(chunks)


def _since(started: float, trace: WindowTrace | None) -> float:
    """Seconds from sending (after a window's hold, when there was one) to now."""
    if trace is not None and trace.released is not None:
        started = trace.released
    return time.perf_counter() - started
