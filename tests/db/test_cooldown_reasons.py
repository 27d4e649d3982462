"""Every egress cool-down says what it was: its signal (a soft-throttle run, a 403, a login
wall, a 5xx, a Retry-After, an expired Battlelog session) and the resource asked for, in its
event, the console's table and the console's API. The collector's own cool-down functions on a
real PostgreSQL and the real web app (ASGI)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import orjson
import pytest
from psycopg_pool import AsyncConnectionPool

from bf4ps.battlelog.classify import classify_response, resource_parser
from bf4ps.battlelog.client import BattlelogClient
from bf4ps.battlelog.models import FetchResult
from bf4ps.collector import outage, session
from bf4ps.db.connect import Conn, open_pool
from bf4ps.demo import figures
from bf4ps.domain import Resource
from bf4ps.gates import throttle
from bf4ps.policy import Policy
from bf4ps.settings import Settings
from bf4ps.web.app import create_app
from tests.helpers import GATE_ENSURE, make_collector

OPS = ("ops", "secret-pass")
SETTINGS = Settings(ops_username=OPS[0], ops_password=OPS[1], secret_key="k",  # type: ignore[arg-type]
                    metrics_settle_seconds=0)
WALL = orjson.dumps({"type": "error", "message": "GATE_REDIRECT", "data": {}})


@pytest.fixture
async def pool(db_url: str) -> AsyncIterator[AsyncConnectionPool[Conn]]:
    p = await open_pool(db_url, max_size=4)
    yield p
    await p.close()


def answer(status: int, headers: dict[str, str], body: bytes, resource: Resource
           ) -> FetchResult:
    return classify_response(status=status, headers=httpx.Headers(headers), body=body,
                             parser=resource_parser(resource), resource=resource,
                             duration_seconds=0.1)


async def test_each_cool_down_names_its_signal_and_resource(
        conn: Conn, tmp_path: Path, pool: AsyncConnectionPool[Conn]) -> None:
    me = await make_collector(conn, tmp_path, "why-1", egress="why-eg")
    await conn.execute(GATE_ENSURE, {"egress_key": "why-eg", "min_interval": 0.1,
                                     "window_requests": None, "window_seconds": None})
    policy = Policy(outage_cooldown_seconds=0.5)  # counted from the send: the answers took 0.1 s
    for status, headers, body, resource in (
            (200, {}, WALL, Resource.WEAPONS),
            (503, {"retry-after": "1"}, b"<html></html>", Resource.PROFILE),
            (500, {}, b"<html></html>", Resource.VEHICLES)):
        result = answer(status, headers, body, resource)
        assert await outage.cool(conn, me, result, policy, "sig", resource.value) is not None
    await throttle.throttled(conn, me, 0.01, 0.01, throttle.Cause("http_403", "detailed", 403))
    await throttle.throttled(conn, me, 0.01, 0.01,
                             throttle.Cause(throttle.SOFT_THROTTLE, "detailed", 200))
    cur = await conn.execute(
        "SELECT event_type, resource, details->>'signal' AS signal FROM collection_events "
        "WHERE event_type IN ('egress_cooled', 'egress_throttled') ORDER BY event_id")
    assert [(r["event_type"], r["resource"], r["signal"]) for r in await cur.fetchall()] == [
        ("egress_cooled", "weapons", "login_wall"), ("egress_cooled", "profile", "retry_after"),
        ("egress_cooled", "vehicles", "http_5xx"), ("egress_throttled", "detailed", "http_403"),
        ("egress_throttled", "detailed", "soft_throttle")]
    async with httpx.AsyncClient(transport=httpx.ASGITransport(
            app=create_app(SETTINGS, pool=pool)), base_url="http://t") as web:
        page = (await web.get("/ops", auth=OPS)).text
        api = (await web.get("/api/ops/throttles", auth=OPS)).json()["throttles"]
    table = page[page.index('id="throttles"'):]
    table = table[:table.index("</table>")]
    rows = [re.sub(r"<[^>]+>", "|", row) for row in table.split("<tr>")[2:]]
    for signal, resource in (("login_wall", "weapons"), ("retry_after", "profile"),
                             ("http_5xx", "vehicles"), ("http_403", "detailed"),
                             ("soft_throttle", "detailed")):
        assert any(f"|{signal}|" in row and f"|{resource}|" in row for row in rows), (
            signal, rows)
    assert {e["details"]["signal"] for e in api} == {
        "login_wall", "retry_after", "http_5xx", "http_403", "soft_throttle"}
    # the demo's summary counts them by signal too
    happened = await figures.outcomes(conn, datetime.now(UTC) - timedelta(hours=1))
    assert happened.throttles.cooldowns_by_signal == {
        "login_wall": 1, "retry_after": 1, "http_5xx": 1, "http_403": 1, "soft_throttle": 1}


async def test_a_dead_session_is_named_gauged_and_a_renewed_file_resumes(
        conn: Conn, tmp_path: Path, pool: AsyncConnectionPool[Conn]) -> None:
    me = await make_collector(conn, tmp_path, "ses-1", egress="ses-eg")
    path = tmp_path / "battlelog-session"
    path.write_text("a" * 32 + "\n")
    async with BattlelogClient("http://127.0.0.1:9", "bf4ps-test") as client:
        logged_in = session.BattlelogSession(path, client)
        logged_in.load()
        assert client.check_sum == "a" * 10  # used for every request from now on
        walled = answer(200, {}, WALL, Resource.DETAILED)
        assert logged_in.kills(walled)
        assert not session.BattlelogSession(None, client).kills(walled)  # anonymous: an outage
        assert not await session.stopped(conn, me, logged_in)
        await session.expired(conn, me, logged_in, walled, "detailed")
        await session.expired(conn, me, logged_in, walled, "detailed")  # named once
        assert await session.stopped(conn, me, logged_in)  # nothing sent until renewed
        gauge = 'bf4ps_battlelog_session_expired{egress="ses-eg"}'
        async with httpx.AsyncClient(transport=httpx.ASGITransport(
                app=create_app(SETTINGS, pool=pool)), base_url="http://t") as web:
            assert f"{gauge} 1.0" in (await web.get("/metrics")).text
            page = (await web.get("/ops", auth=OPS)).text
            path.write_text("b" * 32 + "\n")  # the operator renews it
            assert not await session.stopped(conn, me, logged_in)
            assert client.check_sum == "b" * 10
            assert f"{gauge} 0.0" in (await web.get("/metrics")).text
    assert "session_expired" in page and "the session file is renewed" in page
    cur = await conn.execute("SELECT event_type, details->>'signal' AS s FROM collection_events "
                             "WHERE egress_key = 'ses-eg' AND (event_type LIKE 'egress_%' "
                             "OR event_type LIKE 'session_%') "
                             "ORDER BY event_id")
    assert [(r["event_type"], r["s"]) for r in await cur.fetchall()] == [
        ("session_expired", "session_expired"), ("session_renewed", "session_renewed")]
