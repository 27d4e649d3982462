"""The public JSON API (search, submit, request status, soldier data), /healthz and /metrics, on
FastAPI: parameters and bodies are validated against the read side's types (bf4ps.views), and
/openapi.json is generated from the same types. Every refusal has web/errors.py's body."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar
from uuid import UUID

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel

from bf4ps import policy as policy_mod
from bf4ps.db.connect import Conn
from bf4ps.db.queries import execute
from bf4ps.domain import Platform
from bf4ps.interactive.inputs import InputError
from bf4ps.views import gains_board as gains_board_view
from bf4ps.views import last_session as last_session_view
from bf4ps.views import request_status as requests_view
from bf4ps.views import search as search_view
from bf4ps.views import soldier as soldier_view
from bf4ps.views import soldier_page
from bf4ps.views.fields import PersonaParam, PlatformName
from bf4ps.views.gains_board import GainsBoard, GainsBoardKind
from bf4ps.views.request_status import RequestStatus, SubmissionView, SubmitRequest
from bf4ps.views.search import SearchResult
from bf4ps.web import actions, replica
from bf4ps.web.errors import ErrorBody, WebError, from_input
from bf4ps.web.state import db, read_db, state_of

R = TypeVar("R")
WORDS = {400: "Malformed request", 401: "Credentials required", 403: "Forbidden",
         404: "Not found", 413: "Body too large", 415: "Body is not JSON",
         422: "Invalid input", 429: "Rate limited", 503: "Database unavailable"}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The documented refusals of an operation (each with the one error body)."""
    return {c: {"model": ErrorBody, "description": WORDS[c]} for c in (*codes, 503)}


async def single_values(request: Request) -> None:
    """A query parameter given twice is refused (FastAPI would take the last one)."""
    for name in request.query_params:
        if len(request.query_params.getlist(name)) > 1:
            raise WebError(400, f"parameter {name[:40]!r} given more than once", field=name[:40])


async def json_body(request: Request) -> None:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/json":
        raise WebError(415, "send the body as application/json")


router = APIRouter(dependencies=[Depends(single_values)], responses=errors(400))


class ApiJSON(JSONResponse):
    """A model's JSON (datetimes as RFC 3339, UUIDs as text, NaN and infinities as null)."""

    def render(self, content: Any) -> bytes:
        if isinstance(content, BaseModel):
            return content.model_dump_json().encode()
        return super().render(content)


@router.get("/api/search", responses=errors(400, 422))
async def search(
        request: Request,
        q: Annotated[str, Query(min_length=1, max_length=300,
                                description="A soldier name (prefix) or Battlelog soldier URL")],
        platform: Annotated[PlatformName | None, Query()] = None,
        limit: Annotated[int, Query(ge=1, le=50, description="Soldiers per page")] = 20,
        page: Annotated[int, Query(ge=1, le=50, description="Page of the matches")] = 1,
) -> SearchResult:
    """Known soldiers by name prefix (current or former names) or by Battlelog URL."""
    try:
        async with read_db(request) as conn:
            return await search_view.search(conn, q, platform, page, limit)
    except InputError as exc:
        raise from_input(exc) from None


@router.post("/api/requests", status_code=202, dependencies=[Depends(json_body)],
             response_model=SubmissionView, responses=errors(400, 404, 413, 415, 422, 429))
async def submit_request(request: Request, body: SubmitRequest) -> Response:
    """Ask for a fresh collection (coalesced into interactive work); never a synchronous
    Battlelog call."""
    sub = await actions.submit_from(request, body.name, body.platform, body.persona_id,
                                    body.url)
    async with db(request) as conn:
        view = await requests_view.submission(conn, sub, state_of(request).gate)
    return ApiJSON(view, 202, headers={"Location": view.api_url})



@router.get("/api/requests/{request_id}", responses=errors(404, 422))
async def get_request(request: Request, request_id: UUID) -> RequestStatus:
    """Where a request stands: position, estimate, per-step progress."""
    async with db(request) as conn:
        policy = await policy_mod.load(conn)
        st = await requests_view.request_status(conn, request_id, state_of(request).gate,
                                                policy.interactive_min_age_seconds)
    if st is None:
        raise WebError(404, "no such request")
    return st


PlatformPath = Annotated[PlatformName, Path(description="Platform")]
PersonaPath = Annotated[PersonaParam, Path(description="Battlelog persona id")]


async def _soldier(request: Request, conn: Conn, platform: Platform,
                   persona_id: int) -> soldier_view.Soldier:
    found = await soldier_view.find(conn, platform, persona_id)
    if found is None:
        replica.missing(request.scope)
        raise WebError(404, "this soldier is not known here yet: submit it by name or by its "
                            "Battlelog URL to collect it")
    return found


async def _of_soldier(request: Request, platform: Platform, persona_id: int,
                      read: Callable[[Conn, soldier_view.Soldier], Awaitable[R]]) -> R:
    """One read of a known soldier (404 for one not known here)."""
    async with read_db(request) as conn:
        return await read(conn, await _soldier(request, conn, platform, persona_id))


@router.get("/api/soldiers/{platform}/{persona_id}", responses=errors(404, 422))
async def soldier_overview(request: Request, platform: PlatformPath,
                           persona_id: PersonaPath) -> soldier_view.Overview:
    """A soldier's headline stats and the freshness of each resource."""
    return await _of_soldier(request, platform, persona_id, soldier_view.overview)


@router.get("/api/soldiers/{platform}/{persona_id}/weapons", responses=errors(404, 422))
async def soldier_weapons(request: Request, platform: PlatformPath,
                          persona_id: PersonaPath) -> soldier_page.Weapons:
    """A soldier's weapons, most kills first."""
    return await _of_soldier(request, platform, persona_id, soldier_page.weapons)


@router.get("/api/soldiers/{platform}/{persona_id}/vehicles", responses=errors(404, 422))
async def soldier_vehicles(request: Request, platform: PlatformPath,
                           persona_id: PersonaPath) -> soldier_page.Vehicles:
    """A soldier's vehicles, most kills first."""
    return await _of_soldier(request, platform, persona_id, soldier_page.vehicles)


@router.get("/api/soldiers/{platform}/{persona_id}/history", responses=errors(400, 404, 422))
async def soldier_history(
        request: Request, platform: PlatformPath, persona_id: PersonaPath,
        limit: Annotated[int, Query(ge=1, le=500, description="Collections, newest")] = 100,
) -> soldier_page.History:
    """Detailed-stats snapshots, a point per collection (oldest first)."""
    return await _of_soldier(request, platform, persona_id,
                             lambda conn, s: soldier_page.history(conn, s, limit))


@router.get("/api/soldiers/{platform}/{persona_id}/last-session", responses=errors(404, 422))
async def soldier_last_session(request: Request, platform: PlatformPath,
                               persona_id: PersonaPath) -> last_session_view.LastSession:
    """The soldier's last play session (server, when, how long) and what it gained between
    the detailed snapshots that bracket it; `closing` says whether the one after is in."""
    return await _of_soldier(request, platform, persona_id, last_session_view.last_session)


@router.get("/api/soldiers/{platform}/{persona_id}/progress", responses=errors(404, 422))
async def soldier_progress(request: Request, platform: PlatformPath,
                           persona_id: PersonaPath) -> soldier_page.SoldierProgress:
    """A soldier's gains: since the last collection, over 24 h / 7 d / 30 d, between recent
    collections (flagged and reset intervals marked), per weapon and vehicle over 7 days; and
    his rank, game modes, completion bars and linked soldiers."""
    return await _of_soldier(request, platform, persona_id, soldier_page.progress)


@router.get("/api/leaderboards/week", responses=errors(404, 422))
async def gains_board(
        request: Request,
        platform: Annotated[PlatformName, Query()] = Platform.PC,
        by: Annotated[GainsBoardKind, Query(description="What the board ranks")] =
        GainsBoardKind.KPM,
        item: Annotated[int | None, Query(ge=1, le=2**31 - 1, description=(
            "A weapon or vehicle id (by=weapon|vehicle; default: the one with most "
            "soldiers)"))] = None,
        page: Annotated[int, Query(ge=1, le=400)] = 1,
) -> GainsBoard:
    """This week's gains leaderboard: flagged soldiers left out, a minimum time in the week,
    rates smoothed toward the population average."""
    async with read_db(request) as conn:
        policy = await policy_mod.load(conn)
        return await gains_board_view.board(conn, policy, by, platform, item, page)


class Health(BaseModel):
    status: str  # ok | down
    database: str


@router.get("/healthz", response_model=Health,
            responses={503: {"model": Health, "description": "Database down"}})
async def healthz(request: Request) -> Response:
    """Is the database reachable?"""
    web = state_of(request)
    try:
        if web.pool is None:
            raise RuntimeError("no pool")
        async with web.pool.connection(timeout=3) as conn:
            await execute(conn, "web_ping")
    except Exception as exc:  # any failure to reach the database is "down"
        return ApiJSON(Health(status="down", database=str(exc)[:200]), 503)
    return ApiJSON(Health(status="ok", database="ok"))


@router.get("/metrics", response_class=PlainTextResponse,
            responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}},
                             "description": "Prometheus exposition"},
                       401: {"model": ErrorBody, "description": "Bearer token missing or wrong"},
                       403: {"model": ErrorBody, "description": "No BF4PS_METRICS_TOKEN set "
                             "and not a scraper on the website's own host"},
                       **errors()})
async def metrics(request: Request) -> Response:
    """Prometheus metrics: a bearer token (BF4PS_METRICS_TOKEN), or without one set, only a
    scraper on the website's own host (docs/operations.md, Monitoring)."""
    web = state_of(request)
    web.metrics_auth.check(request)
    async with db(request) as conn:
        body = await web.metrics.render(conn, web.reads.families() if web.reads else ())
    return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")
