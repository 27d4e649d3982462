"""Collectors on hosts with skewed clocks (real processes under libfaketime, tests/clocks.py)
against the Battlelog simulator, which counts per-source-IP spacing violations at its own
clock. Send slots are PostgreSQL times: a collector that waited for them on its own clock sent
0.5 s early or late and crowded the other collector of its egress (0.3 s of skew made 5
violations in 25 requests). Each collector now measures its offset to the database and times
its sends on database time; beyond its bound it takes no slots and says so."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bf4ps.db.connect import Conn, connection
from bf4ps.sim.battlelog.server import SimProcess
from tests import load
from tests.clocks import SkewedClock
from tests.fleet import Fleet, sim_stats, simulator
from tests.helpers import count, seed_work, wait_for
from tests.procs import bf4ps_env

pytestmark = pytest.mark.slow

FAST = {"BF4PS_HEARTBEAT_SECONDS": "1", "BF4PS_IDLE_POLL_SECONDS": "0.3",
        "BF4PS_CLAIM_HORIZON_SECONDS": "0.5", "BF4PS_CLOCK_CHECK_SECONDS": "1",
        "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "1.0", "BF4PS_EGRESS_SAFETY_MARGIN_SECONDS": "0.2",
        # a throttle (the answer to a violation) cools down briefly: the run goes on to count
        "BF4PS_THROTTLE_COOLDOWN_SECONDS": "1", "BF4PS_THROTTLE_COOLDOWN_MAX_SECONDS": "2"}
SENT = 25  # requests at the simulator, as in the run that found it


async def arrivals(sim: SimProcess, n: int, *, timeout: float) -> None:
    """Wait until `n` requests have reached the simulator."""
    deadline = load.deadline(timeout)
    while sim_stats(sim)["requests_total"] < n:
        if deadline.expired():
            raise AssertionError(f"fewer than {n} requests in {timeout} s: {sim_stats(sim)}")
        await asyncio.sleep(0.5)


async def offset_of(conn: Conn, name: str) -> float | None:
    cur = await conn.execute("SELECT clock_offset_seconds AS o FROM collectors "
                             "WHERE collector_name = %s", [name])
    row = await cur.fetchone()
    return None if row is None else row["o"]


@pytest.mark.parametrize("skew", [0.5, -0.5])
async def test_a_collector_half_a_second_off_keeps_its_egress_spacing(
        db_url: str, tmp_path: Path, skew: float) -> None:
    async with connection(db_url) as conn:
        await seed_work(conn, 200)
    clock = SkewedClock(tmp_path, "skewed", skew)
    # answers take 1.2-2 s (speed 0.5), longer than the 1.2 s spacing: a collector is still busy
    # with its request when the next slot is handed out, so the two take the egress's slots in
    # turn and every gap at the simulator is between the true clock and the skewed one
    with simulator(speed=0.5, min_interval=1.0, penalty=0) as sim:  # violations counted, served
        fleet = Fleet(db_url, sim.base_url, tmp_path, FAST)
        fleet.start("true-time", "egress-shared", "127.0.0.2")
        fleet.start("skewed", "egress-shared", "127.0.0.2", env=clock.env())
        await arrivals(sim, SENT, timeout=180)
        async with connection(db_url) as conn:
            measured = await offset_of(conn, "skewed")
            served = {name: await count(conn, "SELECT count(*) FROM collection_events WHERE "
                                              "event_type = 'succeeded' AND collector_name = "
                                              "%(n)s", {"n": name})
                      for name in ("true-time", "skewed")}
            skew_events = await count(conn, "SELECT count(*) FROM collection_events WHERE "
                                            "event_type = 'clock_skew'")
        codes = fleet.stop_all()
        stats = sim_stats(sim)
    assert set(codes.values()) == {0}, {n: fleet.log(n)[-1500:] for n in codes}
    # the collector measured its own skew: database time minus its clock
    assert measured is not None and abs(measured + skew) < 0.05, measured
    assert skew_events == 0  # within the 1 s bound: it kept working
    assert min(served.values()) >= SENT // 3, served  # both collectors shared the egress
    ip = stats["by_ip"]["127.0.0.2"]
    assert ip["count"] >= SENT, ip
    assert stats["violations"]["total"] == 0, (
        f"min spacing {ip['min_spacing_seconds']:.3f} s < 1 s: "
        f"{stats['violations']['recent'][:5]}")


def status_json(db_url: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-m", "bf4ps.cli.main", "status", "--json"],
                         env=bf4ps_env(BF4PS_DATABASE_URL=db_url), capture_output=True,
                         text=True, timeout=60, check=True)
    return dict(json.loads(out.stdout))


def status_text(db_url: str) -> str:
    return subprocess.run([sys.executable, "-m", "bf4ps.cli.main", "status"],
                          env=bf4ps_env(BF4PS_DATABASE_URL=db_url), capture_output=True,
                          text=True, timeout=60, check=True).stdout


@pytest.mark.parametrize("skew", [5.0, -5.0])
async def test_a_collector_five_seconds_off_takes_no_slots_says_so_and_resumes(
        db_url: str, tmp_path: Path, skew: float) -> None:
    async with connection(db_url) as conn:
        await seed_work(conn, 200)
    clock = SkewedClock(tmp_path, "far-off", skew)
    # slow answers (as above): once back, far-off takes egress-f's slots in turn with steady-2
    # instead of racing an idle steady-2 for each one
    with simulator(speed=0.5, min_interval=1.0, penalty=0) as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, FAST)
        fleet.start("far-off", "egress-f", "127.0.0.3", env=clock.env())
        fleet.start("steady-1", "egress-1", "127.0.0.4")
        fleet.start("steady-2", "egress-f", "127.0.0.3")
        async with connection(db_url) as conn:
            await wait_for(conn, "SELECT count(*) FROM collection_events WHERE event_type = "
                                 "'clock_skew' AND collector_name = 'far-off'", timeout=60)
            # the others carry on while it waits
            await wait_for(conn, "SELECT count(DISTINCT collector_name) = 2 FROM "
                                 "collection_events WHERE event_type = 'succeeded'",
                           timeout=60)
            await wait_for(conn, "SELECT count(*) >= 10 FROM collection_events WHERE "
                                 "event_type = 'succeeded'", timeout=60)
            uuid_sql = "(SELECT collector_uuid FROM collectors WHERE collector_name = 'far-off')"
            assert await count(conn, f"SELECT count(*) FROM request_ledger WHERE "
                                     f"collector_uuid = {uuid_sql}") == 0
            report = status_json(db_url)
            text = status_text(db_url)
            clock.set(0.0)  # its time sync is repaired
            await wait_for(conn, "SELECT count(*) FROM collection_events WHERE event_type = "
                                 "'clock_restored' AND collector_name = 'far-off'", timeout=60)
            await wait_for(conn, "SELECT count(*) FROM collection_events WHERE event_type = "
                                 "'succeeded' AND collector_name = 'far-off'", timeout=60)
            skew_events = await count(conn, "SELECT count(*) FROM collection_events WHERE "
                                            "event_type = 'clock_skew'")
            cur = await conn.execute("SELECT details FROM collection_events WHERE event_type "
                                     "= 'clock_skew'")
            details = (await cur.fetchone() or {})["details"]
        codes = fleet.stop_all()
        stats = sim_stats(sim)
    assert set(codes.values()) == {0}, {n: fleet.log(n)[-1500:] for n in codes}
    assert skew_events == 1  # once, on the transition, though it was measured every second
    assert abs(details["offset_seconds"] + skew) < 0.1 and details["limit_seconds"] == 1.0
    by_name = {c["name"]: c for c in report["collectors"]}  # type: ignore[union-attr]
    far = by_name["far-off"]
    assert far["clock_skewed"] is True and abs(far["clock_offset_seconds"] + skew) < 0.1, far
    assert by_name["steady-1"]["clock_skewed"] is False
    assert abs(by_name["steady-1"]["clock_offset_seconds"]) < 0.05
    far_line = next(line for line in text.splitlines() if "far-off" in line)
    assert "SKEWED: taking no send slots" in far_line, text
    log = fleet.log("far-off")
    assert log.count("taking no send slots until it is back within") == 1, log[-2000:]
    assert log.count("taking send slots again") == 1, log[-2000:]
    assert stats["violations"]["total"] == 0, stats["violations"]["recent"][:5]
