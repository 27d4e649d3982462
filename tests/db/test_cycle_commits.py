"""A collector that continues commits twice per request (migration 0028): its start, then the
fenced success that also looks, claims the next job and counts that job's request in its
slot, all in one transaction. Checked against the database: the ledger row of the next job is
written by the success's own transaction, a stale success counts nothing, and when the slot
moves past the horizon between the look and the count (another session took it) the job is
handed back claimed but uncounted, and the standalone count takes over."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

from psycopg import pq

from bf4ps.db.connect import Conn, connection
from bf4ps.domain import PriorityClass
from bf4ps.gates import admission
from bf4ps.gates.admission import Admitted, Wait
from bf4ps.policy import Policy
from bf4ps.queue import claim as qclaim
from bf4ps.queue import finalize
from bf4ps.queue.finalize import Attempt, NextClaim
from bf4ps.queue.jobs import ClaimedJob, CollectorRef, Outcome
from bf4ps.settings import SendTimings
from tests.helpers import (
    FLEET_CONFIGURE,
    add_job,
    count,
    gated_collector,
    make_soldier,
    nested_plans,
    set_policy,
)

GATE = SendTimings(margin=0.05, horizon=5.0, lease_seconds=30.0)
POLICY = Policy()


def db_url_of(conn: Conn) -> str:
    return conn.info.dsn + (f" password={conn.info.password}" if conn.info.password else "")


async def first_admitted(conn: Conn, tmp_path: Path, jobs: int) -> tuple[CollectorRef,
                                                                        Admitted]:
    me = await gated_collector(conn, tmp_path)
    for i in range(jobs):
        await add_job(conn, await make_soldier(conn, 700 + i), "detailed",
                      PriorityClass.RECENT)
    got = await admission.admit(conn, me, GATE)
    assert isinstance(got, Admitted), got
    assert await qclaim.start(conn, got.job, GATE.lease_seconds, got.slot_at) is not None
    return me, got


async def succeed_and_continue(conn: Conn, me: CollectorRef, adm: Admitted) -> Outcome:
    return await finalize.succeed(conn, me, adm.job, Attempt(200, 5), POLICY,
                                  then=NextClaim(me.lane, GATE.lease_seconds,
                                                 gate=GATE))


async def xmin_of(conn: Conn, sql: str, job_id: int) -> str:
    cur = await conn.execute(sql, [job_id])
    row = await cur.fetchone()
    assert row is not None
    return str(row["x"])


async def test_the_success_counts_the_next_jobs_request_in_its_own_commit(
        conn: Conn, tmp_path: Path) -> None:
    me, first = await first_admitted(conn, tmp_path, 2)
    out = await succeed_and_continue(conn, me, first)
    assert out.committed and out.next_job is not None
    slot = admission.counted_next(out)
    assert slot is not None and slot.at > first.slot_at
    ledger = await conn.execute(
        "SELECT job_id, collector_uuid, slot_at, request_id FROM request_ledger "
        "WHERE job_id = %s", [out.next_job.job_id])
    assert await ledger.fetchall() == [{"job_id": out.next_job.job_id,
                                        "collector_uuid": me.collector_uuid,
                                        "slot_at": slot.at, "request_id": slot.request_id}]
    # one transaction wrote the first job's success and the second job's count
    counted = await xmin_of(conn, "SELECT xmin::text AS x FROM request_ledger "
                                  "WHERE job_id = %s", out.next_job.job_id)
    succeeded = await xmin_of(conn, "SELECT xmin::text AS x FROM collection_events "
                                    "WHERE job_id = %s AND event_type = 'succeeded'",
                              first.job.job_id)
    assert counted == succeeded
    # the collector starts it in that slot with no further count
    again = await admission.admit_held(conn, me, GATE, out.next_job, slot)
    assert again == Admitted(out.next_job, slot)
    assert await count(conn, "SELECT count(*) FROM request_ledger") == 2


async def test_a_stale_success_neither_claims_nor_counts(conn: Conn, tmp_path: Path) -> None:
    me, first = await first_admitted(conn, tmp_path, 2)
    await conn.execute("UPDATE collection_jobs SET lease_expires_at = clock_timestamp() "
                       "WHERE job_id = %s", [first.job.job_id])
    out = await succeed_and_continue(conn, me, first)
    assert not out.committed and out.next_job is None
    assert await count(conn, "SELECT count(*) FROM request_ledger") == 1
    assert await count(conn, "SELECT count(*) FROM collection_jobs "
                             "WHERE lease_token IS NOT NULL") == 1  # the first, expired


async def test_a_slot_taken_meanwhile_leaves_the_next_job_unclaimed(
        db_url: str, tmp_path: Path) -> None:
    """Another session holds the egress gate and moves its next slot past the horizon: the
    success's admission locks the gate before it looks (migration 0032), so it waits for that
    session and then finds the gate closed. Nothing is claimed or counted, and the success
    says when to look again (the look-then-count race, in which the job came back claimed and
    uncounted, is gone)."""
    async with connection(db_url) as conn, connection(db_url) as other:
        me, first = await first_admitted(conn, tmp_path, 2)
        await other.set_autocommit(False)
        await other.execute("UPDATE egress_gates SET next_slot_at = clock_timestamp() "
                            "+ interval '1 hour' WHERE egress_key = 'eg-1'")
        pid = await count(conn, "SELECT pg_backend_pid()")
        success = asyncio.create_task(succeed_and_continue(conn, me, first))
        async with connection(db_url) as watch:  # until the success waits for the gate
            while not await count(watch, "SELECT count(*) FROM pg_stat_activity WHERE pid = "
                                         "%(p)s AND wait_event_type = 'Lock'", {"p": pid}):
                await asyncio.sleep(0.01)
        await other.commit()
        out = await success
        assert out.committed and out.next_job is None
        assert admission.counted_next(out) is None
        assert out.gate_wait_until is not None
        assert out.gate_wait_until > datetime.now(UTC) + timedelta(minutes=55)
        assert await count(conn, "SELECT count(*) FROM request_ledger") == 1
        assert await count(conn, "SELECT count(*) FROM collection_jobs "
                                 "WHERE lease_token IS NOT NULL") == 0


async def test_a_held_job_uncounted_is_given_back_when_no_slot_opens_soon(
        conn: Conn, tmp_path: Path) -> None:
    """A job claimed and not counted (the separate look, claim and count of `admit`, where
    another collector may take the slot in between): its standalone count finds the gate an
    hour away, past its patience, and gives the job back."""
    me = await gated_collector(conn, tmp_path)
    await add_job(conn, await make_soldier(conn, 800), "detailed", PriorityClass.RECENT)
    job = await qclaim.claim(conn, me, GATE.lease_seconds)
    assert job is not None
    await conn.execute("UPDATE egress_gates SET next_slot_at = clock_timestamp() "
                       "+ interval '1 hour' WHERE egress_key = %s", [me.egress_key])
    got = await admission.admit_held(conn, me, GATE, job, None)
    assert isinstance(got, Wait) and got.until is not None
    assert await count(conn, "SELECT count(*) FROM request_ledger") == 0
    assert await count(conn, "SELECT count(*) FROM collection_jobs "
                             "WHERE lease_token IS NOT NULL") == 0


async def test_a_success_with_statistics_whose_lease_went_meanwhile_writes_nothing(
        conn: Conn, tmp_path: Path) -> None:
    """The lease ends while the statistics are being written: the success raises on the
    server (strict) instead of answering `not ours`, so the COMMIT sent with it is not run and
    the statistics roll back with everything else; the connection is usable after."""
    me, first = await first_admitted(conn, tmp_path, 2)

    async def write_then_lose(c: Conn, job: ClaimedJob, now: datetime) -> None:
        await c.execute("INSERT INTO detailed_stats_current (soldier_id, fetched_at, kills) "
                        "VALUES (%s, %s, 42)", [job.soldier_id, now])
        async with connection(db_url_of(c)) as other:  # the reaper's view: the lease is over
            await other.execute("UPDATE collection_jobs SET lease_expires_at = "
                                "clock_timestamp() WHERE job_id = %s", [job.job_id])

    out = await finalize.succeed(conn, me, first.job, Attempt(200, 5), POLICY,
                                 write_then_lose,
                                 then=NextClaim(me.lane, GATE.lease_seconds,
                                                gate=GATE))
    assert not out.committed and out.next_job is None
    assert await count(conn, "SELECT count(*) FROM detailed_stats_current") == 0
    assert await count(conn, "SELECT count(*) FROM request_ledger") == 1
    assert await count(conn, "SELECT count(*) FROM collection_events "
                             "WHERE event_type = 'succeeded'") == 0
    assert conn.info.transaction_status == pq.TransactionStatus.IDLE


async def test_the_budgets_demand_probes_its_index_not_the_queue(conn: Conn,
                                                                  tmp_path: Path) -> None:
    """With a fleet budget set, each admission asks which floor classes have runnable work:
    auto_explain shows that statement (custom and generic plans) probing ix_jobs_demand, not
    reading the 20,000 pending jobs; and the answer still sees a retry among them."""
    me = await gated_collector(conn, tmp_path, budget=(1000, 3600.0))
    await conn.execute(
        "INSERT INTO soldiers (persona_id, platform, current_name) "
        "SELECT g, 'pc', 'S' || g FROM generate_series(1, 20000) g")
    await conn.execute(
        "INSERT INTO collection_jobs (soldier_id, resource, lane, priority_class, rank, reason,"
        " last_error_at, last_error_class) SELECT soldier_id, 'detailed', 'background', "
        "'active', now() - (soldier_id || ' s')::interval, 'active_refresh', "
        "CASE WHEN soldier_id = 7 THEN now() END, CASE WHEN soldier_id = 7 THEN 'server' END "
        "FROM soldiers")
    await conn.execute("ANALYZE collection_jobs")
    notices = await nested_plans(conn)
    for mode in ("auto", "force_generic_plan"):
        await conn.execute(f"SET plan_cache_mode = {mode}")  # type: ignore[arg-type]
        notices.clear()
        cur = await conn.execute(
            "SELECT outcome, classes FROM admission_look(%s, 0.05, 5.0, 1.0)",
            [me.collector_uuid])
        look = await cur.fetchone()
        assert look is not None and look["outcome"] == "open"
        plans = [n for n in notices if "AS f(cls)" in n]
        assert plans, notices
        assert "ix_jobs_demand" in plans[-1], plans[-1]
        assert "Seq Scan on collection_jobs" not in plans[-1], plans[-1]
    await conn.execute("RESET plan_cache_mode")
    await conn.execute("SET auto_explain.log_min_duration = -1")
    # the retry's floor is its own: with the window nearly full, only retry may go
    await conn.execute(FLEET_CONFIGURE, {"requests": 2, "window_seconds": 3600.0})
    await conn.execute("INSERT INTO request_ledger (slot_at, egress_key, budget_class) "
                       "VALUES (clock_timestamp(), 'eg-other', 'active')")
    await set_policy(conn, budget_floor_retry=0.5)
    cur = await conn.execute("SELECT classes FROM admission_look(%s, 0.05, 5.0, 1.0)",
                             [me.collector_uuid])
    assert await cur.fetchone() == {"classes": ["retry"]}
