"""What both compatible formats do alike: read the parameters leniently (the extra ones tools
send are ignored), serve a known soldier at once with headers saying how fresh his statistics
are, and submit an unknown one to the interactive lane exactly as the website's search does
(web/actions.py: the same use case, the same per-client limit), answering "not yet" with a
Retry-After from the request's estimate. Never a Battlelog call in the request."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime

from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request

from bf4ps.domain import Platform
from bf4ps.interactive.inputs import InputError, parse_name, parse_persona_id
from bf4ps.interactive.submit import Submission
from bf4ps.views import compat as compat_view
from bf4ps.views.compat import Stored
from bf4ps.web import actions
from bf4ps.web.errors import WebError
from bf4ps.web.state import read_db

MAX_VALUE = 300  # a parameter's value is cut to this many characters
DEFAULT_RETRY_SECONDS = 30  # Retry-After when the lane has no estimate
CORS = {"Access-Control-Allow-Origin": "*"}  # both services answered any origin


class Refusal(Exception):
    """A request one of the formats answers with an error: `code` is bf4stats' error word."""

    def __init__(self, status: int, code: str, message: str,
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = dict(headers or {})


@dataclass(frozen=True, slots=True)
class Pending:
    """A soldier not collected yet, submitted: when to ask again, and where to watch."""

    submission: Submission
    retry_after: int
    request_path: str


async def parameters(request: Request, *, body: bool = False) -> dict[str, str]:
    """Query parameters, and with `body` the POST fields (form or JSON; they win); a name
    given twice counts once (the last); values are stripped and cut to MAX_VALUE."""
    found = {k: v for k, v in request.query_params.multi_items()}
    if body and request.method == "POST":
        found |= await _body_fields(request)
    return {k[:40]: v.strip()[:MAX_VALUE] for k, v in found.items() if "\x00" not in v}


async def _body_fields(request: Request) -> dict[str, str]:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    try:
        if ctype == "application/json":
            data = json.loads(await request.body() or b"{}")
            if not isinstance(data, dict):
                raise Refusal(400, "badRequest", "the JSON body must be an object")
            return {str(k): str(v) for k, v in data.items() if isinstance(v, str | int)}
        form = await request.form()
        return {k: v for k, v in form.multi_items() if isinstance(v, str)}
    except (ValueError, UnicodeDecodeError, MultiPartException, HTTPException) as exc:
        raise Refusal(400, "badRequest", "the body is neither a form nor JSON") from exc


@dataclass(frozen=True, slots=True)
class Who:
    platform: Platform
    name: str | None
    persona_id: int | None


def who(platform: Platform, name: str | None, persona_id: str | None) -> Who:
    """The soldier asked for; a bad name or id is a Refusal (bf4stats: nameInvalid)."""
    try:
        pid = parse_persona_id(persona_id, "playerid") if persona_id else None
        clean = parse_name(name) if name else None
    except InputError as exc:
        raise Refusal(422, "nameInvalid", exc.message) from None
    if pid is None and clean is None:
        raise Refusal(422, "nameInvalid", "a soldier name (name) or persona id is required")
    return Who(platform, clean, pid)


async def known(request: Request, asked: Who, *, items: bool = True) -> Stored | None:
    """The soldier's stored statistics, if BF4PS has collected his detailed statistics."""
    async with read_db(request) as conn:
        s = await compat_view.find(conn, asked.platform, name=asked.name,
                                   persona_id=asked.persona_id)
        if s is None:
            return None
        found = await compat_view.stored(conn, s, items=items)
    return found if found.detailed is not None else None


async def pending(request: Request, asked: Who) -> Pending:
    """Submit the soldier as the website's search does; Refusal for the rate limit (429 with
    its Retry-After), an id BF4PS cannot register, or a soldier it cannot collect."""
    try:
        sub = await actions.submit_from(request, asked.name, asked.platform.value,
                                        asked.persona_id, None)
    except WebError as exc:
        code = {429: "rateLimited", 404: "notFound"}.get(exc.status, "nameInvalid")
        raise Refusal(exc.status, code, exc.message, exc.headers) from None
    if sub.status == "done":  # nothing to collect, and nothing stored: Battlelog has none
        raise Refusal(404, "notFound", "BF4PS has no statistics of this soldier and none to "
                                       "collect: check the name and platform")
    return Pending(sub, retry_seconds(sub.eta_at), f"/requests/{sub.request_id}")


def retry_seconds(eta_at: datetime | None, now: datetime | None = None) -> int:
    if eta_at is None:
        return DEFAULT_RETRY_SECONDS
    left = (eta_at - (now or datetime.now(UTC))).total_seconds()
    return max(1, math.ceil(left))


def pending_headers(p: Pending, base: str) -> dict[str, str]:
    return {"Retry-After": str(p.retry_after), "Location": f"{base}{p.request_path}",
            "X-BF4PS-Request": str(p.submission.request_id), **CORS}


def fresh_headers(s: Stored) -> dict[str, str]:
    """How fresh what is served is: when the detailed statistics were collected."""
    at = s.collected_at
    if at is None:
        return dict(CORS)
    age = max(0, int((datetime.now(UTC) - at).total_seconds()))
    return {"Last-Modified": format_datetime(at.astimezone(UTC), usegmt=True),
            "X-BF4PS-Collected-At": at.astimezone(UTC).isoformat(),
            "X-BF4PS-Age-Seconds": str(age), **CORS}


def base_url(request: Request) -> str:
    """This website's origin as the client reached it (no trailing slash)."""
    return str(request.base_url).rstrip("/")
