"""An unknown soldier through each compatible format, in process against real PostgreSQL: it
is submitted as the website's search submits it (an interactive request, visible on the
website, under the same per-client limit), answered "not yet" in the format's own error shape
with Retry-After from the request's estimate, and served once his statistics are stored."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from bf4ps.db.connect import Conn
from bf4ps.interactive.submit import Limits
from tests.db.community import community_client
from tests.db.test_web_api import seed_soldier
from tests.helpers import interactive_gate

GT = "/community/gametools/bf4/stats/?platform=pc&lang=en-us&name="
BS = "/community/bf4stats/api/playerInfo?plat=pc&output=json&name="


@pytest.fixture
async def client(db_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with community_client(db_url, Limits(2, 60)) as c:
        yield c


async def eta_seconds(conn: Conn, request_id: str) -> float:
    row = await (await conn.execute("SELECT eta_at, lookup_name FROM interactive_requests "
                                    "WHERE request_id = %s", [request_id])).fetchone()
    assert row is not None and row["eta_at"] is not None
    return float((row["eta_at"] - datetime.now(UTC)).total_seconds())


async def test_unknown_soldier_is_submitted_and_answered_not_yet(
        client: httpx.AsyncClient, conn: Conn, tmp_path: Path) -> None:
    await interactive_gate(conn, tmp_path)
    first = await client.get(GT + "NewRecruit")
    assert first.status_code == 404, first.text
    body = first.json()
    assert "not collected yet" in body["errors"][0] and body["retryAfter"] >= 1
    request_id = first.headers["x-bf4ps-request"]
    retry = int(first.headers["retry-after"])
    assert retry == body["retryAfter"]
    assert abs(retry - math.ceil(await eta_seconds(conn, request_id))) <= 2
    # the request is the website's: its page shows it
    assert first.headers["location"] == f"http://testserver/requests/{request_id}"
    page = await client.get(first.headers["location"])
    assert page.status_code == 200 and "NewRecruit" in page.text
    again = await client.get(GT + "NewRecruit")  # the open request, not a second one
    assert again.status_code == 404 and again.headers["x-bf4ps-request"] == request_id

    legacy = await client.get(BS + "OldTimer")
    assert legacy.status_code == 404 and legacy.json()["error"] == "notYetCollected"
    assert int(legacy.headers["retry-after"]) >= 1
    rows = await (await conn.execute("SELECT lookup_name, client_key FROM "
                                     "interactive_requests ORDER BY created_at")).fetchall()
    assert [r["lookup_name"] for r in rows] == ["NewRecruit", "OldTimer"]
    assert rows[0]["client_key"] == rows[1]["client_key"]  # the website's client key

    # the website's limit (2 a minute here), shared by both formats and the search
    limited = await client.get(BS + "ThirdMan")
    assert limited.status_code == 429 and limited.json()["error"] == "rateLimited"
    assert int(limited.headers["retry-after"]) >= 1
    limited_gt = await client.get(GT + "ThirdMan")
    assert limited_gt.status_code == 429 and limited_gt.json()["errors"]
    site = await client.post("/api/requests", json={"name": "ThirdMan", "platform": "pc"})
    assert site.status_code == 429


async def test_collected_soldier_is_served_with_its_freshness(
        client: httpx.AsyncClient, conn: Conn) -> None:
    pending = await client.get(GT + "TheOnlyBond")
    assert pending.status_code == 404
    await seed_soldier(conn)  # what the interactive collector stores
    served = await client.get(GT + "TheOnlyBond")
    assert served.status_code == 200 and served.json()["userName"] == "TheOnlyBond"
    age = int(served.headers["x-bf4ps-age-seconds"])
    assert 0 <= age < 600 and served.headers["last-modified"].endswith("GMT")
    legacy = await client.get(BS + "TheOnlyBond")
    assert legacy.status_code == 200 and legacy.headers["x-bf4ps-collected-at"]


async def test_unknown_persona_without_a_name_is_not_found(client: httpx.AsyncClient) -> None:
    answer = await client.get("/community/gametools/bf4/all/?playerid=424242&platform=ps4")
    assert answer.status_code == 404 and "retry-after" not in answer.headers
    assert answer.json()["errors"]
    legacy = await client.get("/community/bf4stats/api/playerInfo?plat=ps4&id=424242")
    assert legacy.status_code == 404 and legacy.json()["error"] == "notFound"
