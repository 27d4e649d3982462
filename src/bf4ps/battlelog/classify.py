"""One response (or transport failure) -> one classified FetchResult.

HTTP status first, then the body (the body's rules are envelope.py's). docs/battlelog.md
"Classification" tabulates what becomes which class, and its "Evidence" the source of each
signal. ``details["signal"]`` names what was recognized (envelope.SIGNALS, REDIRECT_SIGNALS,
HTTP_5XX); ``details["soft_throttle"]`` is 1 for a soft throttle; ``details["retry_after_seconds"]``
is a ``Retry-After`` header's delay (seconds or an HTTP date) on any non-2xx answer. Every
"Battlelog is not itself" answer (``is_outage``) cools the egress and feeds the fleet circuit;
none counts toward parking (ErrorClass.parks). Messages are short reasons (status, exception
type, a cleaned excerpt of Battlelog's own ``message``), never payload bodies.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from bf4ps.battlelog.envelope import LOGIN_WALL, SOFT_THROTTLE, UNKNOWN_PAGE, ItemBatch, short
from bf4ps.battlelog.models import BattlelogParseError, FetchResult, Parsed
from bf4ps.battlelog.parse_detailed import parse_detailed
from bf4ps.battlelog.parse_items import parse_vehicle_batch, parse_weapon_batch
from bf4ps.battlelog.parse_profile import parse_profile
from bf4ps.domain import ErrorClass, Resource

Parser = Callable[[bytes], Parsed | ItemBatch[Any] | None]  # None: the body carries nothing

THROTTLE_STATUSES = frozenset({403, 429})
NOT_FOUND_STATUSES = frozenset({404, 410})
# signals of non-2xx answers (details["signal"]; part of the circuit's failure signature)
LOGIN_REDIRECT = "login_redirect"
MAINTENANCE_REDIRECT = "maintenance_redirect"
REDIRECT = "redirect"
REDIRECT_SIGNALS = (LOGIN_REDIRECT, MAINTENANCE_REDIRECT, REDIRECT)
HTTP_5XX = "http_5xx"
_LOGIN_LOCATIONS = ("accounts.ea.com", "signin", "sign-in", "login", "/gate", "auth")
_MAINTENANCE_LOCATIONS = ("maintenance", "unavailable", "outage", "status.")
# HTML where JSON was expected and the answer names no soldier: Battlelog is not itself
_OUTAGE_SIGNALS = frozenset({LOGIN_WALL, UNKNOWN_PAGE, *REDIRECT_SIGNALS, HTTP_5XX})

_PARSERS: dict[Resource, Callable[..., Parsed | ItemBatch[Any]]] = {
    Resource.DETAILED: parse_detailed,
    Resource.PROFILE: parse_profile,
    Resource.WEAPONS: parse_weapon_batch,
    Resource.VEHICLES: parse_vehicle_batch,
}


class BodyTooLarge(Exception):
    """The response body exceeded the client's size cap (read was stopped)."""


def is_soft_throttle(result: FetchResult) -> bool:
    """An answer with nothing in it: a null body or a success without its stats. Alone it is
    transient (Battlelog's own noise, retried); only a run of them on one egress is taken for
    a throttle (gates/throttle.py ``soft_answer``)."""
    return bool(result.details.get("soft_throttle"))


def slows_egress(result: FetchResult) -> bool:
    """Should this answer alone cool the egress down? Only a hard throttle (a 403/429 or a
    throttle message); a soft throttle does when it is one of a run (``is_soft_throttle``)."""
    return result.error_class is ErrorClass.THROTTLE


def is_outage(result: FetchResult) -> bool:
    """A "Battlelog is not itself" answer: 5xx, a redirect, an error page, a timeout, a login
    wall or an unknown HTML page. It cools the egress (for its Retry-After when it gave one)
    and feeds the circuit; it never counts toward parking."""
    if result.error_class is None or result.error_class is ErrorClass.THROTTLE:
        return False
    return result.error_class.is_outage or result.details.get("signal") in _OUTAGE_SIGNALS


def retry_after_seconds(value: str, now: datetime | None = None) -> float | None:
    """A Retry-After header's delay: delta-seconds or an HTTP date; None when unusable."""
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    delay = (when - (now or datetime.now(UTC))).total_seconds()
    return max(0.0, delay) if math.isfinite(delay) else None


def redirect_signal(location: str | None) -> str:
    """What a redirect's Location says: a login page, a maintenance page, or anything else."""
    target = (location or "").lower()
    if any(marker in target for marker in _LOGIN_LOCATIONS):
        return LOGIN_REDIRECT
    if any(marker in target for marker in _MAINTENANCE_LOCATIONS):
        return MAINTENANCE_REDIRECT
    return REDIRECT


def resource_parser(
    resource: Resource, persona_id: int | None = None, platform_int: int | None = None
) -> Parser:
    """The parser of a stats resource, checking the payload's soldier when ids are given."""
    return functools.partial(
        _PARSERS[Resource(resource)], persona_id=persona_id, platform_int=platform_int
    )


def status_failure(status: int) -> tuple[ErrorClass, str] | None:
    """The class of a non-success HTTP status, or None for 2xx."""
    if 200 <= status < 300:
        return None
    if status in THROTTLE_STATUSES:
        return ErrorClass.THROTTLE, f"HTTP {status}: throttled"
    if status in NOT_FOUND_STATUSES:
        return ErrorClass.NOT_FOUND, f"HTTP {status}: not found"
    if 300 <= status < 400:
        return ErrorClass.SERVER, f"HTTP {status}: unexpected redirect"
    return ErrorClass.SERVER, f"HTTP {status}"


def classify_response(
    *,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    parser: Parser,
    resource: Resource | None,
    duration_seconds: float,
) -> FetchResult:
    result = FetchResult(
        resource=resource,
        http_status=status,
        duration_seconds=duration_seconds,
        size_bytes=len(body),
        body=body if resource is not None else None,
    )
    failure = status_failure(status)
    if failure is not None:
        result.error_class, result.message = failure
        result.details.update(_header_details(headers))
        _failure_signal(result, status, headers)
        return result
    return apply_parser(result, body, parser)


def apply_parser(result: FetchResult, body: bytes, parser: Parser) -> FetchResult:
    """Parse a 2xx body into ``result`` (parsed, or error class and message)."""
    try:
        parsed = parser(body)
    except BattlelogParseError as exc:
        result.error_class, result.message = exc.error_class, short(str(exc), 200)
        if exc.signal is not None:
            result.details["signal"] = exc.signal
            if exc.signal == SOFT_THROTTLE:
                result.details["soft_throttle"] = 1
        return result
    except Exception as exc:  # a parser bug must not escape: INTERNAL, not a crash
        result.error_class = ErrorClass.INTERNAL
        result.message = f"parser failure: {type(exc).__name__}"
        return result
    if isinstance(parsed, ItemBatch):
        result.parsed = parsed.items
        result.details["skipped_items"] = parsed.skipped
    else:
        result.parsed = parsed
    return result


def _failure_signal(result: FetchResult, status: int, headers: Mapping[str, str]) -> None:
    """The signal and the Retry-After delay of a non-2xx answer."""
    if 300 <= status < 400:
        result.details["signal"] = redirect_signal(headers.get("location"))
    elif status >= 500:
        result.details["signal"] = HTTP_5XX
    retry_after = headers.get("retry-after")
    delay = retry_after_seconds(retry_after) if retry_after else None
    if delay is not None:
        result.details["retry_after_seconds"] = round(delay, 3)


def _header_details(headers: Mapping[str, str]) -> dict[str, str]:
    details: dict[str, str] = {}
    for name in ("retry-after", "location"):
        value = headers.get(name)
        if value:
            details[name.replace("-", "_")] = short(value, 120)
    return details


def exception_class(exc: BaseException) -> tuple[ErrorClass, str]:
    """The class and a short reason for a failure that produced no usable response."""
    name = type(exc).__name__
    if isinstance(exc, BodyTooLarge):
        return ErrorClass.MALFORMED, short(str(exc), 200)
    if isinstance(exc, TimeoutError) and str(exc):  # the client's own deadline, which it names
        return ErrorClass.TIMEOUT, f"timeout ({short(str(exc), 100)})"
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        return ErrorClass.TIMEOUT, f"timeout ({name})"
    if isinstance(exc, httpx.DecodingError):
        return ErrorClass.MALFORMED, "undecodable content encoding"
    if isinstance(exc, httpx.TransportError | OSError):
        return ErrorClass.TIMEOUT, f"connection error ({name}: {short(str(exc), 100)})"
    if isinstance(exc, httpx.HTTPError):
        return ErrorClass.SERVER, f"HTTP failure ({name})"
    return ErrorClass.INTERNAL, f"client failure ({name})"


def classify_exception(
    exc: BaseException,
    *,
    resource: Resource | None,
    duration_seconds: float,
    http_status: int | None = None,
    size_bytes: int = 0,
) -> FetchResult:
    error_class, message = exception_class(exc)
    return FetchResult(
        resource=resource,
        http_status=http_status,
        duration_seconds=duration_seconds,
        size_bytes=size_bytes,
        error_class=error_class,
        message=message,
    )
