"""The public JSON API (search, submit, request status, soldier data), /healthz, /metrics and
/openapi.json."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bf4ps import policy as policy_mod
from bf4ps.db.connect import Conn
from bf4ps.db.queries import q
from bf4ps.interactive.inputs import InputError
from bf4ps.interactive.status import request_status
from bf4ps.web import actions, openapi, soldier_view
from bf4ps.web.errors import WebError, from_input
from bf4ps.web.params import int_query, json_object, platform_query, query, soldier_path, uuid_path
from bf4ps.web.soldier_view import Soldier
from bf4ps.web.state import db, state_of

SUBMIT_FIELDS = frozenset({"name", "platform", "persona_id", "url"})


def _default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


class ApiJSON(JSONResponse):
    """orjson: datetimes as RFC 3339, UUIDs as text, NaN and infinities as null."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, default=_default)


async def search(request: Request) -> Response:
    text = query(request, "q", max_len=300)
    if text is None:
        raise WebError(422, "parameter 'q' is required: a soldier name or Battlelog URL",
                       field="q")
    platform = platform_query(request)
    limit = int_query(request, "limit", default=20, lo=1, hi=50)
    page = int_query(request, "page", default=1, lo=1, hi=50)
    try:
        async with db(request) as conn:
            return ApiJSON(await actions.search(conn, text, platform, page, limit))
    except InputError as exc:
        raise from_input(exc) from None


async def submit_request(request: Request) -> Response:
    body = await json_object(request, SUBMIT_FIELDS)
    sub = await actions.submit_from(request, body)
    return ApiJSON(actions.submission_dict(sub), 202,
                   headers={"Location": f"/api/requests/{sub.request_id}"})


async def get_request(request: Request) -> Response:
    request_id = uuid_path(request)
    async with db(request) as conn:
        policy = await policy_mod.load(conn)
        st = await request_status(conn, request_id, state_of(request).gate,
                                  policy.interactive_min_age_seconds)
    if st is None:
        raise WebError(404, "no such request")
    return ApiJSON(st.as_dict())


async def _soldier(request: Request, conn: Conn) -> Soldier:
    platform, persona_id = soldier_path(request)
    found = await soldier_view.find(conn, platform, persona_id)
    if found is None:
        raise WebError(404, "this soldier is not known here yet: submit it by name or by its "
                            "Battlelog URL to collect it")
    return found


async def soldier_overview(request: Request) -> Response:
    async with db(request) as conn:
        s = await _soldier(request, conn)
        return ApiJSON(await soldier_view.overview(conn, s))


async def soldier_weapons(request: Request) -> Response:
    async with db(request) as conn:
        s = await _soldier(request, conn)
        return ApiJSON({"soldier": soldier_view.soldier_dict(s),
                        "weapons": await soldier_view.weapons(conn, s)})


async def soldier_vehicles(request: Request) -> Response:
    async with db(request) as conn:
        s = await _soldier(request, conn)
        return ApiJSON({"soldier": soldier_view.soldier_dict(s),
                        "vehicles": await soldier_view.vehicles(conn, s)})


async def soldier_history(request: Request) -> Response:
    limit = int_query(request, "limit", default=100, lo=1, hi=500)
    async with db(request) as conn:
        s = await _soldier(request, conn)
        return ApiJSON({"soldier": soldier_view.soldier_dict(s),
                        "history": await soldier_view.history(conn, s, limit)})


async def healthz(request: Request) -> Response:
    web = state_of(request)
    try:
        if web.pool is None:
            raise RuntimeError("no pool")
        async with web.pool.connection(timeout=3) as conn:
            await conn.execute(q("web_ping"))
    except Exception as exc:  # any failure to reach the database is "down"
        return JSONResponse({"status": "down", "database": str(exc)[:200]}, 503)
    return JSONResponse({"status": "ok", "database": "ok"})


async def metrics(request: Request) -> Response:
    state_of(request).metrics_auth.check(request)
    async with db(request) as conn:
        body = await state_of(request).metrics.render(conn)
    return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")


async def openapi_json(request: Request) -> Response:
    return JSONResponse(openapi.document())


ROUTES = [
    Route("/api/search", search, methods=["GET"]),
    Route("/api/requests", submit_request, methods=["POST"]),
    Route("/api/requests/{request_id}", get_request, methods=["GET"]),
    Route("/api/soldiers/{platform}/{persona_id}", soldier_overview, methods=["GET"]),
    Route("/api/soldiers/{platform}/{persona_id}/weapons", soldier_weapons, methods=["GET"]),
    Route("/api/soldiers/{platform}/{persona_id}/vehicles", soldier_vehicles, methods=["GET"]),
    Route("/api/soldiers/{platform}/{persona_id}/history", soldier_history, methods=["GET"]),
    Route("/healthz", healthz, methods=["GET"]),
    Route("/metrics", metrics, methods=["GET"]),
    Route("/openapi.json", openapi_json, methods=["GET"]),
]
