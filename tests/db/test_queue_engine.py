"""The queue engine against real PostgreSQL: coalescing, promotion, claim order, fencing,
classified failures and their events."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest

from bf4ps.db.connect import Conn, connection
from bf4ps.db.queries import q
from bf4ps.domain import ErrorClass, Lane, PriorityClass
from bf4ps.policy import Policy
from bf4ps.queue import claim as qclaim
from bf4ps.queue import figures, finalize
from bf4ps.queue.enqueue import enqueue
from bf4ps.queue.finalize import Attempt
from bf4ps.queue.jobs import ClaimedJob
from tests.helpers import T0, add_job, count, demand, make_collector, make_soldier, nested_plans

POLICY = Policy()


async def events_of(conn: Conn, job_id: int) -> list[str]:
    cur = await conn.execute(
        "SELECT event_type FROM collection_events_log WHERE job_id = %s ORDER BY event_id, ord",
        [job_id])
    return [str(r["event_type"]) for r in await cur.fetchall()]


async def claim_and_start(conn: Conn, me, lease: float = 60) -> ClaimedJob:  # type: ignore[no-untyped-def]
    job = await qclaim.claim(conn, me, lease)
    assert job is not None
    async with conn.transaction():
        started = await qclaim.start(conn, job, lease, job.claimed_at)
    assert started is not None
    return job


async def test_enqueue_coalesces_one_job_per_pair(conn: Conn) -> None:
    sid = await make_soldier(conn, 1001)
    first = await add_job(conn, sid)
    second = await add_job(conn, sid)
    assert first.action == "created" and second.action == "coalesced"
    assert first.job_id == second.job_id
    assert await count(conn, "SELECT count(*) FROM collection_jobs") == 1
    assert await events_of(conn, first.job_id) == ["created"]


async def test_interactive_request_promotes_background_work(conn: Conn) -> None:
    sid = await make_soldier(conn, 1002)
    made = await add_job(conn, sid, klass=PriorityClass.BOOTSTRAP)
    promoted = await add_job(conn, sid, klass=PriorityClass.INTERACTIVE, since=T0 + timedelta(1))
    assert promoted.action == "promoted" and promoted.job_id == made.job_id
    cur = await conn.execute("SELECT lane, priority_class, reason FROM collection_jobs")
    row = await cur.fetchone()
    assert row == {"lane": "interactive", "priority_class": "interactive", "reason": "manual"}
    assert await events_of(conn, made.job_id) == ["created", "promoted"]
    # a lower class never demotes
    again = await add_job(conn, sid, klass=PriorityClass.ACTIVE)
    assert again.action == "coalesced"


async def test_concurrent_enqueues_of_one_pair_make_one_job(db_url: str) -> None:
    async with connection(db_url) as c:
        sid = await make_soldier(c, 1003)

    async def one() -> str:
        async with connection(db_url) as c2, c2.transaction():
            return (await enqueue(c2, demand(sid))).action

    actions = await asyncio.gather(*(one() for _ in range(12)))
    assert sorted(actions).count("created") == 1
    async with connection(db_url) as c:
        assert await count(c, "SELECT count(*) FROM collection_jobs") == 1


async def test_claim_order_is_rank_then_fifo_with_fresh_tokens(conn: Conn,
                                                              tmp_path: Path) -> None:
    me = await make_collector(conn, tmp_path, "bg-1")
    ids = [await make_soldier(conn, 2000 + i) for i in range(4)]
    boot_old = await add_job(conn, ids[0], klass=PriorityClass.BOOTSTRAP, since=T0)
    active_new = await add_job(conn, ids[1], klass=PriorityClass.ACTIVE,
                               since=T0 + timedelta(minutes=10))
    active_old = await add_job(conn, ids[2], klass=PriorityClass.ACTIVE,
                               since=T0 + timedelta(minutes=5))
    # a bootstrap job that became eligible long before: aged past newer active work
    boot_ancient = await add_job(conn, ids[3], klass=PriorityClass.BOOTSTRAP,
                                 since=T0 - timedelta(hours=2))
    order = []
    tokens = set()
    for _ in range(4):
        job = await qclaim.claim(conn, me, 60)
        assert job is not None
        order.append(job.job_id)
        tokens.add(job.lease.lease_token)
    assert order == [boot_ancient.job_id, active_old.job_id, active_new.job_id,
                     boot_old.job_id]
    assert len(tokens) == 4
    assert await qclaim.claim(conn, me, 60) is None


async def test_success_commits_stats_state_event_and_removal_together(conn: Conn,
                                                                      tmp_path: Path) -> None:
    me = await make_collector(conn, tmp_path, "bg-1")
    sid = await make_soldier(conn, 3001)
    made = await add_job(conn, sid)
    job = await claim_and_start(conn, me)

    async def write(c: Conn, j: ClaimedJob, now) -> None:  # type: ignore[no-untyped-def]
        await c.execute("INSERT INTO detailed_stats_current (soldier_id, fetched_at, kills) "
                        "VALUES (%s, %s, 42)", [j.soldier_id, now])

    assert await current_job(conn) == (job.job_id, "running")
    outcome = await finalize.succeed(conn, me, job, Attempt(200, 812), POLICY, write)
    assert outcome.committed
    assert await count(conn, "SELECT count(*) FROM collection_jobs") == 0
    assert await count(conn, "SELECT kills FROM detailed_stats_current") == 42
    cur = await conn.execute("SELECT status, consecutive_failures FROM collection_state "
                             "WHERE soldier_id = %s AND resource = 'detailed'", [sid])
    assert await cur.fetchone() == {"status": "current", "consecutive_failures": 0}
    assert await events_of(conn, made.job_id) == ["created", "claimed", "started", "succeeded"]
    assert await current_job(conn) == (None, None)


async def current_job(conn: Conn) -> tuple[int | None, str | None]:
    """The registry's view of the (only) collector's current job."""
    cur = await conn.execute(q("collectors_list"), {"include_retired": False})
    row = await cur.fetchone()
    assert row is not None
    return row["current_job_id"], row["job_status"]


async def test_failed_stats_write_rolls_back_everything(conn: Conn, tmp_path: Path) -> None:
    me = await make_collector(conn, tmp_path, "bg-1")
    sid = await make_soldier(conn, 3002)
    await add_job(conn, sid)
    job = await claim_and_start(conn, me)

    async def broken(c: Conn, j: ClaimedJob, now) -> None:  # type: ignore[no-untyped-def]
        await c.execute("INSERT INTO detailed_stats_current (soldier_id, fetched_at) "
                        "VALUES (%s, %s)", [j.soldier_id, now])
        raise RuntimeError("boom after a partial write")

    with pytest.raises(RuntimeError):
        await finalize.succeed(conn, me, job, Attempt(200, 10), POLICY, broken)
    assert await count(conn, "SELECT count(*) FROM detailed_stats_current") == 0
    assert await count(conn, "SELECT count(*) FROM collection_jobs WHERE status='running'") == 1


async def test_zombie_finalize_after_reclaim_is_rejected(conn: Conn, tmp_path: Path) -> None:
    zombie = await make_collector(conn, tmp_path, "bg-zombie")
    other = await make_collector(conn, tmp_path, "bg-other")
    sid = await make_soldier(conn, 4001)
    made = await add_job(conn, sid)
    stale = await claim_and_start(conn, zombie, lease=0.2)
    await asyncio.sleep(0.4)
    fresh = await qclaim.claim(conn, other, 60)
    assert fresh is not None and fresh.reclaimed and fresh.job_id == made.job_id
    assert fresh.lease.lease_token != stale.lease.lease_token

    async def write(c: Conn, j: ClaimedJob, now) -> None:  # type: ignore[no-untyped-def]
        await c.execute("INSERT INTO detailed_stats_current (soldier_id, fetched_at, kills) "
                        "VALUES (%s, %s, 1)", [j.soldier_id, now])

    outcome = await finalize.succeed(conn, zombie, stale, Attempt(200, 5), POLICY, write)
    assert not outcome.committed
    assert await count(conn, "SELECT count(*) FROM detailed_stats_current") == 0
    failed = await finalize.fail(conn, zombie, stale, ErrorClass.SERVER, "late", Attempt(),
                                 POLICY)
    assert not failed.committed
    assert await qclaim.renew(conn, stale.lease, 60) is None
    evs = await events_of(conn, made.job_id)
    # the new owner's claim is in the log with the row that ends its lease (not yet)
    assert evs == ["created", "claimed", "started", "lease_expired", "reclaimed",
                   "stale_finalize_rejected", "stale_finalize_rejected"]
    cur = await conn.execute("SELECT status, collector_uuid FROM collection_jobs")
    assert await cur.fetchone() == {"status": "claimed", "collector_uuid": other.collector_uuid}


async def test_a_finalize_retried_after_its_commit_landed_is_not_stale(
        conn: Conn, tmp_path: Path) -> None:
    """A server restart between a finalize's commit and its answer: the collector retries
    (work.conclude) and finds the job no longer its own. Its own outcome is in the log, so the
    retry reports it done, records no stale_finalize_rejected and writes nothing again (a
    stale verdict made the collector stop and exit 70: test_db_restart found it). A zombie,
    whose lease wrote no outcome, is still rejected (test_zombie_finalize_after_reclaim_...)."""
    me = await make_collector(conn, tmp_path, "bg-retry")
    ok_job = await add_job(conn, await make_soldier(conn, 4101))
    job = await claim_and_start(conn, me)
    first = await finalize.succeed(conn, me, job, Attempt(200, 5), POLICY)
    again = await finalize.succeed(conn, me, job, Attempt(200, 5), POLICY)
    assert (first.committed, again.committed, again.event) == (True, True, "succeeded")
    assert await events_of(conn, ok_job.job_id) == ["created", "claimed", "started",
                                                    "succeeded"]
    failing = await add_job(conn, await make_soldier(conn, 4102))
    job = await claim_and_start(conn, me)
    first = await finalize.fail(conn, me, job, ErrorClass.SERVER, "502", Attempt(502), POLICY)
    again = await finalize.fail(conn, me, job, ErrorClass.SERVER, "502", Attempt(502), POLICY)
    assert first.committed and again.committed and again.event == "failed"
    assert "stale_finalize_rejected" not in await events_of(conn, failing.job_id)
    assert await count(conn, "SELECT count(*) FROM collection_events WHERE event_type IN "
                             "('succeeded', 'failed')") == 2


async def test_retryable_failure_backs_off_and_keeps_stats(conn: Conn, tmp_path: Path) -> None:
    me = await make_collector(conn, tmp_path, "bg-1")
    sid = await make_soldier(conn, 5001)
    await conn.execute("INSERT INTO detailed_stats_current (soldier_id, fetched_at, kills) "
                       "VALUES (%s, now(), 77)", [sid])
    made = await add_job(conn, sid)
    job = await claim_and_start(conn, me)
    out = await finalize.fail(conn, me, job, ErrorClass.MALFORMED, "generalStats missing",
                              Attempt(200, 700), POLICY)
    assert out.committed and out.next_attempt_at is not None
    assert await count(conn, "SELECT kills FROM detailed_stats_current") == 77
    cur = await conn.execute(
        "SELECT status, consecutive_failures, last_error_class, "
        "next_attempt_at > now() + interval '13 minutes' AS later FROM collection_state "
        "WHERE soldier_id = %s AND resource = 'detailed'", [sid])
    assert await cur.fetchone() == {"status": "retry_wait", "consecutive_failures": 1,
                                    "last_error_class": "malformed", "later": True}
    cur = await conn.execute("SELECT status, eligible_at > now() AS waiting FROM collection_jobs")
    assert await cur.fetchone() == {"status": "pending", "waiting": True}
    assert await qclaim.claim(conn, me, 60) is None  # not runnable before its retry time
    assert (await events_of(conn, made.job_id))[-2:] == ["failed", "retry_scheduled"]


async def test_not_found_parks_the_resource_unavailable(conn: Conn, tmp_path: Path) -> None:
    me = await make_collector(conn, tmp_path, "bg-1")
    sid = await make_soldier(conn, 5002)
    made = await add_job(conn, sid, resource="weapons")
    job = await claim_and_start(conn, me)
    out = await finalize.fail(conn, me, job, ErrorClass.NOT_FOUND, "unknown persona",
                              Attempt(200, 300), POLICY)
    assert out.committed and out.event == "unavailable"
    assert await count(conn, "SELECT count(*) FROM collection_jobs") == 0
    cur = await conn.execute("SELECT status FROM collection_state WHERE soldier_id = %s AND "
                             "resource = 'weapons'", [sid])
    assert await cur.fetchone() == {"status": "unavailable"}
    assert (await events_of(conn, made.job_id))[-2:] == ["failed", "unavailable"]


async def test_release_returns_a_claimed_job(conn: Conn, tmp_path: Path) -> None:
    me = await make_collector(conn, tmp_path, "bg-1")
    sid = await make_soldier(conn, 5003)
    await add_job(conn, sid)
    job = await qclaim.claim(conn, me, 60)
    assert job is not None
    async with conn.transaction():
        assert await qclaim.release(conn, me, job, "drain")
    again = await qclaim.claim(conn, me, 60)
    assert again is not None and again.job_id == job.job_id and again.attempt_count == 2


async def test_drained_collector_claims_nothing(conn: Conn, tmp_path: Path) -> None:
    me = await make_collector(conn, tmp_path, "bg-1")
    await add_job(conn, await make_soldier(conn, 5004))
    await conn.execute("UPDATE collectors SET drained = true, drained_at = now()")
    assert await qclaim.claim(conn, me, 60) is None


async def test_lease_shape_is_enforced_by_the_schema(conn: Conn) -> None:
    sid = await make_soldier(conn, 6001)
    with pytest.raises(psycopg.errors.CheckViolation):
        await conn.execute(
            "INSERT INTO collection_jobs (soldier_id, resource, lane, priority_class, rank, "
            "reason, status) VALUES (%s, 'detailed', 'background', 'bootstrap', now(), "
            "'bootstrap', 'claimed')", [sid])
    with pytest.raises(psycopg.errors.CheckViolation):
        await conn.execute(
            "INSERT INTO collection_jobs (soldier_id, resource, lane, priority_class, rank, "
            "reason) VALUES (%s, 'detailed', 'background', 'interactive', now(), 'manual')",
            [sid])


async def test_reaper_returns_expired_leases_with_events(conn: Conn, tmp_path: Path) -> None:
    from bf4ps.queue.claim import reap_expired

    me = await make_collector(conn, tmp_path, "bg-1")
    made = await add_job(conn, await make_soldier(conn, 7001))
    await claim_and_start(conn, me, lease=0.1)
    await asyncio.sleep(0.3)
    assert await reap_expired(conn) == 1
    cur = await conn.execute("SELECT status FROM collection_jobs")
    assert await cur.fetchone() == {"status": "pending"}
    assert (await events_of(conn, made.job_id))[-2:] == ["lease_expired", "reclaimed"]


async def test_claim_uses_its_partial_index(conn: Conn, tmp_path: Path) -> None:
    """The claim's statements run inside queue_claim (migration 0014): auto_explain shows their
    plans, custom and the cached generic one, each walking ix_jobs_claim in rank order."""
    me = await make_collector(conn, tmp_path, "bg-1")
    await conn.execute(
        "INSERT INTO soldiers (persona_id, platform, current_name) "
        "SELECT g, 'pc', 'S' || g FROM generate_series(1, 20000) g")
    await conn.execute(
        "INSERT INTO collection_jobs (soldier_id, resource, lane, priority_class, rank, reason) "
        "SELECT soldier_id, 'detailed', 'background', 'bootstrap', "
        "now() - (soldier_id || ' s')::interval, 'bootstrap' FROM soldiers")
    await conn.execute("ANALYZE collection_jobs")
    notices = await nested_plans(conn)

    def claim_plan() -> str:
        plans = [n for n in notices if "UPDATE collection_jobs" in n and "SKIP LOCKED" in n]
        assert plans, notices
        return plans[-1]

    for mode in ("auto", "force_generic_plan"):
        await conn.execute(f"SET plan_cache_mode = {mode}")  # type: ignore[arg-type]
        notices.clear()
        job = await qclaim.claim(conn, me, 60)
        assert job is not None and job.lane is Lane.BACKGROUND
        plan = claim_plan()
        assert "Index Scan using ix_jobs_claim" in plan, plan
        assert "Sort" not in plan.split("Query Text")[-1].split("Update on")[-1], plan
        assert "Seq Scan on collection_jobs" not in plan, plan
    await conn.execute("RESET plan_cache_mode")
    await conn.execute("SET auto_explain.log_min_duration = -1")


async def test_coverage_stays_exact_before_and_after_the_fold(conn: Conn,
                                                              tmp_path: Path) -> None:
    """Finalizes append coverage deltas; readers add them to the counters (exact at once), and
    the scheduler's fold moves them into the counters (migration 0014)."""
    me = await make_collector(conn, tmp_path, "bg-1")
    for persona in range(7001, 7006):
        await add_job(conn, await make_soldier(conn, persona))
    for _ in range(3):
        job = await claim_and_start(conn, me)
        assert (await finalize.succeed(conn, me, job, Attempt(200, 1), POLICY)).committed
    recount = "SELECT resource, status, count(*) AS n FROM collection_state GROUP BY 1, 2"
    truth = {(r["resource"], r["status"]): r["n"]
             for r in await (await conn.execute(recount)).fetchall()}

    async def seen() -> dict[tuple[str, str], int]:
        table = await figures.coverage(conn)
        return {(res, st): n for res, row in table.items() for st, n in row.items() if n}

    assert await count(conn, "SELECT count(*) FROM coverage_deltas") > 0
    assert await seen() == truth
    assert await figures.fold_coverage(conn) > 0
    assert await count(conn, "SELECT count(*) FROM coverage_deltas") == 0
    assert await seen() == truth
    assert truth[("detailed", "current")] == 3
