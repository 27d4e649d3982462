"""Skewed host clocks on the multi-host bed (tests/netns): a collector whose host clock is
±0.5 s off shares its egress with a true-time collector on the same host and the simulator,
on its own host, sees no spacing violation; one ±5 s off takes no slots and says so (a
clock_skew event, status) while the collectors of the other hosts carry on, and takes slots
again once its clock is put right. The clocks are libfaketime's (tests/clocks.py)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest

from bf4ps.db.connect import Conn, connection
from tests import load
from tests.clocks import SkewedClock
from tests.helpers import count, seed_work, wait_for
from tests.netns.bed import Bed
from tests.procs import bf4ps_env

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("netns")]

FLEET = {"BF4PS_HEARTBEAT_SECONDS": "1", "BF4PS_IDLE_POLL_SECONDS": "0.3",
         "BF4PS_CLAIM_HORIZON_SECONDS": "0.5", "BF4PS_CLOCK_CHECK_SECONDS": "1",
         "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "1.0", "BF4PS_EGRESS_SAFETY_MARGIN_SECONDS": "0.2",
         "BF4PS_THROTTLE_COOLDOWN_SECONDS": "1", "BF4PS_THROTTLE_COOLDOWN_MAX_SECONDS": "2"}
SENT = 25  # requests from the shared egress's address, as in the run that found the fault


async def _sent_from(bed: Bed, n: int, total: int, timeout: float) -> dict[str, object]:
    """Wait until host n's address has sent `total` requests; its counters at the simulator."""
    addr = bed.net.egress_addr(n)
    deadline = load.deadline(timeout)
    while True:
        ip = dict(bed.sim_stats()["by_ip"].get(addr, {}))
        if int(ip.get("count", 0)) >= total:
            return ip
        assert not deadline.expired(), f"{addr} sent fewer than {total} in {timeout} s: {ip}"
        await asyncio.sleep(0.5)


async def _served(conn: Conn, name: str) -> int:
    return await count(conn, "SELECT count(*) FROM collection_events WHERE event_type = "
                             "'succeeded' AND collector_name = %(n)s", {"n": name})


@pytest.fixture
async def slow_answers(bed: Bed) -> AsyncIterator[None]:
    # answers take longer than the spacing: the two collectors of one egress take its slots in
    # turn (with instant answers the faster one could win every slot and nothing be shown)
    bed.sim_config(speed=0.5, penalty=0)
    try:
        yield
    finally:
        bed.sim_config(speed=20, penalty=1)


@pytest.mark.parametrize("skew", [0.5, -0.5])
async def test_a_host_clock_half_a_second_off_keeps_its_egress_spacing(
        bed: Bed, netdb: str, slow_answers: None, skew: float) -> None:
    tag = "ahead" if skew > 0 else "behind"
    true, skewed = f"true-{tag}", f"skewed-{tag}"
    clock = SkewedClock(bed.root, skewed, skew)
    violations = int(bed.sim_stats()["violations"]["total"])
    async with connection(bed.observer_url(netdb)) as conn:
        await seed_work(conn, 200)
        before = dict(bed.sim_stats()["by_ip"].get(bed.net.egress_addr(1), {}))
        bed.start(1, true, "e1", netdb, FLEET)
        bed.start(1, skewed, "e1", netdb, FLEET, env_extra=clock.env())
        ip = await _sent_from(bed, 1, int(before.get("count", 0)) + SENT, timeout=180)
        served = {n: await _served(conn, n) for n in (true, skewed)}
        cur = await conn.execute("SELECT clock_offset_seconds AS o FROM collectors "
                                 "WHERE collector_name = %s", [skewed])
        measured = (await cur.fetchone() or {}).get("o")
        skews = await count(conn, "SELECT count(*) FROM collection_events "
                                  "WHERE event_type = 'clock_skew'")
    codes = await asyncio.to_thread(bed.stop_collectors)
    assert set(codes.values()) == {0}, {n: bed.log(n)[-1500:] for n in codes}
    assert measured is not None and abs(measured + skew) < 0.05, measured  # db - host
    assert skews == 0  # within the 1 s bound: it kept working
    assert min(served.values()) >= SENT // 4, served  # the two shared the egress
    stats = bed.sim_stats()["violations"]
    assert int(stats["total"]) == violations, (
        f"min spacing {ip.get('min_spacing_seconds')} s < 1 s: {stats['recent'][:5]}")


def _status(netdb: str, bed: Bed) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-m", "bf4ps.cli.main", "status", "--json"],
                         env=bf4ps_env(BF4PS_DATABASE_URL=bed.observer_url(netdb)),
                         capture_output=True, text=True, timeout=60, check=True)
    return dict(json.loads(out.stdout))


@pytest.mark.parametrize("skew", [5.0, -5.0])
async def test_a_host_clock_five_seconds_off_takes_no_slots_and_the_others_carry_on(
        bed: Bed, netdb: str, skew: float) -> None:
    tag = "ahead" if skew > 0 else "behind"
    far = f"far-{tag}"
    clock = SkewedClock(bed.root, far, skew)
    async with connection(bed.observer_url(netdb)) as conn:
        await seed_work(conn, 300)
        bed.start(1, far, "e1", netdb, FLEET, env_extra=clock.env())
        bed.start(2, f"near2-{tag}", "e2", netdb, FLEET)
        bed.start(3, f"near3-{tag}", "e3", netdb, FLEET)
        await wait_for(conn, "SELECT count(*) FROM collection_events WHERE event_type = "
                             "'clock_skew' AND collector_name = %(n)s", {"n": far}, timeout=60)
        await wait_for(conn, "SELECT count(DISTINCT collector_name) = 2 AND count(*) >= 10 "
                             "FROM collection_events WHERE event_type = 'succeeded'", timeout=90)
        assert await count(conn, "SELECT count(*) FROM request_ledger WHERE collector_uuid = "
                                 "(SELECT collector_uuid FROM collectors "
                                 "WHERE collector_name = %(n)s)", {"n": far}) == 0
        report = await asyncio.to_thread(_status, netdb, bed)
        shown = {c["name"]: c for c in report["collectors"]}  # type: ignore[union-attr]
        assert shown[far]["clock_skewed"], shown[far]
        clock.set(0.0)  # its host's time sync is repaired
        await wait_for(conn, "SELECT count(*) FROM collection_events WHERE event_type = "
                             "'clock_restored' AND collector_name = %(n)s", {"n": far},
                       timeout=60)
        await wait_for(conn, "SELECT count(*) > 0 FROM collection_events WHERE event_type = "
                             "'succeeded' AND collector_name = %(n)s", {"n": far}, timeout=60)
        assert await count(conn, "SELECT count(*) FROM collection_events "
                                 "WHERE event_type = 'clock_skew'") == 1  # said once
    codes = await asyncio.to_thread(bed.stop_collectors)
    assert set(codes.values()) == {0}, {n: bed.log(n)[-1500:] for n in codes}
