"""The simulator's streak soft throttle against a real collector: an IP over its rate gets
empty answers (HTTP 200 successes without their stats) for the penalty. The collector's egress
must cool down within the rule's k answers (policy soft_throttle_run: 4) and send nothing
during the cool-down, judged at the wire by the simulator's own arrival times."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path

import pytest

from bf4ps.db.connect import connection
from bf4ps.policy import Policy
from tests.fleet import Fleet, sim_stats, simulator
from tests.helpers import count, seed_work, wait_for

pytestmark = pytest.mark.slow

FAST = {"BF4PS_HEARTBEAT_SECONDS": "1", "BF4PS_IDLE_POLL_SECONDS": "0.3",
        "BF4PS_CLAIM_HORIZON_SECONDS": "0.5"}
SOFT = ("throttled", "penalty")  # the simulator's outcomes of the streak's empty answers


async def test_a_soft_throttle_streak_cools_the_egress_within_k_answers(
        db_url: str, tmp_path: Path) -> None:
    k = Policy().soft_throttle_run
    async with connection(db_url) as conn:
        await seed_work(conn, 60)
    # Battlelog allows one request per 2 s; the collector is paced at 1 s: its 2nd request is
    # over the rate, and every answer of the next 30 s is empty
    with simulator(speed=50, min_interval=2.0, penalty=30.0, throttle_status="soft") as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, FAST | {
            "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "1.0",
            "BF4PS_THROTTLE_COOLDOWN_SECONDS": "4", "BF4PS_THROTTLE_COOLDOWN_MAX_SECONDS": "8"})
        fleet.start("soft-1", "soft-egress", "127.0.0.12")
        async with connection(db_url) as conn:
            await wait_for(conn, "SELECT count(*) >= 2 FROM collection_events "
                                 "WHERE event_type = 'egress_throttled'", timeout=120,
                           context=fleet.tails)
            await asyncio.sleep(1)
            codes = fleet.stop_all()
            stats = sim_stats(sim)
            cools = await (await conn.execute(
                "SELECT occurred_at, resource, result, details FROM collection_events "
                "WHERE event_type = 'egress_throttled' ORDER BY occurred_at")).fetchall()
            parked = await count(conn, "SELECT count(*) FROM collection_state "
                                       "WHERE status = 'unavailable'")
    assert set(codes.values()) == {0}
    arrivals = stats["by_ip"]["127.0.0.12"]["recent"]
    assert stats["by_ip"]["127.0.0.12"]["count"] == len(arrivals)  # none dropped from the list
    first = cools[0]["occurred_at"].timestamp()
    soft_before = [o for at, o in arrivals if at < first and o in SOFT]
    assert 1 <= len(soft_before) <= k, (soft_before, arrivals)  # cooled within k answers
    for cool in cools:
        assert (cool["resource"], cool["result"]) == ("detailed", "soft_throttle")
        start = cool["occurred_at"].timestamp()
        until = datetime.fromisoformat(cool["details"]["cooldown_until"]).timestamp()
        inside = [(at, o) for at, o in arrivals if start < at < until]
        assert inside == [], (cool, inside)  # nothing sent during the cool-down
    assert parked == 0  # the soft answers' jobs are retried, never parked
