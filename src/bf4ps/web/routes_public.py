"""The player's pages: search and submit, a request's status, a soldier's stats."""

from __future__ import annotations

from contextlib import suppress
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg_pool import PoolTimeout
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from bf4ps import policy as policy_mod
from bf4ps.domain import JobKind, Platform
from bf4ps.interactive.inputs import InputError
from bf4ps.stats import discovery
from bf4ps.views import gains_board as gains_view
from bf4ps.views import search as search_view
from bf4ps.views import soldier as soldier_view
from bf4ps.views import soldier_page as page_view
from bf4ps.views.request_status import StepProgress, request_status
from bf4ps.web import actions, replica, tables
from bf4ps.web.errors import WebError
from bf4ps.web.format import ago
from bf4ps.web.params import (
    choice_query,
    form,
    form_text,
    int_query,
    platform_query,
    query,
    soldier_path,
    uuid_path,
)
from bf4ps.web.security import CSRF_FIELD
from bf4ps.web.state import db, read_db, render, state_of

PLATFORMS = [p.value for p in Platform]
PLAYING_WINDOW = timedelta(hours=1)  # "playing now": seen on a server by BF4SW this recently


def _index(request: Request, *, status: int = 200, headers: dict[str, str] | None = None,
           **context: Any) -> Response:
    # platform "": all platforms (the search's default; a lookup then asks for one)
    ctx = {"platforms": PLATFORMS, "q": "", "platform": "", "result": None, "error": None,
           "recent": [], "playing": [], "boards": {}, "discovered": False, **context}
    return render(request, "index.html", ctx, status=status, headers=headers)


async def _discovery(request: Request, platform: Platform | None) -> dict[str, Any]:
    """The home page without a search: who was collected lately, who plays now, the boards."""
    board_platform = platform or Platform.PC
    async with read_db(request) as conn:
        found = await discovery.home(conn, board_platform, datetime.now(UTC) - PLAYING_WINDOW)
    return {"recent": found.recent, "playing": found.playing, "boards": found.boards,
            "board_platform": board_platform.value, "discovered": True}


async def _refused(request: Request, status: int, error: str, **context: Any) -> Response:
    """The home page under a refused search or submission (a 422, a 429): its lists shown
    when they can be read, left out (never shown empty) when they cannot."""
    with suppress(psycopg.Error, PoolTimeout, WebError):
        context.update(await _discovery(request, None))
    return _index(request, status=status, error=error, **context)


async def index(request: Request) -> Response:
    try:
        text = query(request, "q", max_len=300)
        platform = platform_query(request)
        page = int_query(request, "page", default=1, lo=1, hi=50)
    except WebError as exc:
        return await _refused(request, exc.status, exc.message)
    chosen = platform.value if platform else ""
    if text is None:
        return _index(request, platform=chosen, **await _discovery(request, platform))
    try:
        async with read_db(request) as conn:
            result = await search_view.search(conn, text, platform, page)
    except InputError as exc:
        return await _refused(request, 422, exc.message, q=text, platform=chosen)
    opened = _opens(result)
    if opened is not None:
        return RedirectResponse(opened, 303)
    return _index(request, q=text, platform=result.platform.value if result.platform else "",
                  result=result)


def _opens(result: search_view.SearchResult) -> str | None:
    """The soldier a search opens at once: a URL's, or the one soldier named exactly."""
    if result.kind == "url" and result.soldiers:
        return result.soldiers[0].url
    exact = [s for s in result.soldiers if s.exact]
    if result.kind == "name" and len(exact) == 1 and (result.page or 1) == 1:
        return exact[0].url
    return None


async def submit_form(request: Request) -> Response:
    data = await form(request)
    state_of(request).csrf.check(request, data.get(CSRF_FIELD))
    fields = {"name": form_text(data, "name"), "platform": form_text(data, "platform", 20),
              "persona_id": form_text(data, "persona_id", 20),
              "url": form_text(data, "url")}
    try:
        sub = await actions.submit_from(request, fields["name"], fields["platform"],
                                        fields["persona_id"], fields["url"])
    except WebError as exc:
        return await _refused(request, exc.status, exc.message, q=fields["name"] or "",
                              platform=fields["platform"] if fields["platform"] in PLATFORMS
                              else "", headers=exc.headers)
    return RedirectResponse(f"/requests/{sub.request_id}", 303)


async def request_page(request: Request) -> Response:
    request_id = uuid_path(request)
    async with db(request) as conn:
        policy = await policy_mod.load(conn)
        st = await request_status(conn, request_id, state_of(request).gate,
                                  policy.interactive_min_age_seconds)
    if st is None:
        raise WebError(404, "no such request")
    refreshable_in = (ago(st.refreshable_at, st.now) if st.refreshable_at is not None
                      and st.refreshable_at > st.now else "now")
    return render(request, "request.html", {"req": st.model_dump(mode="json"),
                                            "is_open": st.is_open,
                                            "step_names": STEP_NAMES,
                                            "progress_word": progress_word,
                                            "refreshable_in": refreshable_in})


STEP_NAMES: dict[str, str] = {
    JobKind.LOOKUP: "find the soldier on Battlelog", JobKind.DETAILED: "detailed stats",
    JobKind.PROFILE: "profile", JobKind.WEAPONS: "weapons", JobKind.VEHICLES: "vehicles"}
JOB_WORDS = {"pending": "waiting", "claimed": "next", "running": "collecting now"}


def progress_word(r: dict[str, Any]) -> str:
    """One step's progress (a StepProgress as JSON) as the request page says it (app.js says
    the same)."""
    step = StepProgress.model_validate(r)
    if step.job_status:
        return JOB_WORDS.get(step.job_status, step.job_status)
    return "done" if step.state_status == "current" else "–"


async def soldier_page(request: Request) -> Response:
    platform, persona_id = soldier_path(request)
    async with read_db(request) as conn:
        found = await soldier_view.find(conn, platform, persona_id)
        if found is None:
            replica.missing(request.scope)
            raise WebError(404, "this soldier is not known here yet: search for its name (or "
                                "paste its Battlelog URL) to have it collected")
        data = await page_view.page(conn, found)
    return render(request, "soldier.html", {
        "s": data, "platforms": PLATFORMS, **_charts(data), "last_session": data.last_session,
        "item_tables": [tables.WEAPONS.render(data.weapons, data.progress.weapons),
                        tables.VEHICLES.render(data.vehicles, data.progress.vehicles)]})


def _charts(data: page_view.SoldierPage) -> dict[str, Any]:
    """The chart series as the page's scripts read them (JSON)."""
    series = data.model_dump(mode="json", include={"history", "weapon_history",
                                                   "vehicle_history"})
    return {"chart": series["history"], "weapon_chart": series["weapon_history"],
            "vehicle_chart": series["vehicle_history"]}


async def leaderboards(request: Request) -> Response:
    """/leaderboards?platform=pc&by=kd&page=2: one board, 25 soldiers a page."""
    platform = platform_query(request) or Platform.PC
    board = choice_query(request, "by", discovery.Board, discovery.Board.SPM)
    page = int_query(request, "page", default=1, lo=1, hi=400)
    async with read_db(request) as conn:
        found = await discovery.leaderboard(conn, board, platform, page)
    return render(request, "leaderboards.html", {
        "platforms": PLATFORMS, "platform": platform.value, "board": board,
        "boards": list(discovery.Board), "found": found,
        "min_hours": discovery.BOARD_MIN_SECONDS // 3600})


async def leaderboards_week(request: Request) -> Response:
    """/leaderboards/week?platform=pc&by=weapon&item=12: a gains board of the week."""
    platform = platform_query(request) or Platform.PC
    kind = choice_query(request, "by", gains_view.GainsBoardKind,
                        gains_view.GainsBoardKind.KPM)
    item = int_query(request, "item", default=0, lo=0, hi=2**31 - 1) or None
    page = int_query(request, "page", default=1, lo=1, hi=400)
    async with read_db(request) as conn:
        policy = await policy_mod.load(conn)
        found = await gains_view.board(conn, policy, kind, platform, item, page)
    return render(request, "leaderboards_week.html", {
        "platforms": PLATFORMS, "found": found, "kinds": list(gains_view.GainsBoardKind)})


async def search_alias(request: Request) -> Response:
    """/search?q=…, the address people guess: the search lives at /?q=…."""
    qs = request.url.query
    return RedirectResponse("/?" + qs if qs else "/", 308)


ROUTES = [
    Route("/", index, methods=["GET"]),
    Route("/search", search_alias, methods=["GET"]),
    Route("/leaderboards", leaderboards, methods=["GET"]),
    Route("/leaderboards/week", leaderboards_week, methods=["GET"]),
    Route("/requests", submit_form, methods=["POST"]),
    Route("/requests/{request_id}", request_page, methods=["GET"]),
    Route("/soldiers/{platform}/{persona_id}", soldier_page, methods=["GET"]),
]
