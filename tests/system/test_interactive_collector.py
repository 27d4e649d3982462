"""The interactive lane end to end with a real collector process: an unknown name becomes a
lookup, the lookup finds the soldier through the (simulated) Battlelog search, and the same
collector chains the soldier's four resources; a name that does not exist ends not-found."""

from __future__ import annotations

from pathlib import Path

import pytest

from bf4ps.db.connect import connection
from bf4ps.domain import Platform
from bf4ps.interactive.submit import submit
from bf4ps.interactive.target import parse_target
from bf4ps.policy import Policy
from bf4ps.sim.battlelog.lookup import name_platforms
from bf4ps.sim.personas import persona_id_for
from tests.fleet import Fleet, sim_stats, simulator
from tests.helpers import count, wait_for

pytestmark = pytest.mark.slow


def pc_name(on_pc: bool = True) -> str:
    """A name the simulated Battlelog has (or has not) a PC soldier for."""
    return next(n for n in (f"Lookup{i}" for i in range(1000))
                if (Platform.PC in name_platforms(n)) is on_pc)


async def test_unknown_name_is_looked_up_then_chained(db_url: str, tmp_path: Path) -> None:
    name, absent = pc_name(), pc_name(on_pc=False)
    # a search without the check-sum of a session the start page opened would be refused
    # (retried, never ending not-found)
    with simulator(speed=20, min_interval=0.5, search_check_sum="required") as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, {
            "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "0.5", "BF4PS_IDLE_POLL_SECONDS": "0.2",
            "BF4PS_HEARTBEAT_SECONDS": "1"})
        fleet.start("web-interactive-01", "interactive-egress", "127.0.0.30", "interactive")
        async with connection(db_url) as conn:
            found = await submit(conn, parse_target(platform="pc", name=name), client_key="t1",
                                 policy=Policy())
            missing = await submit(conn, parse_target(platform="pc", name=absent), client_key="t1",
                                   policy=Policy())
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
                "SELECT resource FROM collection_events_log WHERE event_type = 'started' "
                "ORDER BY occurred_at, event_id")
            started = [r["resource"] for r in await cur.fetchall()]
            # the first request's lookup, its soldier's resources chained right after it, then
            # the next request in FIFO order
            assert started[0] == "lookup" and started[5] == "lookup" and len(started) == 6
            assert sorted(started[1:5]) == ["detailed", "profile", "vehicles", "weapons"]
            cur = await conn.execute("SELECT status, message FROM interactive_requests "
                                     "WHERE request_id = %s", [missing.request_id])
            row = await cur.fetchone()
            assert row is not None and absent in row["message"]
            # one session for the collector's two searches: it took the first lookup's slot,
            # the search the next one, both admitted and in the ledger
            cur = await conn.execute(
                "SELECT event_type, details FROM collection_events WHERE resource = 'lookup' "
                "AND event_type IN ('succeeded', 'failed') ORDER BY event_id")
            concluded = await cur.fetchall()
            assert [e["details"].get("session_opened") for e in concluded] == [1, None]
            assert [e["details"]["check_sum"] for e in concluded] == [1, 1]
            counted = await count(conn, "SELECT count(*) FROM counted_requests")
        wire = sim_stats(sim)
        # the profile's account soldiers are a further request with one try at its slot: on a
        # busy machine a late slot drops it (never sent late, never counted); a whole run saw
        # that once. Either way what was counted is exactly what Battlelog received.
        linked = wire["by_resource"].get("soldiers", 0)
        assert linked in (0, 1)
        # a session, two searches, four resources and the profile's account soldiers
        assert counted == 1 + 2 + 4 + linked
        assert {r: n for r, n in wire["by_resource"].items() if n} == {
            "index": 1, "search": 2, "detailed": 1, "profile": 1, "weapons": 1,
            "vehicles": 1} | ({"soldiers": 1} if linked else {})
        assert {o: n for o, n in wire["by_outcome"].items() if n} == {"ok": 7 + linked}
