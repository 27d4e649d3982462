"""A fleet that runs logged in: the simulator gated (stats need a valid logged-in session),
two collectors with a session file each. When the simulator ends one session, that egress
sends nothing more after its first walled answer, an event names it, the others go on,
nothing is parked; a renewed session file resumes it without a restart."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from bf4ps.db.connect import connection
from bf4ps.sim.battlelog.server import SimProcess
from tests import load
from tests.fleet import Fleet, sim_stats, simulator
from tests.helpers import count, seed_work, wait_for

pytestmark = pytest.mark.slow

FAST = {"BF4PS_HEARTBEAT_SECONDS": "1", "BF4PS_IDLE_POLL_SECONDS": "0.3",
        "BF4PS_CLAIM_HORIZON_SECONDS": "0.5", "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "0.25"}
IPS = {"se-egress-1": "127.0.0.51", "se-egress-2": "127.0.0.52"}
EXPIRED = ("SELECT count(*) FROM collection_events WHERE event_type = 'session_expired' "
           "AND egress_key = 'se-egress-1'")


def log_in(sim: SimProcess) -> str:
    answer = httpx.post(sim.url("/__sim/login"), timeout=10)
    answer.raise_for_status()
    return str(answer.json()["session"])


def write_session(path: Path, session: str) -> None:
    """As an operator renews it: the whole file at once (written aside, then renamed)."""
    aside = path.with_suffix(".new")
    aside.write_text(session + "\n")
    aside.replace(path)


def arrivals(sim: SimProcess, ip: str) -> int:
    return int(sim_stats(sim)["by_ip"].get(ip, {}).get("count", 0))


async def test_a_dead_session_stops_its_egress_alone_and_a_renewed_file_resumes_it(
        db_url: str, tmp_path: Path) -> None:
    async with connection(db_url) as conn:
        await seed_work(conn, 400)
    with simulator(speed=50, min_interval=0.0, login_wall="stats") as sim:
        files = {egress: tmp_path / f"{egress}.session" for egress in IPS}
        sessions = {egress: log_in(sim) for egress in IPS}
        for egress, path in files.items():
            write_session(path, sessions[egress])
        fleet = Fleet(db_url, sim.base_url, tmp_path, FAST)
        for n, (egress, ip) in enumerate(IPS.items(), 1):
            fleet.start(f"se-{n}", egress, ip,
                        env={"BF4PS_BATTLELOG_SESSION_FILE": str(files[egress])})
        async with connection(db_url) as conn:
            await wait_for(conn, "SELECT count(DISTINCT egress_key) = 2 FROM collection_events "
                                 "WHERE event_type = 'succeeded'", timeout=120,
                           context=fleet.tails)
            walled_before = sim_stats(sim)["by_outcome"].get("login_wall", 0)
            ended = httpx.post(sim.url("/__sim/logout"), timeout=10,
                               json={"session": sessions["se-egress-1"]})
            assert ended.json() == {"expired": True}
            await wait_for(conn, EXPIRED, timeout=60, context=fleet.tails)
            stopped_at = arrivals(sim, IPS["se-egress-1"])
            others_at = arrivals(sim, IPS["se-egress-2"])
            # the other egress goes on (4 more of its requests, however long the machine
            # takes), while the dead one stays quiet all that time
            deadline = load.deadline(30)
            while arrivals(sim, IPS["se-egress-2"]) - others_at < 4:
                assert not deadline.expired(), fleet.tails()
                await asyncio.sleep(0.2)
            quiet = arrivals(sim, IPS["se-egress-1"]) - stopped_at
            others = arrivals(sim, IPS["se-egress-2"]) - others_at
            walled = sim_stats(sim)["by_ip"][IPS["se-egress-1"]]["by_outcome"]["login_wall"]
            # renewed: a new login written to the same file resumes it, no restart
            write_session(files["se-egress-1"], log_in(sim))
            await wait_for(conn, "SELECT count(*) FROM collection_events "
                                 "WHERE event_type = 'session_renewed' AND egress_key = "
                                 "'se-egress-1'",
                           timeout=60, context=fleet.tails)
            resumed_from = await count(conn, "SELECT count(*) FROM collection_events WHERE "
                                             "event_type = 'succeeded' AND egress_key = "
                                             "'se-egress-1'")
            await wait_for(conn, "SELECT count(*) > %(n)s FROM collection_events WHERE "
                                 "event_type = 'succeeded' AND egress_key = 'se-egress-1'",
                           {"n": resumed_from}, timeout=60, context=fleet.tails)
            expiries = await count(conn, EXPIRED)
            parked = await count(conn, "SELECT count(*) FROM collection_state "
                                       "WHERE status = 'unavailable'")
            opened = await count(conn, "SELECT count(*) FROM circuit_breakers "
                                       "WHERE state = 'open'")
        codes = fleet.stop_all()
    assert set(codes.values()) == {0}, fleet.tails()
    assert walled_before == 0
    assert 1 <= walled <= 2, walled  # it stopped within 2 answers of the wall
    assert quiet == 0, quiet  # ... and sent nothing while its session was dead
    assert others >= 4, others  # the other egress went on
    assert expiries == 1 and parked == 0 and opened == 0
