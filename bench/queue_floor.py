"""Floors under a fenced one-job-at-a-time cycle on this machine, on a bare table with one
partial index and nothing else: no events, no collection state, no collector or soldier snapshot.

* bare: the three durable single-statement transactions of the engine's first design (claim
  with SKIP LOCKED and a fresh lease token; claimed → running fenced by the token; fenced
  removal).
* bare1: one durable commit per job (the queue-cycle study's unaudited floor): the first claim
  starts its job at once, and then each call is the fenced removal of the job done and the
  SKIP LOCKED claim (started) of the next, two statements in that order in one function, as the
  engine's gate-less bench cycle does (one statement of CTEs can deadlock: the study's 5.2).

Neither is a queue anyone should run (no audit trail, no state); queue_cycle runs them beside
bf4ps and pgqueuer so the cost of the audit and state writes and the cost of each durable
transaction are visible in the same run.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import psycopg

WORKERS = 8

SETUP = (
    "CREATE TABLE bare_jobs (job_id bigserial PRIMARY KEY, status text NOT NULL DEFAULT "
    "'pending', rank timestamptz NOT NULL DEFAULT now(), lease_token uuid, "
    "lease_expires_at timestamptz)",
    "CREATE INDEX ix_bare_claim ON bare_jobs (rank, job_id) WHERE status = 'pending'",
    # bare1's cycle: its own job's removal first, then the claim, so no collector holds a lock
    # from the claim's scan while it waits for its own job (the study's 5.2 deadlock)
    """CREATE FUNCTION bare_finish_next(p_job bigint, p_token uuid, OUT done bigint,
                                        OUT next_job bigint, OUT next_token uuid)
    LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM bare_jobs b WHERE b.job_id = p_job AND b.lease_token = p_token
           AND b.status = 'running' AND b.lease_expires_at > clock_timestamp()
        RETURNING b.job_id INTO done;
        UPDATE bare_jobs b SET status = 'running', lease_token = gen_random_uuid(),
               lease_expires_at = clock_timestamp() + interval '60 seconds'
         WHERE b.job_id = (SELECT s.job_id FROM bare_jobs s WHERE s.status = 'pending'
                           ORDER BY s.rank, s.job_id LIMIT 1 FOR UPDATE SKIP LOCKED)
        RETURNING b.job_id, b.lease_token INTO next_job, next_token;
    END $$""",
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


# bare1: claim-and-start, then one call per job: the fenced removal of the job done and the
# claim (started) of the next
CLAIM1 = CLAIM.replace("status = 'claimed'", "status = 'running'")
FINISH_NEXT = "SELECT done, next_job, next_token FROM bare_finish_next(%s, %s)"
BareJob = tuple[int, Any]  # job_id, lease_token


async def prepare(url: str, jobs: int) -> None:
    """The bare table, its function and `jobs` pending jobs on an unmigrated database."""
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


async def _worker1(url: str) -> int:
    done = 0
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        job = await claim1(conn)
        while job is not None:
            finished, job = await finish_next(conn, job)
            done += finished
    return done


async def claim1(conn: psycopg.AsyncConnection[Any]) -> BareJob | None:
    """bare1's first claim, started at once."""
    row = _values(await (await conn.execute(CLAIM1)).fetchone())
    return (row[0], row[1]) if row else None


async def finish_next(conn: psycopg.AsyncConnection[Any],
                      job: BareJob) -> tuple[bool, BareJob | None]:
    """bare1's cycle: the fenced removal of `job` and the claim of the next, one commit; whether
    the removal held, and the next job (None: the queue is empty)."""
    row = _values(await (await conn.execute(FINISH_NEXT, job)).fetchone())
    assert row is not None
    done, next_job, token = row
    return done is not None, (next_job, token) if next_job is not None else None


def _values(row: Any) -> tuple[Any, ...] | None:
    """A row as a tuple, from a tuple or a dict row (the connection's row factory)."""
    if row is None:
        return None
    return tuple(row.values()) if isinstance(row, dict) else tuple(row)


async def bare_rate(url: str, jobs: int, *, one_commit: bool = False) -> float:
    """Bare fenced cycles per second with WORKERS workers on an unmigrated database: three
    commits per job, or with `one_commit` one (bare1)."""
    await prepare(url, jobs)
    t0 = time.perf_counter()
    work = _worker1 if one_commit else _worker
    counts = await asyncio.gather(*(work(url) for _ in range(WORKERS)))
    elapsed = time.perf_counter() - t0
    assert sum(counts) == jobs, (sum(counts), jobs)
    return jobs / elapsed
