"""A collector's clock checks against a real database: the offset is measured (not assumed),
stored in the registry and shown by `bf4ps status`, the console, its API and /metrics; the
bound's transitions are one event each way. The bound is made negative here so that any real
offset (sub-millisecond, or even exactly 0) exceeds it (the skewed processes are in
test_clock_skew.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from psycopg_pool import AsyncConnectionPool

from bf4ps.collector.clock import ClockGuard, DbClock, measure
from bf4ps.db.connect import Conn, open_pool
from bf4ps.interactive.submit import Limits
from bf4ps.settings import Settings
from bf4ps.views.fleet_status import render_status, status_report
from bf4ps.web.app import create_app
from tests.helpers import count, make_collector


@pytest.fixture
async def pool(db_url: str) -> AsyncIterator[AsyncConnectionPool[Conn]]:
    p = await open_pool(db_url, max_size=4)
    yield p
    await p.close()


async def test_the_measured_offset_is_stored_shown_and_its_bound_enforced(
        conn: Conn, tmp_path: Path, pool: AsyncConnectionPool[Conn]) -> None:
    sample = await measure(conn)
    # same host, same clock: the offset is within half the round trip (plus rounding)
    assert 0 <= sample.rtt < 1.0 and abs(sample.offset) <= sample.rtt / 2 + 0.002, sample
    me = await make_collector(conn, tmp_path, "tick-01")
    # a bound below zero: every offset is beyond it (a tiny positive one was not: a sample on
    # the same host once measured an offset of exactly 0, and the re-check said "back within")
    guard = ClockGuard(DbClock(), me, limit=-1.0, period=3600)
    assert not await guard.within(conn)  # beyond the (tiny) bound: no slots
    assert not await guard.within(conn)  # not due again: no new measurement, still out
    await guard.check(conn)  # measured again while out: no second event
    kinds = "SELECT count(*) FROM collection_events WHERE event_type = %(t)s"
    assert await count(conn, kinds, {"t": "clock_skew"}) == 1

    report = await status_report(conn)
    mine = next(c for c in report.collectors if c.name == "tick-01")
    assert mine.clock_skewed is True and mine.clock_offset_seconds is not None
    assert "SKEWED: taking no send slots" in render_status(report)
    app = create_app(Settings(ops_local_demo=True), pool=pool, limits=Limits(1000, 60))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://testserver") as client:
        fleet = (await client.get("/api/ops/fleet")).json()
        page = (await client.get("/ops")).text
        metrics = (await client.get("/metrics")).text
    entry = next(c for c in fleet["collectors"] if c["name"] == "tick-01")
    assert entry["state"] == "skewed" and entry["clock_skewed"] is True
    assert "skewed: no slots" in page and "state-skewed" in page
    assert 'bf4ps_collector_clock_offset_seconds{collector="tick-01"}' in metrics
    assert 'bf4ps_collector_clock_skewed{collector="tick-01"} 1.0' in metrics

    guard.limit = 10.0  # back within
    assert await guard.within(conn) is False  # not due yet: it says what it knew
    await guard.check(conn)
    assert await guard.within(conn)
    assert await count(conn, kinds, {"t": "clock_restored"}) == 1
    report = await status_report(conn)
    mine = next(c for c in report.collectors if c.name == "tick-01")
    assert mine.clock_skewed is False and mine.clock_skewed_since is None
