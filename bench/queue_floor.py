"""The floor under a fenced one-job-at-a-time cycle on this machine: the same three durable
single-statement transactions a bf4ps cycle makes (claim with SKIP LOCKED and a fresh lease
token; claimed → running fenced by the token; fenced removal), on a bare table with one partial
index, and nothing else: no events, no collection state, no collector or soldier snapshot.

It is not a queue anyone should run (it keeps no audit trail and no state); queue_cycle prints it
beside bf4ps and pgqueuer so the cost of the audit and state writes, and the cost of three
durable transactions per job, are both visible in the same run.
"""

from __future__ import annotations

import asyncio
import time

import psycopg

WORKERS = 8

SETUP = (
    "CREATE TABLE bare_jobs (job_id bigserial PRIMARY KEY, status text NOT NULL DEFAULT "
    "'pending', rank timestamptz NOT NULL DEFAULT now(), lease_token uuid, "
    "lease_expires_at timestamptz)",
    "CREATE INDEX ix_bare_claim ON bare_jobs (rank, job_id) WHERE status = 'pending'",
)
FILL = "INSERT INTO bare_jobs (rank) SELECT now() FROM generate_series(1, %s)"
CLAIM = (
    "UPDATE bare_jobs SET status = 'claimed', lease_token = gen_random_uuid(), "
    "lease_expires_at = clock_timestamp() + interval '60 seconds' "
    "WHERE job_id = (SELECT job_id FROM bare_jobs WHERE status = 'pending' "
    "ORDER BY rank, job_id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING job_id, lease_token")
START = (
    "UPDATE bare_jobs SET status = 'running' WHERE job_id = %s AND lease_token = %s "
    "AND status = 'claimed' AND lease_expires_at > clock_timestamp() RETURNING job_id")
FINISH = (
    "DELETE FROM bare_jobs WHERE job_id = %s AND lease_token = %s AND status = 'running' "
    "AND lease_expires_at > clock_timestamp() RETURNING job_id")


async def _prepare(url: str, jobs: int) -> None:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        for statement in SETUP:
            await conn.execute(statement)
        await conn.execute(FILL, [jobs])
        await conn.execute("VACUUM ANALYZE bare_jobs")


async def _worker(url: str) -> int:
    done = 0
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        while True:
            row = await (await conn.execute(CLAIM)).fetchone()
            if row is None:
                return done
            started = await (await conn.execute(START, row)).fetchone()
            finished = await (await conn.execute(FINISH, row)).fetchone()
            done += started is not None and finished is not None


async def bare_rate(url: str, jobs: int) -> float:
    """Bare fenced cycles per second with WORKERS workers on an unmigrated database."""
    await _prepare(url, jobs)
    t0 = time.perf_counter()
    counts = await asyncio.gather(*(_worker(url) for _ in range(WORKERS)))
    elapsed = time.perf_counter() - t0
    assert sum(counts) == jobs, (sum(counts), jobs)
    return jobs / elapsed
