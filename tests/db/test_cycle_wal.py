"""The cycle's row locks that write WAL (migration 0030), read back from the WAL itself
(pg_walinspect): a success that claims and counts the next job locks that job once (its
claim) and the fleet budget not at all (an advisory lock serializes the counts); a count of
its own, in a transaction that did not write the lease, still locks the job it fences; no
claim locks its collector's registry row (no foreign key: collectors are never deleted). The
event log's BRIN index of ids leaves the block range a partition is filling unsummarized, so
an insert writes nothing to it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psycopg
import pytest

from bf4ps.db.connect import Conn
from bf4ps.domain import PriorityClass
from bf4ps.gates import admission
from bf4ps.gates.admission import Admitted
from bf4ps.policy import Policy
from bf4ps.queue import claim as qclaim
from bf4ps.queue import finalize
from bf4ps.queue.finalize import Attempt, NextClaim
from bf4ps.queue.jobs import Outcome
from bf4ps.settings import SendTimings
from tests.helpers import add_job, count, gated_collector, make_soldier

GATE = SendTimings(margin=0.05, horizon=5.0, lease_seconds=30.0)
POLICY = Policy()

LOCKS = """
SELECT c.relname::text AS rel, count(*) AS n
FROM pg_get_wal_records_info(%(a)s::pg_lsn, %(b)s::pg_lsn) r
JOIN pg_get_wal_block_info(%(a)s::pg_lsn, %(b)s::pg_lsn, false) w
  ON w.start_lsn = r.start_lsn AND w.block_id = 0
JOIN pg_class c ON w.relfilenode = pg_relation_filenode(c.oid)
WHERE w.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND r.resource_manager = 'Heap' AND r.record_type = 'LOCK'
GROUP BY 1
"""


async def lsn(conn: Conn) -> str:
    cur = await conn.execute("SELECT pg_current_wal_insert_lsn()::text AS l")
    row = await cur.fetchone()
    assert row is not None
    return str(row["l"])


async def row_locks(conn: Conn, a: str, b: str) -> dict[str, int]:
    if await count(conn, "SELECT current_setting('server_version_num')::int") < 160000:
        pytest.skip("the WAL's block references per record need PostgreSQL 16's "
                    "pg_get_wal_block_info")
    await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
    while not await count(conn, "SELECT (pg_current_wal_flush_lsn() >= %(b)s::pg_lsn)::int",
                          {"b": b}):  # the tests' server commits asynchronously
        await asyncio.sleep(0.05)
    cur = await conn.execute(LOCKS, {"a": a, "b": b})
    return {str(r["rel"]): int(r["n"]) for r in await cur.fetchall()}


async def test_a_counted_success_locks_only_what_its_claim_locks(conn: Conn,
                                                                 tmp_path: Path) -> None:
    me = await gated_collector(conn, tmp_path, budget=(1000, 3600.0))
    for i in range(2):
        await add_job(conn, await make_soldier(conn, 900 + i), "detailed",
                      PriorityClass.RECENT)
    a = await lsn(conn)
    first = await admission.admit(conn, me, GATE)  # claim, then a count of its own
    assert isinstance(first, Admitted), first
    b = await lsn(conn)
    # the claim's FOR UPDATE SKIP LOCKED (its collector's row: none), the standalone count's
    # FOR SHARE of the lease another transaction wrote and its gate's FOR UPDATE; the
    # budget's serialization writes nothing
    assert await row_locks(conn, a, b) == {"collection_jobs": 2, "egress_gates": 1}
    assert await qclaim.start(conn, first.job, GATE.lease_seconds, first.slot_at) is not None

    a = await lsn(conn)
    out: Outcome = await finalize.succeed(
        conn, me, first.job, Attempt(200, 5), POLICY,
        then=NextClaim(me.lane, GATE.lease_seconds, gate=GATE))
    b = await lsn(conn)
    assert out.committed and out.next_job is not None
    assert admission.counted_next(out) is not None
    # one transaction: the success, the claim (its locks) and the count (the gate's only)
    assert await row_locks(conn, a, b) == {"collection_jobs": 1, "egress_gates": 1}
    assert await count(conn, "SELECT count(*) FROM request_ledger") == 2


async def test_a_new_partition_leaves_its_brin_range_unsummarized(conn: Conn) -> None:
    await conn.execute("SELECT bf4ps_ensure_event_partitions('2099-01-01', 1)")
    await conn.execute("INSERT INTO collection_events (occurred_at, event_type) "
                       "SELECT '2099-01-02'::timestamptz + g * interval '1 s', "
                       "'scheduler_started' FROM generate_series(1, 50) g")
    idx = ("(SELECT x.indexrelid::regclass FROM pg_index x "
           "WHERE x.indrelid = 'collection_events_209901'::regclass "
           "AND x.indexrelid IN (SELECT inhrelid FROM pg_inherits "
           "WHERE inhparent = 'ix_events_id'::regclass))")
    # 1: the range was not summarized (the inserts wrote nothing to the index); then it is
    assert await count(conn, f"SELECT brin_summarize_range({idx}, 0)") == 1
    assert await count(conn, f"SELECT brin_summarize_range({idx}, 0)") == 0
    # the cursor's query finds the rows through it
    assert await count(conn, "SELECT count(*) FROM collection_events_209901 "
                             "WHERE event_id > 0") == 50


async def test_a_collector_is_never_deleted(conn: Conn, tmp_path: Path) -> None:
    """A job's owner is no longer a foreign key (its check locked the collector's row at
    every claim): the registry keeps every collector instead, so no job names a missing one."""
    me = await gated_collector(conn, tmp_path)
    with pytest.raises(psycopg.errors.RestrictViolation):
        await conn.execute("DELETE FROM collectors WHERE collector_uuid = %s",
                           [me.collector_uuid])
    await conn.rollback()
    assert await count(conn, "SELECT count(*) FROM collectors") == 1
