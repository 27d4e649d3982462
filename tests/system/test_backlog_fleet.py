"""Backlog age and refresh lag with a real fleet (a scheduler and a collector process on the
Battlelog simulator): while the fleet serves, the active class's backlog stays young; with the
collector stopped it grows as refreshes fall due; restarted, it drains back, and the refresh
lag the scheduler records shows the wait."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from bf4ps.db.connect import Conn, connection
from bf4ps.web.metrics import Metrics
from tests import load
from tests.db.test_capacity import gauge
from tests.fleet import Fleet, simulator

pytestmark = [pytest.mark.slow, pytest.mark.long]  # a minute or more: run first

FRESHNESS = 20
FAST = {"BF4PS_HEARTBEAT_SECONDS": "1", "BF4PS_IDLE_POLL_SECONDS": "0.3",
        "BF4PS_CLAIM_HORIZON_SECONDS": "0.5", "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "0.2",
        "BF4PS_EGRESS_SAFETY_MARGIN_SECONDS": "0.05", "BF4PS_SCHEDULER_TICK_SECONDS": "0.5",
        "BF4PS_SWEEP_SECONDS": "1", "BF4PS_HISTORY_RECORD_SECONDS": "2",
        "BF4PS_BF4SW_SYNC_SECONDS": "86400"}


async def seed(conn: Conn, n: int) -> None:
    await conn.execute(
        "INSERT INTO soldiers (persona_id, platform, current_name, first_seen_at, last_seen_at) "
        "SELECT 1800000000 + g, 'pc', 'Bk' || g, now() - interval '30 days', now() "
        "FROM generate_series(1, %s) g", [n])
    await conn.execute(
        "INSERT INTO collection_state (soldier_id, resource, activity_class, activity_at) "
        "SELECT soldier_id, 'detailed', 'active', last_seen_at FROM soldiers")
    await conn.execute("INSERT INTO scheduler_policy (key, value) VALUES "
                       "('freshness_detailed_seconds', %s), ('working_set_background', '20')",
                       [str(FRESHNESS)])


class Scrape:
    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        self.metrics = Metrics()

    async def age(self) -> float:
        text = (await self.metrics.render(self.conn)).decode()
        got = gauge(text, "bf4ps_backlog_age_seconds", **{"class": "active",
                                                          "resource": "detailed"})
        assert got is not None
        return got

    async def lag_p95(self) -> float | None:
        text = (await self.metrics.render(self.conn)).decode()
        return gauge(text, "bf4ps_refresh_lag_seconds", **{
            "class": "active", "resource": "detailed", "quantile": "0.95"})

    async def until(self, what: str, ok: object, timeout: float = 90) -> float:
        deadline = load.deadline(timeout)
        seen = []
        while not deadline.expired():
            value = await self.age()
            seen.append(value)
            if ok(value):  # type: ignore[operator]
                return value
            await asyncio.sleep(0.5)
        raise AssertionError(f"backlog age never {what}: {seen[-10:]}")


async def collected_once(conn: Conn, n: int, timeout: float = 90) -> None:
    deadline = load.deadline(timeout)
    while not deadline.expired():
        cur = await conn.execute("SELECT count(*) AS n FROM collection_state "
                                 "WHERE last_success_at IS NOT NULL")
        row = await cur.fetchone()
        if row and row["n"] >= n:
            return
        await asyncio.sleep(0.5)
    raise AssertionError("the fleet did not collect every soldier once")


async def test_backlog_age_grows_while_the_fleet_is_stopped_and_drains_after(
        db_url: str, tmp_path: Path) -> None:
    async with connection(db_url) as conn:
        await seed(conn, 10)
    with simulator(speed=20, min_interval=0.2) as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, FAST)
        log = open(tmp_path / "scheduler.log", "a")  # noqa: SIM115 - closed with the process
        fleet.procs["scheduler"] = subprocess.Popen(
            [sys.executable, "-m", "bf4ps.cli.main", "scheduler", "run"], env=fleet.env(),
            stdout=log, stderr=subprocess.STDOUT, text=True)
        fleet.start("bk-0", "bk-egress", "127.0.0.40")
        async with connection(db_url) as conn:
            scrape = Scrape(conn)
            # serving: everything collected once, then kept fresh: the oldest due work is young
            await collected_once(conn, 10)
            young = await scrape.until("young while serving", lambda a: a < FRESHNESS / 2)
            fleet.signal("bk-0", 15)  # SIGTERM: a graceful stop
            assert fleet.procs["bk-0"].wait(30) == 0
            stopped = await scrape.until("past the refresh interval with the fleet stopped",
                                         lambda a: a > FRESHNESS + 5)
            await scrape.until("growing with the fleet stopped", lambda a: a > stopped + 3)
            fleet.start("bk-0", "bk-egress", "127.0.0.40")  # restarted: the backlog drains
            await scrape.until("young again after the restart", lambda a: a < FRESHNESS / 2)
            deadline = load.deadline(30)
            lag = None
            while not deadline.expired():  # the next record holds the waits
                lag = await scrape.lag_p95()
                if lag is not None and lag > FRESHNESS:
                    break
                await asyncio.sleep(1)
        codes = fleet.stop_all()
    assert young < FRESHNESS / 2 and stopped > FRESHNESS + 5
    assert lag is not None and lag > FRESHNESS, lag
    assert codes["bk-0"] == 0, fleet.log("bk-0")[-2000:]
    assert codes["scheduler"] == 0, (tmp_path / "scheduler.log").read_text()[-2000:]
