"""The operator console (/ops) and its JSON API (/api/ops/*), all behind ops authentication;
drain/resume are POSTs (CSRF-checked forms, or JSON bodies that a cross-site form cannot send)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from bf4ps.db.connect import Conn
from bf4ps.domain import Resource
from bf4ps.eventlog import EventFilter
from bf4ps.queue.events import EVENT_TYPE_NAMES
from bf4ps.registry.actions import ControlError, act
from bf4ps.web import ops_view
from bf4ps.web.errors import WebError
from bf4ps.web.params import form, form_text, int_query, json_object, platform_query, query
from bf4ps.web.routes_api import ApiJSON
from bf4ps.web.security import CSRF_FIELD
from bf4ps.web.state import db, render, state_of

COLLECTOR_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
ACTIONS = ("drain", "resume")
RESOURCES = frozenset([*(r.value for r in Resource), "lookup"])
WINDOWS = {"15m": 900, "1h": 3600, "6h": 21600, "24h": 86400, "7d": 604800, "30d": 2592000,
           "180d": 15552000}


def operator(request: Request) -> str:
    return state_of(request).ops.check(request)


def _time(request: Request, name: str) -> datetime | None:
    raw = query(request, name, max_len=40)
    if raw is None:
        return None
    try:
        when = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise WebError(422, f"parameter {name!r} must be an ISO 8601 time", field=name) from None
    if not 2000 <= when.year <= 2100:
        raise WebError(422, f"parameter {name!r} must be between 2000 and 2100", field=name)
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).astimezone(UTC)


SOLDIER_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def event_query(request: Request) -> EventFilter:
    """The event-log search's filters, each validated; a time window always applies."""
    now = datetime.now(UTC)
    window = query(request, "window", max_len=5) or "24h"
    if window not in WINDOWS:
        raise WebError(422, "window must be one of " + ", ".join(WINDOWS), field="window")
    until = _time(request, "until") or now + timedelta(seconds=1)
    since = _time(request, "since") or until - timedelta(seconds=WINDOWS[window])
    persona = query(request, "persona_id", max_len=20)
    collector = query(request, "collector", max_len=63)
    if collector is not None and not COLLECTOR_NAME.match(collector):
        raise WebError(422, "collector names are letters, digits, '.', '_', '-'",
                       field="collector")
    resource = query(request, "resource", max_len=20)
    if resource is not None and resource not in RESOURCES:
        raise WebError(422, "resource must be one of " + ", ".join(sorted(RESOURCES)),
                       field="resource")
    kind = query(request, "type", max_len=41)
    if kind is not None and kind not in EVENT_TYPE_NAMES:
        raise WebError(422, "unknown event type", field="type")
    platform = platform_query(request)
    name = query(request, "name", max_len=64)
    if name is not None and not SOLDIER_NAME.match(name):
        raise WebError(422, "soldier names are letters, digits, '.', '_', '-'", field="name")
    return EventFilter(since=since, until=until, persona_id=_persona(persona), name=name,
                      platform=platform.value if platform else None, collector=collector,
                      resource=resource, event_type=kind,
                      limit=int_query(request, "limit", default=100, lo=1, hi=500))


def _persona(raw: str | None) -> int | None:
    if raw is None:
        return None
    if not (raw.isascii() and raw.isdigit() and 0 < int(raw) < 2**63):
        raise WebError(422, "persona_id must be a positive integer", field="persona_id")
    return int(raw)


async def _control(request: Request, action: str, reason: str | None) -> dict[str, Any]:
    name = str(request.path_params["name"])
    if action not in ACTIONS:
        raise WebError(404, "actions are drain and resume")
    if not COLLECTOR_NAME.match(name):
        raise WebError(404, "no such collector")
    who = operator(request)
    try:
        async with db(request) as conn:
            row = await act(conn, action, name, reason=(reason or f"{action} by {who}")[:200])
    except ControlError as exc:
        raise WebError(404, str(exc)) from None
    return {"collector": row["collector_name"], "action": action,
            "enabled": row["enabled"], "drained": row["drained"]}


# ---------------------------------------------------------------- pages
async def console(request: Request) -> Response:
    operator(request)
    async with db(request) as conn:
        data = await ops_view.status(conn)
        charts = await ops_view.history(conn)
    return render(request, "ops.html", {"ops": data, "history": charts})


async def events_page(request: Request) -> Response:
    operator(request)
    error = None
    rows: list[dict[str, Any]] = []
    filters = ""
    try:
        eq = event_query(request)
        filters = eq.describe().split(", since")[0]  # the window is shown in the form
        async with db(request) as conn:
            rows = await ops_view.events(conn, eq)
    except WebError as exc:
        if exc.status != 422:
            raise
        error = exc.message
    return render(request, "ops_events.html", {
        "events": rows, "error": error, "windows": list(WINDOWS),
        "event_types": EVENT_TYPE_NAMES, "resources": sorted(RESOURCES),
        "form": dict(request.query_params), "filters": filters},
        status=422 if error else 200)


async def control_form(request: Request) -> Response:
    operator(request)
    data = await form(request)
    state_of(request).csrf.check(request, data.get(CSRF_FIELD))
    await _control(request, str(request.path_params["action"]), form_text(data, "reason", 200))
    return RedirectResponse("/ops", 303)


# ---------------------------------------------------------------- JSON
def _api_view(read: Callable[[Conn], Awaitable[Any]], key: str | None = None
              ) -> Callable[[Request], Awaitable[Response]]:
    """A read-only operator endpoint: one figure of ops_view as JSON (under `key` if given)."""
    async def endpoint(request: Request) -> Response:
        operator(request)
        async with db(request) as conn:
            data = await read(conn)
        return ApiJSON({key: data} if key else data)

    return endpoint


api_status = _api_view(ops_view.status)
api_fleet = _api_view(ops_view.fleet, "collectors")
api_queue = _api_view(ops_view.queue)
api_coverage = _api_view(ops_view.coverage)
api_budget = _api_view(ops_view.budget)
api_throttles = _api_view(ops_view.throttles, "throttles")
api_circuits = _api_view(ops_view.circuits, "circuits")
api_history = _api_view(ops_view.history)


async def api_events(request: Request) -> Response:
    operator(request)
    eq = event_query(request)
    async with db(request) as conn:
        return ApiJSON({"events": await ops_view.events(conn, eq)})


async def api_control(request: Request) -> Response:
    operator(request)
    body = await json_object(request, frozenset({"reason"}))
    reason = body.get("reason")
    if reason is not None and (not isinstance(reason, str) or len(reason) > 200
                               or "\x00" in reason):
        raise WebError(422, "reason must be text of at most 200 characters", field="reason")
    return ApiJSON(await _control(request, str(request.path_params["action"]), reason))


ROUTES = [
    Route("/ops", console, methods=["GET"]),
    Route("/ops/events", events_page, methods=["GET"]),
    Route("/ops/collectors/{name}/{action}", control_form, methods=["POST"]),
    Route("/api/ops/status", api_status, methods=["GET"]),
    Route("/api/ops/fleet", api_fleet, methods=["GET"]),
    Route("/api/ops/queue", api_queue, methods=["GET"]),
    Route("/api/ops/coverage", api_coverage, methods=["GET"]),
    Route("/api/ops/budget", api_budget, methods=["GET"]),
    Route("/api/ops/throttles", api_throttles, methods=["GET"]),
    Route("/api/ops/circuits", api_circuits, methods=["GET"]),
    Route("/api/ops/history", api_history, methods=["GET"]),
    Route("/api/ops/events", api_events, methods=["GET"]),
    Route("/api/ops/collectors/{name}/{action}", api_control, methods=["POST"]),
]
