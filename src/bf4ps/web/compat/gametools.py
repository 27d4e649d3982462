"""gametools.network's BF4 player endpoints under /community/gametools (a tool points its base
URL `https://api.gametools.network` there): `/bf4/stats/`, `/bf4/all/`, `/bf4/weapons/`,
`/bf4/vehicles/`, `/bf4/statsarray/`, with or without the trailing slash, by `name` or
`playerid` and `platform`, honouring `format_values` (default true). Errors are that service's
`{"errors": [...]}` body; a soldier not collected yet is submitted and answered 404 with
Retry-After (gametools answers a cold soldier 502/504; BF4PS never answers 5xx for it)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bf4ps.domain import Platform
from bf4ps.views import gametools as gt_view
from bf4ps.views import gametools_lists as lists_view
from bf4ps.views.compat import Stored
from bf4ps.web.compat.common import (
    CORS,
    Refusal,
    Who,
    base_url,
    fresh_headers,
    known,
    parameters,
    pending,
    pending_headers,
    who,
)
from bf4ps.web.state import read_db

PREFIX = "/community/gametools/bf4"
PLATFORMS = {p.value: p for p in Platform}
FALSE_WORDS = frozenset({"false", "0", "no", "off"})


class GametoolsJSON(JSONResponse):
    def render(self, content: Any) -> bytes:
        if isinstance(content, BaseModel):
            return content.model_dump_json().encode()
        return super().render(content)


def errors(status: int, message: str, headers: dict[str, str] | None = None,
           **more: Any) -> Response:
    return GametoolsJSON({"errors": [message], **more}, status, headers={**CORS,
                                                                        **(headers or {})})


def format_values(params: dict[str, str]) -> bool:
    """Default true; false for false, False, 0, no (as Python and JS clients send it)."""
    return params.get("format_values", "true").strip().lower() not in FALSE_WORDS


def asked(params: dict[str, str]) -> Who:
    word = params.get("platform", "pc").lower() or "pc"
    platform = PLATFORMS.get(word)
    if platform is None:
        raise Refusal(422, "platformInvalid",
                      f"platform must be one of {', '.join(PLATFORMS)}")
    return who(platform, params.get("name"), params.get("playerid"))


Make = Callable[[Request, Stored, dict[str, str]], Awaitable[BaseModel]]


async def answer(request: Request, make: Make, *, items: bool = True) -> Response:
    """A known soldier's answer at once; an unknown one submitted and answered not-yet."""
    try:
        params = await parameters(request)
        soldier = asked(params)
        found = await known(request, soldier, items=items)
        if found is not None:
            return GametoolsJSON(await make(request, found, params),
                                 headers=fresh_headers(found))
        wait = await pending(request, soldier)
    except Refusal as exc:
        return errors(exc.status, exc.message, exc.headers)
    base = base_url(request)
    return errors(404, f"{soldier.name or soldier.persona_id} is not collected yet: it was "
                       f"requested, ask again in {wait.retry_after} s",
                  pending_headers(wait, base), request=f"{base}{wait.request_path}",
                  retryAfter=wait.retry_after)


async def _stats(request: Request, s: Stored, params: dict[str, str]) -> BaseModel:
    return gt_view.main_stats(s, base_url(request), format_values(params))


async def _all(request: Request, s: Stored, params: dict[str, str]) -> BaseModel:
    base, fmt = base_url(request), format_values(params)
    return lists_view.all_stats(s, gt_view.main_stats(s, base, fmt), base, fmt)


async def _weapons(request: Request, s: Stored, params: dict[str, str]) -> BaseModel:
    return gt_view.weapons(s, base_url(request), format_values(params))


async def _vehicles(request: Request, s: Stored, params: dict[str, str]) -> BaseModel:
    return gt_view.vehicles(s, base_url(request))


async def _statsarray(request: Request, s: Stored, params: dict[str, str]) -> BaseModel:
    raw = params.get("days", "7") or "7"
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 5) \
            or not 1 <= int(raw) <= lists_view.STATSARRAY_MAX_DAYS:
        raise Refusal(422, "badRequest", "days must be a whole number from 1 to "
                                         f"{lists_view.STATSARRAY_MAX_DAYS}")
    async with read_db(request) as conn:
        return await lists_view.stats_array(conn, s.soldier, int(raw))


async def stats(request: Request) -> Response:
    return await answer(request, _stats, items=False)


async def all_(request: Request) -> Response:
    return await answer(request, _all)


async def weapons(request: Request) -> Response:
    return await answer(request, _weapons)


async def vehicles(request: Request) -> Response:
    return await answer(request, _vehicles)


async def statsarray(request: Request) -> Response:
    return await answer(request, _statsarray, items=False)


ENDPOINTS = {"stats": stats, "all": all_, "weapons": weapons, "vehicles": vehicles,
             "statsarray": statsarray}
ROUTES = [Route(f"{PREFIX}/{name}{slash}", endpoint, methods=["GET"])
          for name, endpoint in ENDPOINTS.items() for slash in ("/", "")]
