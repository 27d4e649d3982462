"""bf4stats.com's API under /community/bf4stats/api (a tool points its base URL
`http://api.bf4stats.com/api/` there): `playerInfo` (`plat`, `name` or `id`, `opt`),
`playerRankings` and `onlinePlayers`, GET or POST (form or JSON fields; POST wins), `output`
json, jsonp (with `callback`) or js (`var pd=...;`). Errors are `{"error": code, "message"}`;
a soldier not collected yet is submitted and answered 404 `notYetCollected` with Retry-After."""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bf4ps.views import bf4stats as info_view
from bf4ps.views import bf4stats_boards as boards_view
from bf4ps.views.compat import Stored
from bf4ps.web.compat import common
from bf4ps.web.compat.common import Refusal, Who
from bf4ps.web.compat.kept import kept
from bf4ps.web.state import read_db

PREFIX = "/community/bf4stats/api"
OUTPUTS = ("json", "jsonp", "js")
CALLBACK = re.compile(r"[A-Za-z_$][A-Za-z0-9_$.]{0,63}")
ONLINE_SECONDS = 30.0  # onlinePlayers is one figure for everyone: computed this often
BOARD_SIZES = "board-sizes"  # playerRankings' count: each board's size, kept this long
BOARD_SIZES_SECONDS = 300.0


def render(doc: Any, params: dict[str, str], status: int = 200,
           headers: dict[str, str] | None = None) -> Response:
    """`doc` in the asked output: json, jsonp (callback(...);) or js (var pd=...;)."""
    output = params.get("output", "json").lower() or "json"
    if output not in OUTPUTS:
        doc, status, output = {"error": "outputInvalid", "message": "output must be one of "
                               + ", ".join(OUTPUTS)}, 400, "json"
    callback = params.get("callback", "")
    if output == "jsonp" and not CALLBACK.fullmatch(callback):
        doc, status, output = {"error": "callbackInvalid", "message": "jsonp needs a callback "
                               "(a JavaScript identifier)"}, 400, "json"
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    all_headers = {**common.CORS, **(headers or {})}
    if output == "json":
        return Response(text, status, all_headers, media_type="application/json")
    body = f"{callback}({text});" if output == "jsonp" else f"var pd={text};"
    return Response(body, status, all_headers, media_type="application/javascript")


def refused(exc: Refusal, params: dict[str, str]) -> Response:
    return render({"error": exc.code, "message": exc.message}, params, exc.status, exc.headers)


def asked(params: dict[str, str]) -> Who:
    code = params.get("plat", "").lower()
    platform = info_view.PLAT_CODES.get(code)
    if platform is None:
        raise Refusal(422, "platInvalid",
                      f"plat must be one of {', '.join(info_view.PLAT_CODES)}")
    return common.who(platform, params.get("name"), params.get("id"))


async def _player(request: Request, *, items: bool) -> tuple[dict[str, str],
                                                              Stored | Response]:
    """The parameters, and the known soldier or the answer to give instead."""
    params: dict[str, str] = {}
    try:
        params = await common.parameters(request, body=True)
        soldier = asked(params)
        found = await common.known(request, soldier, items=items)
        if found is not None:
            return params, found
        wait = await common.pending(request, soldier)
    except Refusal as exc:
        return params, refused(exc, params)
    base = common.base_url(request)
    return params, render({"error": "notYetCollected",
                           "message": f"{soldier.name or soldier.persona_id} is not collected "
                                      f"yet: it was requested, ask again in "
                                      f"{wait.retry_after} s",
                           "retryAfter": wait.retry_after,
                           "request": f"{base}{wait.request_path}"},
                          params, 404, common.pending_headers(wait, base))


async def player_info(request: Request) -> Response:
    params, found = await _player(request, items=True)
    if isinstance(found, Response):
        return found
    return render(info_view.player_info(found, params.get("opt")), params,
                  headers=common.fresh_headers(found))


async def player_rankings(request: Request) -> Response:
    params, found = await _player(request, items=False)
    if isinstance(found, Response):
        return found
    platform = found.soldier.platform
    sizes = await kept(request, f"{BOARD_SIZES}:{platform.value}", BOARD_SIZES_SECONDS,
                       lambda conn: boards_view.board_sizes(conn, platform))
    async with read_db(request) as conn:
        doc = await boards_view.rankings(conn, found.soldier, sizes)
    return render(doc, params, headers=common.fresh_headers(found))


async def online_players(request: Request) -> Response:
    try:
        params = await common.parameters(request, body=True)
    except Refusal as exc:
        return refused(exc, {})
    doc = await kept(request, "online", ONLINE_SECONDS,
                     lambda conn: boards_view.online_players(conn, info_view.CODE_OF))
    return render(doc, params)


ENDPOINTS = {"playerInfo": player_info, "playerRankings": player_rankings,
             "onlinePlayers": online_players}
ROUTES = [Route(f"{PREFIX}/{name}{slash}", endpoint, methods=["GET", "POST"])
          for name, endpoint in ENDPOINTS.items() for slash in ("", "/")]
