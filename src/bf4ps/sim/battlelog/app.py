"""The ASGI app: Battlelog's routes, the simulator's control routes under /__sim/.

Every request outside /__sim/ is counted (at arrival, before any latency) and judged by the
per-IP limiter, then answered: throttled, a fault, an unknown persona, or the real-shaped payload
after a realistic latency.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bf4ps.battlelog.endpoints import SESSION_COOKIE
from bf4ps.sim.battlelog import templates
from bf4ps.sim.battlelog.career import is_unknown
from bf4ps.sim.battlelog.config import ConfigError, SimConfig
from bf4ps.sim.battlelog.distort import (
    LOGIN_REDIRECT,
    LOGIN_URL,
    OTHER_ENDPOINT,
    RETRY_AFTER,
    REWRITES,
    distorted,
)
from bf4ps.sim.battlelog.faults import (
    BAD_CHECK_SUM,
    BAD_PLATFORM,
    EMPTY_SEARCH,
    GATEWAY_TIMEOUT,
    HTML,
    HTML_ERROR,
    JSON,
    LOGIN_WALL,
    NOT_FOUND,
    SOFT_NULL,
    STATS_MISSING,
    THROTTLE,
    TYPE_ERROR,
    UNKNOWN_PERSONA,
    Answer,
    unknown_error,
)
from bf4ps.sim.battlelog.limiter import Verdict
from bf4ps.sim.battlelog.payloads import ok_body
from bf4ps.sim.battlelog.state import (
    PERSONA_RESOURCES,
    PLATFORM_NUMBERS,
    Call,
    SimState,
    parse_call,
)


def _judge(sim: SimState, call: Call, verdict: Verdict) -> tuple[str, Answer | None]:
    """The outcome of a request; an Answer for the ones that need no payload."""
    if call.resource == "unknown":
        return "not_found", NOT_FOUND
    mode = sim.config.throttle_status
    if verdict.throttled and mode != "none":
        return ("throttled" if verdict.violation else "penalty"), THROTTLE[mode]
    if sim.walled(call, call.session_id):
        return "login_wall", EMPTY_SEARCH if call.resource == "search" else LOGIN_WALL
    if call.resource == "search" and (refused := _refused_search(sim, call)) is not None:
        return refused
    if call.resource in PERSONA_RESOURCES:
        persona_id, platform_int = call.ids
        if platform_int not in PLATFORM_NUMBERS:
            return "unknown_persona", BAD_PLATFORM
        if is_unknown(persona_id):
            return "unknown_persona", UNKNOWN_PERSONA
    fault = sim.faults.draw(call.resource)
    return fault or "ok", _fault_answer(sim, fault)


_FIXED = {"html_error": HTML_ERROR, "type_error": TYPE_ERROR, "unknown_persona": UNKNOWN_PERSONA,
          "login_redirect": LOGIN_REDIRECT, "retry_after": RETRY_AFTER}


def _fault_answer(sim: SimState, fault: str | None) -> Answer | None:
    """The answer of a drawn fault; None for a payload (zeros, decrease: distorted later)."""
    if fault == "server_error":
        return sim.faults.server_error()
    if fault in _FIXED:
        return _FIXED[fault]
    if fault == "unknown_error":
        return unknown_error(sim.config.unknown_error_message)
    if fault == "soft_throttle":
        return SOFT_NULL if sim.faults.coin(0.5) else STATS_MISSING
    return None


def _refused_search(sim: SimState, call: Call) -> tuple[str, Answer] | None:
    """A search not answered as asked: a stale check-sum, or an empty list that lies."""
    if sim.refuses_search(call):
        return "bad_check_sum", BAD_CHECK_SUM
    if sim.search_lies():
        return "empty_search", EMPTY_SEARCH
    return None



async def _disconnect(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _hold(request: Request, seconds: float) -> None:
    """Hold a timed-out request; end early when the client gives up or the server stops."""
    sim: SimState = request.app.state.sim
    tasks = {
        asyncio.ensure_future(asyncio.sleep(seconds)),
        asyncio.ensure_future(_disconnect(request)),
        asyncio.ensure_future(sim.stopping.wait()),
    }
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task


async def _search_call(request: Request) -> Call:
    """The search's query and post-check-sum (a POST form, or a GET's query string)."""
    if request.method == "POST":
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
    else:
        form = parse_qs(request.url.query)
    return Call("search", query=form.get("query", [""])[0],
                check_sum=form.get("post-check-sum", [None])[0])


async def battlelog(request: Request) -> Response:
    arrival = time.monotonic()
    sim: SimState = request.app.state.sim
    call = parse_call(request.url.path)
    if call.resource == "search":
        call = await _search_call(request)
    call = replace(call, session_id=request.cookies.get(SESSION_COOKIE))
    ip = request.client.host if request.client else "unknown"
    verdict = sim.limiter.check(ip, arrival)
    outcome, answer = _judge(sim, call, verdict)
    sim.stats.record(ip, call.resource, outcome, verdict, time.time())
    if outcome in ("throttled", "penalty") and answer is not None:
        return Response(answer.body, answer.status, media_type=answer.media_type)
    if outcome == "timeout":
        await _hold(request, sim.faults.timeout_hold())
        return Response(GATEWAY_TIMEOUT.body, GATEWAY_TIMEOUT.status, media_type=HTML)
    if answer is None:
        answer = _payload(sim, call, outcome)
        if call.resource == "search":
            sim.answered_search(answer.body)
    await asyncio.sleep(sim.faults.latency(call.resource))
    if call.resource == "index":
        return _start_page(sim, request, answer)
    return Response(answer.body, answer.status, media_type=answer.media_type,
                    headers=_fault_headers(sim, ip, outcome))


def _payload(sim: SimState, call: Call, outcome: str) -> Answer:
    """The resource's answer, distorted as the outcome says (distort.py)."""
    if outcome == "other_endpoint":
        return ok_body(sim, replace(call, resource=OTHER_ENDPOINT[call.resource]))
    answer = ok_body(sim, call, missing_general=outcome == "missing_general")
    if outcome in REWRITES:
        answer = replace(answer, body=distorted(answer.body, outcome, call.resource))
    return answer


def _fault_headers(sim: SimState, ip: str, outcome: str) -> dict[str, str] | None:
    if outcome == "login_redirect":
        return {"location": LOGIN_URL}
    if outcome == "retry_after":
        seconds = sim.config.retry_after_seconds
        sim.stats.asked_to_wait(ip, time.time() + seconds)
        return {"retry-after": str(seconds)}
    return None


def _start_page(sim: SimState, request: Request, answer: Answer) -> Response:
    """The start page: after `session_redirects` cookie-setting redirects, the page and its
    session cookie."""
    hop = int(request.query_params.get("hop", "0") or 0)
    if hop < sim.config.session_redirects:
        moved = Response(b"", 302, headers={"location": f"/bf4/?hop={hop + 1}"})
        moved.set_cookie(f"bm_hop{hop}", "1", httponly=True)
        return moved
    response = Response(answer.body, answer.status, media_type=answer.media_type)
    response.set_cookie(SESSION_COOKIE, sim.open_session(), httponly=True)
    return response


def _json(payload: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(payload), status, media_type=JSON)


async def sim_stats(request: Request) -> Response:
    sim: SimState = request.app.state.sim
    return _json(sim.stats.snapshot(sim.limiter, time.monotonic()))


async def sim_config(request: Request) -> Response:
    sim: SimState = request.app.state.sim
    if request.method == "GET":
        return _json(sim.config.as_dict())
    try:
        changes = orjson.loads(await request.body())
        if not isinstance(changes, dict):
            raise ConfigError("expected a JSON object of knob: value")
        changed = sim.config.update(changes)
    except (orjson.JSONDecodeError, ConfigError) as exc:
        return _json({"error": str(exc)}, 400)
    sim.clock.set_speed(sim.config.speed)
    if "seed" in changed:
        sim.faults.reseed(sim.config.seed)
    if "empty_search_after" in changed:
        sim.good_searches = 0  # counted from now

    return _json({"changed": changed, "config": sim.config.as_dict()})


async def sim_reset(request: Request) -> Response:
    """The counters, the limiter and the sessions start over. With a JSON body
    `{"fresh": {knob: value}}` the whole simulated world does, as a newly started simulator
    with those knobs (the others at their defaults; host and port stay) would: its clock, its
    fault dice, its logins. A test suite serves many tests from one process this way."""
    sim: SimState = request.app.state.sim
    body = await request.body()
    if body:
        try:
            asked = orjson.loads(body)
            if not isinstance(asked, dict) or not isinstance(asked.get("fresh"), dict):
                raise ConfigError('expected {"fresh": {knob: value}}')
            config = SimConfig(host=sim.config.host, port=sim.config.port)
            config.update(asked["fresh"])
        except (orjson.JSONDecodeError, ConfigError) as exc:
            return _json({"error": str(exc)}, 400)
        request.app.state.sim = SimState(config, stopping=sim.stopping)
        return _json({"reset": True, "config": config.as_dict()})
    sim.stats.reset()
    sim.limiter.reset()
    sim.check_sums.clear()  # the sessions the start page opened are forgotten too
    sim.good_searches = 0
    return _json({"reset": True})


async def sim_login(request: Request) -> Response:
    """A logged-in session id, as an operator would copy it from a browser's cookies."""
    sim: SimState = request.app.state.sim
    return _json({"session": sim.log_in()})


async def sim_logout(request: Request) -> Response:
    """Expire one logged-in session now (`{"session": id}`), as Battlelog ending it would."""
    sim: SimState = request.app.state.sim
    try:
        asked = orjson.loads(await request.body())
    except orjson.JSONDecodeError:
        asked = None
    if not isinstance(asked, dict) or not isinstance(asked.get("session"), str):
        return _json({"error": 'expected {"session": id}'}, 400)
    return _json({"expired": sim.log_out(asked["session"])})


async def sim_health(request: Request) -> Response:
    return Response(b'{"ok":true}', media_type=JSON)


def create_app(config: SimConfig | None = None) -> Starlette:
    """The simulator as an ASGI app. Templates are built at startup (lifespan), not at import."""
    state = SimState(config or SimConfig())

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await asyncio.to_thread(templates.warm)
        yield

    app = Starlette(
        routes=[
            Route("/__sim/stats", sim_stats, methods=["GET"]),
            Route("/__sim/config", sim_config, methods=["GET", "POST"]),
            Route("/__sim/reset", sim_reset, methods=["POST"]),
            Route("/__sim/health", sim_health, methods=["GET"]),
            Route("/__sim/login", sim_login, methods=["POST"]),
            Route("/__sim/logout", sim_logout, methods=["POST"]),
            Route("/{rest:path}", battlelog, methods=["GET", "POST"]),
        ],
        lifespan=lifespan,
    )
    app.state.sim = state
    return app
