"""The operator console's pages (/ops, /ops/events) and its CSRF-checked drain/resume forms, all
behind ops authentication. Their JSON is web/api_ops.py's."""

from __future__ import annotations

import re
from dataclasses import asdict

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from bf4ps.domain import JobKind
from bf4ps.events.log import EVENT_TYPE_NAMES
from bf4ps.views import backtest, console, events, fleet_history
from bf4ps.views import flags as flags_view
from bf4ps.views.events import WINDOWS, Event, EventQuery
from bf4ps.views.fields import COLLECTOR_PATTERN
from bf4ps.web.api_ops import clear_flag, control
from bf4ps.web.errors import WebError, from_validation
from bf4ps.web.params import form, form_text
from bf4ps.web.security import CSRF_FIELD
from bf4ps.web.state import db, read_db, render, state_of

RESOURCES = tuple(sorted(kind.value for kind in JobKind))  # the event filter's choices
COLLECTOR = re.compile(COLLECTOR_PATTERN)


async def operator(request: Request) -> str:
    return await state_of(request).ops.check(request)


def event_query(request: Request) -> EventQuery:
    """The search form's filters (an empty field is no filter), as the API validates them."""
    raw = {k: v.strip() for k, v in request.query_params.items() if v.strip()}
    try:
        return EventQuery.model_validate(raw)
    except ValidationError as exc:
        raise from_validation(exc.errors(), "query") from None


async def console_page(request: Request) -> Response:
    await operator(request)
    async with db(request) as conn:
        data = await console.status(conn)
        flagged = await flags_view.flags(conn, limit=50)
        tested = await backtest.last(conn)
    async with read_db(request) as conn:  # the charts may be a replica's (a few seconds old)
        charts = await fleet_history.read(conn)
    return render(request, "ops.html", {"ops": data, "history": asdict(charts),
                                        "flags": flagged, "backtest": tested})


async def events_page(request: Request) -> Response:
    await operator(request)
    error = None
    rows: list[Event] = []
    filters = ""
    try:
        eq = event_query(request).filter()
        filters = eq.describe().split(", since")[0]  # the window is shown in the form
        async with db(request) as conn:
            rows = await events.search(conn, eq)
    except WebError as exc:
        if exc.status != 422:
            raise
        error = exc.message
    return render(request, "ops_events.html", {
        "events": rows, "error": error, "windows": list(WINDOWS),
        "event_types": EVENT_TYPE_NAMES, "resources": RESOURCES,
        "form": dict(request.query_params), "filters": filters},
        status=422 if error else 200)


async def control_form(request: Request) -> Response:
    who = await operator(request)
    data = await form(request)
    state_of(request).csrf.check(request, data.get(CSRF_FIELD))
    name, action = str(request.path_params["name"]), str(request.path_params["action"])
    if action not in ("drain", "resume"):
        raise WebError(404, "actions are drain and resume")
    if len(name) > 63 or not COLLECTOR.fullmatch(name):
        raise WebError(404, "no such collector")
    await control(request, name, action, form_text(data, "reason", 200), who)
    return RedirectResponse("/ops", 303)


async def clear_flag_form(request: Request) -> Response:
    who = await operator(request)
    data = await form(request)
    state_of(request).csrf.check(request, data.get(CSRF_FIELD))
    raw = str(request.path_params["flag_id"])
    if not raw.isdigit() or not 0 < int(raw) < 2**62:
        raise WebError(404, "no such flag")
    await clear_flag(request, int(raw), form_text(data, "note", 500), who)
    return RedirectResponse("/ops#flags", 303)


ROUTES = [
    Route("/ops", console_page, methods=["GET"]),
    Route("/ops/events", events_page, methods=["GET"]),
    Route("/ops/collectors/{name}/{action}", control_form, methods=["POST"]),
    Route("/ops/flags/{flag_id}/clear", clear_flag_form, methods=["POST"]),
]
