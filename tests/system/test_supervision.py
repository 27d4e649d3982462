"""Supervised collector processes: a lease the heartbeat finds lost ends the process non-zero
(systemd restarts it) with its job left to the fence; disable and drain reach a collector that
waits at a gate closed for minutes within one heartbeat period."""

from __future__ import annotations

import asyncio
import re
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from bf4ps.collector.supervise import EXIT_FAILED
from bf4ps.db.connect import Conn, connection
from bf4ps.fleet import collectors as control
from tests import load
from tests.fleet import Fleet, simulator
from tests.helpers import count, seed_work, wait_for

pytestmark = pytest.mark.slow

FAST = {"BF4PS_HEARTBEAT_SECONDS": "1", "BF4PS_IDLE_POLL_SECONDS": "0.3",
        "BF4PS_CLAIM_HORIZON_SECONDS": "0.5", "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "0.5",
        "BF4PS_LOG_LEVEL": "DEBUG"}


async def exit_code(proc: subprocess.Popen[str], timeout: float) -> int:
    """The process's exit code, waited for with a deadline (AssertionError when it lives)."""
    try:
        return await asyncio.to_thread(proc.wait, timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"process {proc.pid} still running after {timeout} s") from None


async def log_says(fleet: Fleet, name: str, text: str, timeout: float = 30) -> None:
    deadline = load.deadline(timeout)
    while text not in fleet.log(name):
        if deadline.expired():
            raise AssertionError(f"{name} never logged {text!r}: {fleet.log(name)[-1500:]}")
        await asyncio.sleep(0.1)


async def test_a_lease_lost_under_a_running_request_stops_the_process_non_zero(
        db_url: str, tmp_path: Path) -> None:
    async with connection(db_url) as conn:
        await seed_work(conn, 3)
    with simulator(speed=1.0, min_interval=0, timeout_hold=60) as sim:
        httpx.post(sim.url("/__sim/config"), json={"fault_timeout": 1.0}, timeout=10)
        # the request in flight ends by the client's timeout (5 s), then its finalize
        fleet = Fleet(db_url, sim.base_url, tmp_path,
                      {**FAST, "BF4PS_BATTLELOG_TIMEOUT_SECONDS": "5"})
        proc = fleet.start("sup-01", "eg-sup")
        async with connection(db_url) as conn:
            job = await wait_for(conn, "SELECT job_id FROM collection_jobs "
                                       "WHERE status = 'running'", timeout=30)
            # another process took the job over (as a reclaim after a lost lease would)
            await conn.execute("UPDATE collection_jobs SET lease_token = gen_random_uuid() "
                               "WHERE job_id = %s", [job])
            assert await exit_code(proc, 30) == EXIT_FAILED, fleet.log("sup-01")[-2000:]
            assert "heartbeat died: LeaseLost" in fleet.log("sup-01")
            # the sent request's late answer reached the fence first: the audit shows it
            assert await count(conn, "SELECT count(*) FROM collection_events WHERE "
                                     "event_type = 'stale_finalize_rejected' AND "
                                     "job_id = %(j)s", {"j": job}) == 1
            assert await count(conn, "SELECT count(*) FROM collection_events WHERE "
                                     "event_type = 'collector_stopped' AND result = 'failed'") == 1
            # the request it sent was counted before it left
            assert await count(conn, "SELECT count(*) FROM counted_requests "
                                     "WHERE job_id = %(j)s", {"j": job}) == 1


async def _waiting_at_a_closed_gate(conn: Conn, fleet: Fleet, name: str) -> None:
    """The collector has served, then its egress cools down for 10 minutes: wait until it
    says it waits for that (a gate closed until minutes from now)."""
    await wait_for(conn, "SELECT count(*) FROM collection_events WHERE event_type = 'succeeded'",
                   timeout=30)
    await conn.execute("UPDATE egress_gates SET cooldown_until = now() + interval '10 min'")
    deadline = load.deadline(30)
    while not _long_waits(fleet.log(name)):
        if deadline.expired():
            raise AssertionError(f"{name} never waited at the closed gate")
        await asyncio.sleep(0.1)


def _long_waits(log: str) -> list[datetime]:
    soon = datetime.now(UTC) + timedelta(minutes=5)
    found = (datetime.fromisoformat(m) for m in re.findall(r"gate closed until (\S+)", log))
    return [t for t in found if t > soon]


async def test_disable_and_drain_reach_a_collector_waiting_at_a_closed_gate(
        db_url: str, tmp_path: Path) -> None:
    async with connection(db_url) as conn:
        await seed_work(conn, 20)
    with simulator(speed=50, min_interval=0) as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, FAST)
        drained = fleet.start("wait-01", "eg-wait")
        async with connection(db_url) as conn:
            await _waiting_at_a_closed_gate(conn, fleet, "wait-01")
            await control.act(conn, "drain", "wait-01")
            await log_says(fleet, "wait-01", "is drained: claiming nothing", timeout=20)
            await control.act(conn, "disable", "wait-01")
            assert await exit_code(drained, 20) == 0
