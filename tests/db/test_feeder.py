"""The bounded feeder: deficit only, never a second job per pair, class shares with borrowing,
the progressive resource mix, activity classes and due sweeps."""

from __future__ import annotations

import re

import pytest

from bf4ps import policy as policy_mod
from bf4ps.db.connect import Conn
from bf4ps.policy import Policy
from bf4ps.scheduler import activity, feeder
from tests.helpers import count


async def population(conn: Conn, n: int, *, active: int = 0, recent: int = 0,
                     base: int = 3_000_000_000) -> None:
    """n soldiers: the first `active` seen an hour ago, the next `recent` 3 days ago, the rest
    60 days ago; every resource never attempted, eligible in discovery (id) order."""
    await conn.execute(
        "INSERT INTO soldiers (persona_id, platform, current_name, first_seen_at, last_seen_at) "
        "SELECT %(base)s + g, 'pc', 'F' || g, now() - interval '90 days', "
        "CASE WHEN g <= %(active)s THEN now() - interval '1 hour' "
        "     WHEN g <= %(active)s + %(recent)s THEN now() - interval '3 days' "
        "     ELSE now() - interval '60 days' END "
        "FROM generate_series(1, %(n)s) g",
        {"base": base, "n": n, "active": active, "recent": recent})
    await conn.execute(
        "INSERT INTO collection_state (soldier_id, resource, eligible_since) "
        "SELECT soldier_id, r, now() - interval '30 days' + soldier_id * interval '1 s' "
        "FROM soldiers, unnest(ARRAY['detailed','profile','weapons','vehicles']) r "
        "ON CONFLICT DO NOTHING")
    cur = await conn.execute("SELECT array_agg(soldier_id) AS ids FROM soldiers")
    row = await cur.fetchone()
    await activity.refresh(conn, row["ids"] if row else [], Policy())


async def jobs_by(conn: Conn, column: str) -> dict[str, int]:
    cur = await conn.execute(  # type: ignore[call-overload]
        f"SELECT {column} AS k, count(*) AS n FROM collection_jobs GROUP BY 1")
    return {str(r["k"]): int(r["n"]) for r in await cur.fetchall()}


async def test_feeds_only_the_deficit_and_never_duplicates(conn: Conn) -> None:
    await population(conn, 500)
    pol = Policy(working_set_background=40)
    first = await feeder.replenish(conn, pol)
    assert first.total == 40 and first.depth_before == 0
    again = await feeder.replenish(conn, pol)
    assert again.total == 0 and again.depth_before == 40
    await conn.execute("DELETE FROM collection_jobs WHERE job_id IN "
                       "(SELECT job_id FROM collection_jobs ORDER BY job_id LIMIT 15)")
    third = await feeder.replenish(conn, pol)
    assert third.total == 15
    assert await count(conn, "SELECT count(*) FROM collection_jobs") == 40
    assert await count(conn, "SELECT count(*) FROM (SELECT soldier_id, resource FROM "
                             "collection_jobs GROUP BY 1, 2 HAVING count(*) > 1) d") == 0
    assert await count(conn, "SELECT count(*) FROM collection_events "
                             "WHERE event_type = 'created'") == 55


async def test_a_job_waiting_out_a_retry_is_not_capacity(conn: Conn) -> None:
    await population(conn, 100)
    pol = Policy(working_set_background=10)
    await feeder.replenish(conn, pol)
    await conn.execute("UPDATE collection_jobs SET eligible_at = now() + interval '1 hour' "
                       "WHERE job_id IN (SELECT job_id FROM collection_jobs LIMIT 4)")
    report = await feeder.replenish(conn, pol)
    assert report.depth_before == 6 and report.total == 4


async def test_class_shares_and_borrowing(conn: Conn) -> None:
    await population(conn, 400, active=100, recent=0)
    pol = Policy(working_set_background=100)
    await feeder.replenish(conn, pol)
    by_class = await jobs_by(conn, "priority_class")
    # recent's unused 20 % and retry's 5 % borrowed, in class order: active first
    assert by_class == {"active": 60 + 20 + 5, "bootstrap": 15}
    assert (await jobs_by(conn, "resource"))["detailed"] >= 15  # bootstrap starts detailed-first


async def test_the_class_order_holds_under_sustained_active_demand(conn: Conn) -> None:
    """Every class has more work than the working set, round after round (the fleet serves
    the lowest rank first, as its claim does): the default shares feed active ahead of recent
    and recent ahead of bootstrap, and never leave recent work unfed."""
    await population(conn, 2_000, active=500, recent=500)
    pol = Policy(working_set_background=100)
    created: dict[str, int] = {}
    for _ in range(8):
        report = await feeder.replenish(conn, pol)
        for klass, n in report.created.items():
            created[klass] = created.get(klass, 0) + n
        await conn.execute("DELETE FROM collection_jobs WHERE job_id IN (SELECT job_id FROM "
                           "collection_jobs ORDER BY rank LIMIT 60)")
    assert created["active"] > created["recent"] > created["bootstrap"] > 0, created
    fed = await count(conn, "SELECT count(*) FROM collection_events WHERE event_type = "
                            "'created' AND priority_class = 'recent'")
    assert fed == created["recent"]


async def test_active_soldiers_get_every_resource_bootstrap_only_detailed_at_first(
        conn: Conn) -> None:
    await population(conn, 300, active=10)
    await feeder.replenish(conn, Policy(working_set_background=100))
    cur = await conn.execute("SELECT priority_class, resource, count(*) AS n FROM "
                             "collection_jobs GROUP BY 1, 2")
    got = {(r["priority_class"], r["resource"]): r["n"] for r in await cur.fetchall()}
    assert {r for c, r in got if c == "active"} == {"detailed", "profile", "weapons",
                                                    "vehicles"}
    assert {r for c, r in got if c == "bootstrap"} == {"detailed"}
    assert sum(n for (c, _), n in got.items() if c == "active") == 40  # all 10 × 4


async def test_progressive_mix_joins_resources_at_their_watermarks(conn: Conn) -> None:
    await population(conn, 200)
    # 60 % of detailed attempted (current or unavailable): past the weapons watermark (25 %)
    await conn.execute(
        "UPDATE collection_state SET status = 'current', last_attempt_at = now(), "
        "last_success_at = now(), next_due_at = now() + interval '1 day' "
        "WHERE resource = 'detailed' AND soldier_id % 5 IN (0, 1, 2)")
    await feeder.replenish(conn, Policy(working_set_background=100, share_active=0,
                                        share_bootstrap=1, share_retry=0))
    by_resource = await jobs_by(conn, "resource")
    assert set(by_resource) == {"detailed", "profile", "weapons", "vehicles"}
    assert by_resource["detailed"] == 60  # weights 6:2:1:1
    await conn.execute("DELETE FROM collection_jobs")
    pol = await policy_mod.set_value(conn, "watermark_weapons", "0.9", by="test")
    await feeder.replenish(conn, pol.model_copy(update={
        "working_set_background": 100, "share_active": 0, "share_bootstrap": 1,
        "share_retry": 0}))
    assert "weapons" not in await jobs_by(conn, "resource")


async def test_due_sweep_and_decay(conn: Conn) -> None:
    await population(conn, 4, active=2)
    await conn.execute(
        "UPDATE collection_state SET status = 'current', last_attempt_at = now(), "
        "last_success_at = now() - interval '2 days', next_due_at = now() - interval '1 day'")
    assert await activity.mark_due(conn, 60.0) == 8  # only the 2 active soldiers × 4 resources
    await conn.execute("UPDATE soldiers SET last_seen_at = now() - interval '2 days'")
    await conn.execute("UPDATE collection_state SET activity_at = now() - interval '2 days' "
                       "WHERE activity_class = 'active'")
    assert await activity.decay(conn, Policy()) == 8
    assert await count(conn, "SELECT count(*) FROM collection_state "
                             "WHERE activity_class = 'recent'") == 8


async def due_offsets(conn: Conn) -> list[float]:
    """Seconds each row marked due was moved ahead of its next due time."""
    cur = await conn.execute(
        "SELECT extract(epoch FROM next_due_at - eligible_since)::float8 AS ahead "
        "FROM collection_state WHERE status = 'due' ORDER BY soldier_id")
    return [float(r["ahead"]) for r in await cur.fetchall()]


async def test_the_due_sweep_spreads_due_times_over_its_period(conn: Conn) -> None:
    """Soldiers whose due times share one phase against the sweep (in the fleet: each write
    follows a sweep by a nearly constant delay) become due at times spread over the sweep
    period before it, so their waits for the sweep are spread too, not one and the same."""
    await population(conn, 1000, active=1000)
    await conn.execute(  # due 10 s ago, each soldier's detailed collected an hour before
        "UPDATE collection_state SET status = 'current', last_success_at = now() - interval "
        "'1 hour 10 seconds', next_due_at = now() - interval '10 seconds' "
        "WHERE resource = 'detailed'")
    assert await activity.mark_due(conn, 2.0) == 1000
    ahead = await due_offsets(conn)
    assert all(0 <= a < 2.0 for a in ahead)
    tenths = [sum(1 for a in ahead if k * 0.2 <= a < (k + 1) * 0.2) for k in range(10)]
    assert min(tenths) >= 50 and max(tenths) <= 150, tenths  # uniform: ~100 each (sd 9.5)
    # one phase, its sweep waits spread over it: due 10 s before this sweep plus 0..2 s
    assert sum(ahead) / len(ahead) == pytest.approx(1.0, abs=0.15)


async def test_a_spread_due_time_holds_between_sweeps_and_within_the_interval(
        conn: Conn) -> None:
    await population(conn, 1000, active=1000)
    await conn.execute(  # due in 30 s: taken now only if moved ahead by 30 s or more
        "UPDATE collection_state SET status = 'current', last_success_at = now() - interval "
        "'1 hour', next_due_at = now() + interval '30 seconds' WHERE resource = 'detailed'")
    first = await activity.mark_due(conn, 60.0)
    assert 350 <= first <= 650  # about half of a spread over 60 s
    assert all(a >= 29 for a in await due_offsets(conn))
    # the next sweep draws the same for each row: only the rows whose moved due time has
    # passed since come (a few per second), not half of the rest by a second draw
    assert await activity.mark_due(conn, 60.0) <= 100
    # a resource refreshed more often than the sweep is moved ahead by at most its interval
    await conn.execute(
        "UPDATE collection_state SET status = 'current', last_success_at = now() - interval "
        "'0.5 second', next_due_at = now() WHERE resource = 'detailed'")
    assert await activity.mark_due(conn, 60.0) == 1000
    assert max(await due_offsets(conn)) <= 0.5 + 0.05
    # no spread: due exactly at next_due_at, as before
    await conn.execute(
        "UPDATE collection_state SET status = 'current', next_due_at = now() + interval "
        "'1 second' WHERE resource = 'detailed'")
    assert await activity.mark_due(conn, 0.0) == 0


async def body_plan(conn: Conn, function: str, arguments: str) -> str:
    """The plan of a scheduler batch function's statement (migration 0023: its one RETURN
    QUERY, with $n parameters, planned with the call's values as the function forces), prepared
    with the function's argument types and explained, not run."""
    cur = await conn.execute(
        "SELECT p.prosrc,"
        " array_to_string(ARRAY(SELECT format_type(t, NULL) FROM unnest(p.proargtypes) t),"
        " ', ') AS types FROM pg_proc p WHERE p.proname = %s", (function,))
    row = await cur.fetchone()
    assert row is not None
    found = re.search(r"RETURN QUERY\s+(.*);\s*END\s*$", str(row["prosrc"]), re.DOTALL)
    assert found, row["prosrc"]
    await conn.execute(f"PREPARE body_plan ({row['types']}) AS {found.group(1)}")  # type: ignore[arg-type]
    try:
        cur = await conn.execute(f"EXPLAIN EXECUTE body_plan ({arguments})")  # type: ignore[arg-type]
        return "\n".join(str(r["QUERY PLAN"]) for r in await cur.fetchall())
    finally:
        await conn.execute("DEALLOCATE body_plan")


async def test_feed_query_uses_the_class_fifo_index(conn: Conn) -> None:
    await population(conn, 3000, active=30)
    await conn.execute("ANALYZE")
    plan = await body_plan(conn, "bf4ps_feed_class", "'bootstrap', 'detailed', 100, 0")
    assert "ix_state_feed" in plan, plan


PARK = ("UPDATE collection_state SET status = 'unavailable', consecutive_failures = 1, "
        "attempts_total = 1, last_error_class = 'not_found', "
        "last_attempt_at = now() - %(ago)s::interval, last_error_at = now() - %(ago)s::interval "
        "WHERE resource = %(resource)s")


async def test_parked_resources_of_active_soldiers_are_rechecked(conn: Conn) -> None:
    await population(conn, 4, active=2)
    await conn.execute(PARK, {"ago": "10 days", "resource": "detailed"})  # all four soldiers
    await conn.execute(PARK, {"ago": "1 day", "resource": "weapons"})  # parked too recently
    never = Policy(unavailable_recheck_seconds=0)
    assert await activity.recheck_parked(conn, never) == 0
    assert await activity.recheck_parked(conn, Policy()) == 2  # the active soldiers' detailed
    assert await activity.recheck_parked(conn, Policy()) == 0  # once
    cur = await conn.execute(
        "SELECT activity_class, resource, status, next_attempt_at <= now() AS due_now, "
        "consecutive_failures FROM collection_state WHERE status <> 'never_attempted'")
    got = sorted((r["activity_class"], r["resource"], r["status"], r["due_now"],
                  r["consecutive_failures"]) for r in await cur.fetchall())
    assert got == [("active", "detailed", "retry_wait", True, 1)] * 2 + [
        ("active", "weapons", "unavailable", None, 1)] * 2 + [
        ("bootstrap", "detailed", "unavailable", None, 1)] * 2 + [
        ("bootstrap", "weapons", "unavailable", None, 1)] * 2
    cur = await conn.execute(
        "SELECT e.soldier_id, e.resource, e.error_class, e.details, s.last_seen_at "
        "FROM collection_events e JOIN soldiers s USING (soldier_id) "
        "WHERE event_type = 'recheck_scheduled'")
    events = await cur.fetchall()
    assert len(events) == 2 and {e["resource"] for e in events} == {"detailed"}
    assert all(e["error_class"] == "not_found" and e["details"]["consecutive_failures"] == 1
               and "parked_at" in e["details"] for e in events)
    await feeder.replenish(conn, Policy(working_set_background=10))
    assert await count(conn, "SELECT count(*) FROM collection_jobs j JOIN collection_state cs "
                             "USING (soldier_id, resource) WHERE j.reason = 'retry' AND "
                             "cs.status = 'retry_wait' AND j.resource = 'detailed'") == 2


async def test_recheck_reads_only_parked_rows_of_active_soldiers(conn: Conn) -> None:
    await population(conn, 3000, active=30)
    await conn.execute(PARK, {"ago": "10 days", "resource": "vehicles"})
    await conn.execute("ANALYZE")
    plan = await body_plan(conn, "bf4ps_parked_recheck", f"{7 * 86_400}, 1000")
    assert "ix_state_parked" in plan, plan


async def test_a_resource_whose_circuit_is_open_is_not_fed(conn: Conn) -> None:
    await population(conn, 100, active=100)  # active soldiers: every resource is fed
    await conn.execute(
        "INSERT INTO circuit_breakers (lane, resource, state, signature, opened_at, "
        "next_probe_at, probe_seconds, close_successes, soldiers, egresses) VALUES "
        "('background', 'weapons', 'open', 'unrecognized', now(), now(), 60, 2, 9, 2)")
    fed = await feeder.replenish(conn, Policy(working_set_background=40))
    assert fed.total == 40
    assert "weapons" not in await jobs_by(conn, "resource")
    await conn.execute("UPDATE circuit_breakers SET state = 'closed', closed_at = now(), "
                       "next_probe_at = NULL")
    await conn.execute("DELETE FROM collection_jobs")
    await feeder.replenish(conn, Policy(working_set_background=40))
    assert (await jobs_by(conn, "resource")).get("weapons", 0) > 0
