"""A lane's outage with real collectors: all four resources queued, 2 background egresses, the
default circuit policy but for a probe interval of 15 s (the default's 60 s would only make the
outage longer to watch). A login wall (or a 503 with Retry-After) switched on mid-run opens every
circuit of the lane within 15 s; while it lasts (over two probe intervals, so probes follow one
another) the lane gets at most one probe per probe interval, at the wire too; nothing is parked;
after the heal every circuit closes and collection resumes within one probe interval."""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from bf4ps import policy
from bf4ps.db.connect import Conn, connection
from tests.fleet import Fleet, sim_stats, simulator
from tests.helpers import count, seed_work, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.long]  # minutes: run first (tests/conftest.py)

FAST = {"BF4PS_HEARTBEAT_SECONDS": "1", "BF4PS_IDLE_POLL_SECONDS": "0.3",
        "BF4PS_CLAIM_HORIZON_SECONDS": "0.5", "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "0.25"}
PROBE = 15.0  # circuit_probe_seconds (the default policy's is 60 s)
RESOURCES = ("detailed", "profile", "weapons", "vehicles")
IPS = ("127.0.0.71", "127.0.0.72")
OUTAGES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "login_wall": ({"login_wall": "stats"}, {"login_wall": "none"}),
    "retry_after_503": ({"fault_retry_after": 1.0, "retry_after_seconds": 3},
                        {"fault_retry_after": 0.0}),
}


def configure(url: str, knobs: dict[str, Any]) -> None:
    httpx.post(url, json=knobs, timeout=10).raise_for_status()


async def epochs(conn: Conn, kind: str, result: str | None = None) -> list[float]:
    """When each event of a kind (and result) happened, in order (epoch seconds)."""
    cur = await conn.execute(
        "SELECT extract(epoch FROM occurred_at) AS t FROM collection_events WHERE event_type = "
        "%(k)s AND (%(r)s::text IS NULL OR result = %(r)s) ORDER BY occurred_at",
        {"k": kind, "r": result})
    return [float(r["t"]) for r in await cur.fetchall()]


@pytest.mark.parametrize("outage", list(OUTAGES))
async def test_a_lane_outage_opens_every_circuit_probes_once_an_interval_and_heals(
        db_url: str, tmp_path: Path, outage: str) -> None:
    start, end = OUTAGES[outage]
    async with connection(db_url) as conn:
        await policy.set_value(conn, "circuit_probe_seconds", str(PROBE), by="test")
        await seed_work(conn, 200, RESOURCES)
    with simulator(speed=50, min_interval=0.0) as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, FAST)
        for n, ip in enumerate(IPS, 1):
            fleet.start(f"lo-{n}", f"lo-egress-{n}", ip)
        async with connection(db_url) as conn:
            await wait_for(conn, "SELECT count(*) >= 10 FROM collection_events "
                                 "WHERE event_type = 'succeeded'", timeout=120,
                           context=fleet.tails)
            switched = time.time()
            configure(sim.url("/__sim/config"), start)
            await wait_for(conn, "SELECT count(*) = 4 FROM circuit_breakers "
                                 "WHERE state = 'open' AND lane = 'background'", timeout=60,
                           context=fleet.tails)
            opened = await epochs(conn, "circuit_opened")
            wire_open = sum(sim_stats(sim)["by_ip"][ip]["count"] for ip in IPS)
            await asyncio.sleep(PROBE * 2.3)  # the outage lasts over two probe intervals
            wire_healed = sum(sim_stats(sim)["by_ip"][ip]["count"] for ip in IPS)
            healed = time.time()
            configure(sim.url("/__sim/config"), end)
            await wait_for(conn, "SELECT count(*) >= 4 FROM collection_events "
                                 "WHERE event_type = 'circuit_closed'", timeout=PROBE * 2,
                           context=fleet.tails)
            closed = await epochs(conn, "circuit_closed")
            probes = await epochs(conn, "circuit_probe", "released")
            resumed_from = await count(conn, "SELECT count(*) FROM collection_events "
                                             "WHERE event_type = 'succeeded'")
            await wait_for(conn, "SELECT count(*) >= %(n)s FROM collection_events "
                                 "WHERE event_type = 'succeeded'", {"n": resumed_from + 10},
                           timeout=60, context=fleet.tails)
            parked = await count(conn, "SELECT count(*) FROM collection_state "
                                       "WHERE status = 'unavailable'")
        codes = fleet.stop_all()
    print(f"{outage}: opened {max(opened) - switched:.1f} s after the switch, {len(probes)} "
          f"probes, closed {max(closed) - healed:.1f} s after the heal, "
          f"{wire_healed - wire_open} requests while open")
    assert set(codes.values()) == {0}
    assert len(opened) == 4 and max(opened) - switched <= 15.0, opened
    during = [t for t in probes if t < healed]
    assert all(b - a >= PROBE * 0.9 for a, b in itertools.pairwise(during)), during
    # on the wire while open: the probes, and each egress's request in flight when it opened
    assert wire_healed - wire_open <= len(during) + len(IPS), (wire_healed - wire_open, during)
    assert len(closed) == 4 and max(closed) - healed <= PROBE + 10.0, closed
    assert parked == 0
