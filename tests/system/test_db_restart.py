"""PostgreSQL restarted under a running fleet: everyone recovers on their own, health
transitions are logged at most once per outage, nothing is committed twice."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

import pytest

from bf4ps.db.connect import connection
from tests.fleet import Fleet, sim_stats, simulator
from tests.helpers import count, seed_work, wait_for
from tests.pgctl import migrated_database, private_server, restart

pytestmark = [
    pytest.mark.server_features, pytest.mark.slow, pytest.mark.skipif(
    bool(os.environ.get("BF4PS_TEST_DATABASE_URL")),
    reason="restarts a private embedded server")]


async def test_collectors_survive_a_postgres_restart(tmp_path: Path) -> None:
    with private_server() as (server, pgdata):
        url = await migrated_database(server)
        async with connection(url) as conn:
            await seed_work(conn, 400, resources=("detailed", "vehicles"))
        with simulator(speed=20, min_interval=1.0) as sim:
            fleet = Fleet(url, sim.base_url, tmp_path, {
                # heartbeats every 0.1 s, the server down for 1 s: a pooled connection is
                # silently replaced afterwards, so only heartbeats inside the outage notice it,
                # and an outage is declared once they fail for a whole period
                "BF4PS_HEARTBEAT_SECONDS": "0.1", "BF4PS_IDLE_POLL_SECONDS": "0.3",
                "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "1.0", "BF4PS_LEASE_SECONDS": "20",
                "BF4PS_EGRESS_SAFETY_MARGIN_SECONDS": "0.3"})
            for i in range(6):  # 3 egresses, 2 collectors each
                fleet.start(f"c{i}", f"eg-{i % 3}", f"127.0.0.{20 + i % 3}")
            async with connection(url) as conn:
                await wait_for(conn, "SELECT count(*) >= 8 FROM collection_events "
                                     "WHERE event_type = 'succeeded'")
            await asyncio.to_thread(restart, pgdata, 1.0)
            await asyncio.sleep(4)
            async with connection(url) as conn:
                done_before = await count(conn, "SELECT count(*) FROM collection_events "
                                                "WHERE event_type = 'succeeded'")
                await wait_for(conn, "SELECT count(*) > %(n)s + 8 FROM collection_events "
                                     "WHERE event_type = 'succeeded'", {"n": done_before},
                               timeout=60, context=fleet.tails)
            codes = fleet.stop_all()
            stats = sim_stats(sim)
        assert set(codes.values()) == {0}, {n: fleet.log(n)[-2000:] for n in codes}
        async with connection(url) as conn:
            cur = await conn.execute(
                "SELECT collector_name, event_type, count(*) AS n FROM collection_events "
                "WHERE event_type IN ('heartbeat_lost', 'heartbeat_restored') "
                "GROUP BY 1, 2 ORDER BY 1, 2")
            transitions = {(r["collector_name"], r["event_type"]): r["n"]
                           for r in await cur.fetchall()}
            for name in [f"c{i}" for i in range(6)]:
                lost = transitions.get((name, "heartbeat_lost"), 0)
                restored = transitions.get((name, "heartbeat_restored"), 0)
                assert lost <= 1 and restored <= 1 and lost == restored, transitions
            assert sum(transitions.values()) >= 2, "no collector noticed the outage"
            assert await count(conn, "SELECT count(*) FROM (SELECT job_id FROM "
                                     "collection_events WHERE event_type = 'succeeded' "
                                     "GROUP BY job_id HAVING count(*) > 1) d") == 0
            cur = await conn.execute("SELECT collector_name, health, heartbeat_lost_at, "
                                     "stopped_at FROM collectors")
            rows = await cur.fetchall()
            assert all(r["health"] == "stopped" for r in rows), rows
    assert stats["violations"]["total"] == 0, stats["violations"]["recent"][0]["early_by_seconds"]


async def test_a_fast_shutdown_held_up_is_made_immediate_and_says_by_what() -> None:
    """The harnesses' restart (tests/pgctl.py): a server process that cannot take its SIGTERM
    (stopped) holds a fast shutdown; after its bounded wait the stop is made immediate, the
    server comes back, and the diagnosis names the stuck process."""
    with private_server() as (url, pgdata):
        async with connection(url) as conn:
            pid = int((await (await conn.execute("SELECT pg_backend_pid() AS p")).fetchone()
                       or {"p": 0})["p"])
            os.kill(pid, signal.SIGSTOP)
            try:
                stuck = await asyncio.to_thread(restart, pgdata, 0.0, 2)
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
        assert stuck is not None and "fast shutdown unfinished" in stuck
        assert any(line.split()[0] == str(pid) for line in stuck.splitlines()
                   if line.strip() and line.split()[0].isdigit()), stuck
        async with connection(url) as conn:
            assert await count(conn, "SELECT 1") == 1
