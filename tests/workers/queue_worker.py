"""A real collector-like process for concurrency tests: claims through the queue engine.

usage: queue_worker.py DB_URL DATA_DIR NAME MODE LEASE_SECONDS [PATIENCE_SECONDS]
modes: drain (claim→start→succeed until nothing was claimable for PATIENCE seconds (default
       0.15); prints one JSON line per committed job),
       hold (claim+start one job, print it, then sleep until killed),
       zombie (claim+start one job, print it, wait for a line on stdin, then try to finalize).
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import datetime
from pathlib import Path

from bf4ps.collector.identity import Wanted, register
from bf4ps.db.connect import Conn, connection
from bf4ps.domain import Lane
from bf4ps.policy import Policy
from bf4ps.queue import claim as qclaim
from bf4ps.queue import finalize
from bf4ps.queue.jobs import ClaimedJob


async def write_marker(conn: Conn, job: ClaimedJob, now: datetime) -> None:
    await conn.execute(
        "INSERT INTO detailed_stats_current (soldier_id, fetched_at, kills) VALUES (%s, %s, %s) "
        "ON CONFLICT (soldier_id) DO UPDATE SET kills = detailed_stats_current.kills + 1000",
        [job.soldier_id, now, job.attempt_count])


async def take(conn: Conn, me, lease: float) -> ClaimedJob | None:  # type: ignore[no-untyped-def]
    job = await qclaim.claim(conn, me, lease)
    if job is None:
        return None
    async with conn.transaction():
        started = await qclaim.start(conn, job, lease, job.claimed_at)
    return job if started else None


async def main() -> None:
    url, data_dir, name, mode, lease = sys.argv[1:6]
    patience = float(sys.argv[6]) if len(sys.argv) > 6 else 0.15
    lease_s = float(lease)
    async with connection(url) as conn:
        me = await register(conn, Path(data_dir), Wanted(name, "test-host", Lane.BACKGROUND,
                                                         "eg-1", None, "test"))
        print(json.dumps({"ready": str(me.collector_uuid)}), flush=True)
        if mode == "drain":
            await drain(conn, me, lease_s, patience)
        else:
            await hold(conn, me, lease_s, mode)


async def drain(conn: Conn, me, lease: float, patience: float) -> None:  # type: ignore[no-untyped-def]
    # patience counts from the first claim that found nothing, never across a finalize (on a
    # busy machine one finalize may take longer than the patience)
    loop = asyncio.get_running_loop()
    idle_since: float | None = None
    while idle_since is None or loop.time() - idle_since < patience:
        job = await take(conn, me, lease)
        if job is None:
            idle_since = loop.time() if idle_since is None else idle_since
            await asyncio.sleep(0.05)
            continue
        idle_since = None
        out = await finalize.succeed(conn, me, job, finalize.Attempt(200, 1), Policy())
        print(json.dumps({"job": job.job_id, "committed": out.committed}), flush=True)


async def hold(conn: Conn, me, lease: float, mode: str) -> None:  # type: ignore[no-untyped-def]
    job = await take(conn, me, lease)
    print(json.dumps({"holding": job.job_id if job else None}), flush=True)
    if mode == "hold":
        await asyncio.sleep(3600)
        return
    await asyncio.to_thread(sys.stdin.readline)
    assert job is not None
    out = await finalize.succeed(conn, me, job, finalize.Attempt(200, 1), Policy(),
                                 write_marker)
    print(json.dumps({"committed": out.committed, "event": out.event}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
