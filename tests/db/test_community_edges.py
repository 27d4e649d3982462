"""The community-compatible endpoints' edges, in process against real PostgreSQL: the
bf4stats rankings over BF4PS's boards (flagged soldiers off them), onlinePlayers from the play
sessions and its background refresh, and hostile input (a 4xx, never a 5xx)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from bf4ps.db.connect import Conn
from tests import load
from tests.db.community import community_client
from tests.db.test_community_api import BS, GT
from tests.db.test_web_api import PERSONA, seed_soldier


@pytest.fixture
async def client(db_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with community_client(db_url) as c:
        yield c


async def test_rankings_and_online_players(client: httpx.AsyncClient, conn: Conn,
                                           db_url: str) -> None:
    sid = await seed_soldier(conn)
    other = await seed_soldier(conn, PERSONA + 1, "SecondBest")
    await conn.execute("UPDATE detailed_stats_current SET kills = kills + 1000 "
                       "WHERE soldier_id = %s", [other])
    await conn.execute("INSERT INTO play_sessions (soldier_id, started_at, last_seen_at) "
                       "VALUES (%s, now() - interval '20 minutes', now())", [sid])
    ranks = (await client.get(f"{BS}/playerRankings?plat=pc&name=TheOnlyBond")).json()
    kills = next(r for r in ranks["rankings"] if r["ident"] == "kills")
    assert kills["rank"] == 2 and kills["count"] == 2 and kills["pid"] == PERSONA
    # a flagged soldier is on no board: the one above drops out (a new app: sizes are kept)
    await conn.execute("INSERT INTO progress_flags (soldier_id, kind, started_at, ended_at, "
                       "reason) VALUES (%s, 'soldier', now() - interval '1 hour', now(), "
                       "'kpm over the ceiling')", [other])
    async with community_client(db_url) as fresh:
        ranks = (await fresh.get(f"{BS}/playerRankings/?plat=pc&name=TheOnlyBond")).json()
        theirs = (await fresh.get(f"{BS}/playerRankings?plat=pc&name=SecondBest")).json()
    kills = next(r for r in ranks["rankings"] if r["ident"] == "kills")
    assert kills["rank"] == 1 and kills["count"] == 1
    assert all(r["rank"] is None and r["value"] is None for r in theirs["rankings"])
    online = (await client.get(f"{BS}/onlinePlayers")).json()
    assert set(online) == {"pc", "ps4", "xone", "ps3", "xbox"}
    assert online["pc"]["count"] == 1 and online["pc"]["peak24"] >= 1
    assert online["ps4"] == {"label": "PS4", "count": 0, "peak24": 0}


HOSTILE = ["name=", "name=%00x", "name=" + "a" * 400, "playerid=-1", "playerid=1e9",
           "playerid=99999999999999999999", "platform=%F0%9F%92%A5&name=x", "days=%C2%B2",
           "days=99999999999999999999", "format_values=maybe", "name=a&name=b",
           "plat=pc&name=x&output=jsonp&callback=", "plat=pc&id=abc", "opt=%FF&plat=pc&name=x",
           "output=lines&plat=pc&name=TheOnlyBond"]


async def test_hostile_input_is_a_4xx_never_a_5xx(client: httpx.AsyncClient,
                                                  conn: Conn) -> None:
    await seed_soldier(conn)
    paths = [f"{GT}/{e}/" for e in ("stats", "all", "weapons", "vehicles", "statsarray")]
    paths += [f"{BS}/{e}" for e in ("playerInfo", "playerRankings", "onlinePlayers")]
    for path in paths:
        for query in HOSTILE:
            answer = await client.get(f"{path}?platform=pc&{query}")
            assert answer.status_code < 500, (path, query, answer.text[:200])
            assert answer.headers["content-type"].startswith(("application/json",
                                                              "application/javascript"))
        for body in (b"\xff\xfe", b"[1,2]", b"{"):
            posted = await client.post(path, content=body,
                                       headers={"content-type": "application/json"})
            assert posted.status_code < 500, (path, body, posted.text[:200])
        multipart = await client.post(path, content=b"--x\r\nbroken",
                                      headers={"content-type": "multipart/form-data"})
        assert multipart.status_code < 500, (path, multipart.text[:200])


async def test_online_players_refresh_in_the_background(
        client: httpx.AsyncClient, conn: Conn, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kept figure past its time is answered as kept while a refresh runs; the refreshed
    figure follows."""
    from bf4ps.web.compat import bf4stats as routes
    sid = await seed_soldier(conn)
    assert (await client.get(f"{BS}/onlinePlayers")).json()["pc"]["count"] == 0
    await conn.execute("INSERT INTO play_sessions (soldier_id, started_at, last_seen_at) "
                       "VALUES (%s, now() - interval '5 minutes', now())", [sid])
    assert (await client.get(f"{BS}/onlinePlayers")).json()["pc"]["count"] == 0  # kept
    monkeypatch.setattr(routes, "ONLINE_SECONDS", 0.0)
    stale = (await client.get(f"{BS}/onlinePlayers")).json()  # starts the refresh
    assert stale["pc"]["count"] == 0
    end = load.deadline(10)
    while (await client.get(f"{BS}/onlinePlayers")).json()["pc"]["count"] != 1:
        assert not end.expired(), "the refresh did not land"
        await asyncio.sleep(0.05)
