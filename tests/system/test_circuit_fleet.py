"""The fleet circuit breaker with real collector processes, a real simulator switched into a
failure mode in the middle of the run, and one PostgreSQL: nothing is parked, the circuit opens
and closes by itself, and collection resumes without an operator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from bf4ps import policy
from bf4ps.db.connect import Conn, connection
from bf4ps.sim.battlelog.server import SimProcess
from tests.fleet import Fleet, simulator
from tests.helpers import count, seed_work, wait_for

pytestmark = pytest.mark.slow

FAST = {"BF4PS_HEARTBEAT_SECONDS": "1", "BF4PS_IDLE_POLL_SECONDS": "0.3",
        "BF4PS_CLAIM_HORIZON_SECONDS": "0.5", "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "0.25"}
POLICY = {"circuit_window_seconds": "20", "circuit_min_soldiers": "4",
          "circuit_min_egresses": "2", "circuit_min_failure_share": "0.2",
          "circuit_probe_seconds": "1", "circuit_close_successes": "2",
          "circuit_hold_seconds": "900"}
# outage: (knobs that start it, knobs that end it, the signature, how many may be parked)
OUTAGES: dict[str, tuple[dict[str, Any], dict[str, Any], str, int]] = {
    "login_wall": ({"login_wall": "stats"}, {"login_wall": "none"}, "unrecognized:login_wall",
                   0),
    "unknown_error": ({"fault_unknown_error": 1.0}, {"fault_unknown_error": 0.0},
                      "unrecognized:unknown_error", 0),
    # every persona answered with Battlelog's 404 page (a changed URL scheme would do this):
    # a known not-found signal parks at once, so only the soldiers before the circuit opened
    # (fewer than circuit_min_soldiers, plus the 3 collectors' requests in flight) are parked
    "everything_404": ({"fault_unknown": 1.0}, {"fault_unknown": 0.0}, "not_found", 4 + 3),
}


def configure(sim: SimProcess, knobs: dict[str, Any]) -> None:
    httpx.post(sim.url("/__sim/config"), json=knobs, timeout=10).raise_for_status()


async def events(conn: Conn, kind: str) -> int:
    return await count(conn, "SELECT count(*) FROM collection_events WHERE event_type = %(k)s",
                       {"k": kind})


@pytest.mark.parametrize("outage", list(OUTAGES))
async def test_an_outage_mid_run_opens_and_closes_the_circuit_and_parks_nothing(
        db_url: str, tmp_path: Path, outage: str) -> None:
    start_outage, end_outage, signature, may_park = OUTAGES[outage]
    async with connection(db_url) as conn:
        await seed_work(conn, 400)
        for key, value in POLICY.items():
            await policy.set_value(conn, key, value, by="test")
    with simulator(speed=50, min_interval=0.0) as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, FAST)
        for n in (1, 2, 3):
            fleet.start(f"cb-{n}", f"cb-egress-{n}", f"127.0.0.{40 + n}")
        async with connection(db_url) as conn:
            await wait_for(conn, "SELECT count(*) >= 15 FROM collection_events "
                                 "WHERE event_type = 'succeeded'", timeout=90)
            configure(sim, start_outage)  # Battlelog changes under the running fleet
            await wait_for(conn, "SELECT count(*) FROM collection_events "
                                 "WHERE event_type = 'circuit_opened'", timeout=90)
            opened = await _one(conn, "SELECT details, result FROM collection_events "
                                      "WHERE event_type = 'circuit_opened'")
            # while open: only probes (and the requests already in flight) reach Battlelog
            await wait_for(conn, "SELECT count(*) >= 3 FROM collection_events "
                                 "WHERE event_type = 'circuit_probe'", timeout=60)
            failed_while_open = await count(conn, """
                SELECT count(*) FROM collection_events f WHERE f.event_type = 'failed'
                  AND f.occurred_at > (SELECT min(occurred_at) FROM collection_events
                                       WHERE event_type = 'circuit_opened')""")
            probes = await events(conn, "circuit_probe")
            held = await count(conn, "SELECT count(*) FROM circuit_holds")
            gauge_open = await count(conn, "SELECT count(*) FROM circuit_breakers "
                                           "WHERE state = 'open' AND lane = 'background' "
                                           "AND resource = 'detailed'")
            configure(sim, end_outage)  # Battlelog is back; nobody touches BF4PS
            await wait_for(conn, "SELECT count(*) FROM collection_events "
                                 "WHERE event_type = 'circuit_closed'", timeout=90)
            resumed_from = await events(conn, "succeeded")
            await wait_for(conn, "SELECT count(*) >= %(n)s FROM collection_events "
                                 "WHERE event_type = 'succeeded'", {"n": resumed_from + 20},
                           timeout=90)
            parked = await count(conn, "SELECT count(*) FROM collection_state "
                                       "WHERE status = 'unavailable'")
            unavailable_events = await events(conn, "unavailable")
            still_held = await count(conn, "SELECT count(*) FROM circuit_holds")
            state = await _one(conn, "SELECT state FROM circuit_breakers")
        codes = fleet.stop_all()
    assert set(codes.values()) == {0}
    assert opened["result"] == signature and opened["details"]["egresses"] >= 2
    assert opened["details"]["soldiers"] >= 4
    assert gauge_open == 1 and held > 100  # the pending work was held back, not failed
    # 3 collectors may each have had one request in flight when it opened; the rest are probes
    assert failed_while_open <= probes + 3, (failed_while_open, probes)
    assert parked <= may_park and unavailable_events == parked
    assert still_held == 0 and state["state"] == "closed"


async def _one(conn: Conn, sql: str) -> dict[str, Any]:
    cur = await conn.execute(sql)  # type: ignore[arg-type]
    row = await cur.fetchone()
    assert row is not None
    return dict(row)



async def test_a_run_of_soft_throttles_cools_the_egress(db_url: str, tmp_path: Path) -> None:
    """Battlelog answering `null` or a success without its stats on every request is a
    throttle in disguise: a run of them (policy soft_throttle_run) cools the egress down (an
    egress_throttled event with HTTP 200) and the jobs retry; nothing is parked."""
    async with connection(db_url) as conn:
        await seed_work(conn, 30)
    with simulator(speed=50, min_interval=0.0, fault_soft_throttle=1.0) as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, FAST | {
            "BF4PS_THROTTLE_COOLDOWN_SECONDS": "2", "BF4PS_THROTTLE_COOLDOWN_MAX_SECONDS": "4"})
        fleet.start("soft-1", "soft-egress", "127.0.0.45")
        async with connection(db_url) as conn:
            await wait_for(conn, "SELECT count(*) >= 2 FROM collection_events "
                                 "WHERE event_type = 'egress_throttled' AND http_status = 200",
                           timeout=60)
            configure(sim, {"fault_soft_throttle": 0.0})
            await wait_for(conn, "SELECT count(*) >= 3 FROM collection_events "
                                 "WHERE event_type = 'succeeded'", timeout=60)
            soft = await count(conn, "SELECT count(*) FROM collection_events WHERE "
                                     "event_type = 'failed' AND details->>'signature' = "
                                     "'malformed:soft_throttle'")
            parked = await count(conn, "SELECT count(*) FROM collection_state "
                                       "WHERE status = 'unavailable'")
        assert fleet.stop_all() == {"soft-1": 0}
    assert soft >= 2 and parked == 0
