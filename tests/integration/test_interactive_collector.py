"""The interactive lane end to end with a real collector process: an unknown name becomes a
lookup, the lookup finds the soldier through the (simulated) Battlelog search, and the same
collector chains the soldier's four resources; a name that does not exist ends not-found."""

from __future__ import annotations

from pathlib import Path

import pytest

from bf4ps.db.connect import connection
from bf4ps.domain import Platform
from bf4ps.interactive.submit import submit
from bf4ps.policy import Policy
from bf4ps.sim.battlelog.lookup import name_platforms
from bf4ps.sim.personas import persona_id_for
from tests.fleet import Fleet, simulator
from tests.helpers import count, wait_for

pytestmark = pytest.mark.slow


def pc_name(on_pc: bool = True) -> str:
    """A name the simulated Battlelog has (or has not) a PC soldier for."""
    return next(n for n in (f"Lookup{i}" for i in range(1000))
                if (Platform.PC in name_platforms(n)) is on_pc)


async def test_unknown_name_is_looked_up_then_chained(db_url: str, tmp_path: Path) -> None:
    name, absent = pc_name(), pc_name(on_pc=False)
    with simulator(speed=20, min_interval=0.5) as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, {
            "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "0.5", "BF4PS_IDLE_POLL_SECONDS": "0.2",
            "BF4PS_HEARTBEAT_SECONDS": "1"})
        fleet.start("web-interactive-01", "interactive-egress", "127.0.0.30", "interactive")
        async with connection(db_url) as conn:
            found = await submit(conn, platform="pc", name=name, client_key="t1",
                                 policy=Policy())
            missing = await submit(conn, platform="pc", name=absent,
                                   client_key="t1", policy=Policy())
            assert found.resources == ("lookup",) and found.soldier_id is None

            await wait_for(conn, "SELECT count(*) FROM interactive_requests WHERE status = "
                                 "'done' AND request_id = %(r)s", {"r": found.request_id},
                           timeout=60)
            await wait_for(conn, "SELECT count(*) FROM interactive_requests WHERE status = "
                                 "'not_found' AND request_id = %(r)s",
                           {"r": missing.request_id}, timeout=60)
            cur = await conn.execute("SELECT persona_id, platform, current_name FROM soldiers")
            assert await cur.fetchall() == [{"persona_id": persona_id_for(name, Platform.PC),
                                             "platform": "pc", "current_name": name}]
            assert await count(conn, "SELECT count(*) FROM collection_state WHERE "
                                     "status = 'current'") == 4
            assert await count(conn, "SELECT count(*) FROM detailed_stats_current") == 1
            assert await count(conn, "SELECT count(*) FROM soldier_weapon_stats") > 100
            cur = await conn.execute(
                "SELECT resource FROM collection_events WHERE event_type = 'started' "
                "ORDER BY event_id")
            started = [r["resource"] for r in await cur.fetchall()]
            # the first request's lookup, its soldier's resources chained right after it, then
            # the next request in FIFO order
            assert started[0] == "lookup" and started[5] == "lookup" and len(started) == 6
            assert sorted(started[1:5]) == ["detailed", "profile", "vehicles", "weapons"]
            cur = await conn.execute("SELECT status, message FROM interactive_requests "
                                     "WHERE request_id = %s", [missing.request_id])
            row = await cur.fetchone()
            assert row is not None and absent in row["message"]
