"""The operator console's JSON API (/api/ops/*), behind ops authentication: the console's
figures (bf4ps.views.console), the event-log search and drain/resume (JSON bodies, which a
cross-site form cannot send)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal, get_type_hints

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.security import HTTPBasic, HTTPBasicCredentials
from pydantic import BaseModel, ConfigDict

from bf4ps.db.connect import Conn
from bf4ps.fleet.collectors import ControlError, act
from bf4ps.stats import progress_flags
from bf4ps.views import console, fleet_history
from bf4ps.views import events as events_view
from bf4ps.views import flags as flags_view
from bf4ps.views.events import EventQuery, Events
from bf4ps.views.fields import COLLECTOR_PATTERN, Reason
from bf4ps.web.api import errors, json_body, single_values
from bf4ps.web.errors import WebError
from bf4ps.web.state import db, read_db, state_of

BASIC = HTTPBasic(auto_error=False, description="The operator's credentials "
                                                "(BF4PS_OPS_USERNAME, BF4PS_OPS_PASSWORD)")


async def operator(request: Request,
             _: Annotated[HTTPBasicCredentials | None, Depends(BASIC)] = None) -> str:
    """The operator's name; 403 when the console is not configured, 401 without valid
    credentials (checked in constant time by web/security.py), 429 while locked out after
    failed logins."""
    return await state_of(request).ops.check(request)


Operator = Annotated[str, Depends(operator)]
router = APIRouter(prefix="/api/ops", dependencies=[Depends(operator), Depends(single_values)],
                   responses=errors(400, 401, 403, 429))


def _figure(path: str, read: Callable[[Conn], Awaitable[object]]) -> None:
    """GET /api/ops/<path>: one of the console's figures, documented by `read`'s return type
    and summarized by its docstring's first line. The charts' history may be read on the read
    replica; the live figures are the primary's."""
    connect = read_db if path in REPLICA_FIGURES else db

    async def endpoint(request: Request) -> Any:
        async with connect(request) as conn:
            return await read(conn)

    router.add_api_route(path, endpoint, methods=["GET"], name=f"ops_{path.strip('/')}",
                         response_model=get_type_hints(read)["return"],
                         summary=(read.__doc__ or path).splitlines()[0].rstrip("."))


REPLICA_FIGURES = {"/history"}
for _path, _read in (("/status", console.status), ("/fleet", console.fleet),
                     ("/queue", console.queue), ("/coverage", console.coverage),
                     ("/budget", console.budget), ("/throttles", console.throttles),
                     ("/circuits", console.open_circuits), ("/history", fleet_history.read)):
    _figure(_path, _read)


@router.get("/events", responses=errors(400, 422))
async def events(request: Request, _: Operator,
                 query: Annotated[EventQuery, Query()]) -> Events:
    """Search the event log (newest first, within a time window)."""
    async with db(request) as conn:
        return Events(events=await events_view.search(conn, query.filter()))


class ControlBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: Reason | None = None


class Controlled(BaseModel):
    collector: str
    action: Literal["drain", "resume"]
    enabled: bool
    drained: bool


async def control(request: Request, name: str, action: str, reason: str | None,
                  who: str) -> Controlled:
    """Drain or resume collector `name` (404 when there is none), as the console's forms do."""
    try:
        async with db(request) as conn:
            row = await act(conn, action, name, reason=(reason or f"{action} by {who}")[:200])
    except ControlError as exc:
        raise WebError(404, str(exc)) from None
    return Controlled(collector=row.collector_name, action=action,
                      enabled=row.enabled, drained=row.drained)


@router.post("/collectors/{name}/{action}", dependencies=[Depends(json_body)],
             responses=errors(400, 404, 413, 415, 422))
async def control_api(
        request: Request, who: Operator,
        name: Annotated[str, Path(pattern=COLLECTOR_PATTERN, max_length=63)],
        action: Annotated[Literal["drain", "resume"], Path()],
        body: ControlBody | None = None) -> Controlled:
    """Drain or resume a collector."""
    return await control(request, name, action, body.reason if body else None, who)


@router.get("/flags", responses=errors(400, 422))
async def flags(request: Request, _: Operator,
                all: Annotated[bool, Query(description="Cleared flags too")] = False,
                ) -> flags_view.Flags:
    """Progress flags: intervals over the policy ceilings, their soldiers off every board."""
    async with db(request) as conn:
        return await flags_view.flags(conn, include_cleared=all)


class ClearBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    note: Reason | None = None


class FlagCleared(BaseModel):
    flag_id: int
    soldier_id: int
    cleared_by: str


async def clear_flag(request: Request, flag_id: int, note: str | None,
                     who: str) -> FlagCleared:
    """Clear an open flag (404 when there is none), as the console's form does."""
    try:
        async with db(request) as conn:
            done = await progress_flags.clear(conn, flag_id, by=f"ops:{who}",
                                              note=note)
    except progress_flags.FlagNotOpen as exc:
        raise WebError(404, str(exc)) from None
    return FlagCleared(flag_id=done.flag_id, soldier_id=done.soldier_id,
                       cleared_by=f"ops:{who}")


@router.post("/flags/{flag_id}/clear", dependencies=[Depends(json_body)],
             responses=errors(400, 404, 413, 415, 422))
async def clear_flag_api(request: Request, who: Operator,
                         flag_id: Annotated[int, Path(ge=1, le=2**62)],
                         body: ClearBody | None = None) -> FlagCleared:
    """Clear a progress flag: its soldier is back on the boards once none is left open."""
    return await clear_flag(request, flag_id, body.note if body else None, who)
