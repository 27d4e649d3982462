"""Found by the chaos run (a fleet window of 31 requests under a budget of 30, with no per-IP
violation): the fleet budget's fast path ignores the safety margin.

admission._fleet counts ledger slots in (slot − W, …] and accepts the candidate slot when fewer
than N are there (budget.earliest_slot's fast path). A slot that left the window a moment ago
is not counted, so N + 1 consecutive slots may span only a hair more than W. Every request may
leave up to margin/2 after its slot (collector/work.py on_time) and arrive later still; when
that older request left a little late, the simulator (or Battlelog) sees N + 1 requests inside
one window. The slow path keeps N + 1 slots at least W + margin apart (nth_latest + W +
margin); the fast path should count slots in (slot − W − margin, …] to keep the same promise."""

from __future__ import annotations

from pathlib import Path

from bf4ps.db.connect import Conn
from bf4ps.gates import admission
from bf4ps.gates.admission import Admitted
from bf4ps.settings import SendTimings
from tests.helpers import FLEET_CONFIGURE, GATE_ENSURE, make_collector, seed_work

N, W, MARGIN = 3, 2.0, 0.2
GATE = SendTimings(margin=MARGIN, horizon=5.0, lease_seconds=30.0)


async def test_the_fleet_budget_keeps_its_safety_margin_when_a_slot_just_left_the_window(
        conn: Conn, tmp_path: Path) -> None:
    await seed_work(conn, 3)
    me = await make_collector(conn, tmp_path, "budget-edge", egress="eg-budget")
    await conn.execute(GATE_ENSURE, {"egress_key": "eg-budget", "min_interval": 0.1,
                                          "window_requests": None, "window_seconds": None})
    await conn.execute(FLEET_CONFIGURE, {"requests": N, "window_seconds": W})
    # N requests in the last W + a few ms: the oldest has only just left the rolling window
    await conn.execute(
        "INSERT INTO request_ledger (slot_at, egress_key, budget_class) VALUES "
        "(clock_timestamp() - interval '2.02 s', 'eg-other', 'bootstrap'), "
        "(clock_timestamp() - interval '1.0 s', 'eg-other', 'bootstrap'), "
        "(clock_timestamp() - interval '0.5 s', 'eg-other', 'bootstrap')")
    got = await admission.admit(conn, me, GATE)
    assert isinstance(got, Admitted)
    cur = await conn.execute(f"SELECT slot_at FROM request_ledger ORDER BY slot_at DESC "
                             f"LIMIT {N + 1}")
    slots = [r["slot_at"] for r in await cur.fetchall()]
    span = (slots[0] - slots[-1]).total_seconds()
    # what the slow path guarantees (nth_latest + W + margin), so a request that leaves up to
    # margin/2 late can never make N + 1 arrivals in one window
    assert span >= W + MARGIN, (
        f"{N + 1} consecutive slots span {span:.3f} s < window {W} s + margin {MARGIN} s")
