"""The admission trusts no caller (db/functions/admission.sql): identity, egress and lane come
from the caller's registration, the budget's shares from the database, and a caller's own
timings are clamped where they could only lift a ceiling; the forms builds of schema 0032 call
keep working with the same trust."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from bf4ps.db.connect import Conn, connection
from bf4ps.policy import Policy
from tests.helpers import count, gated_collector, seed_work, set_policy
from tests.roles import Logins, logins  # noqa: F401 - a fixture

N, W = 5, 60.0
HOSTILE = (-1e6, 1e6, -1e6)  # margin, claim horizon, connect lead


async def _most_in_any_window(conn: Conn, seconds: float) -> int:
    """The most counted requests any window of `seconds` (ending at a counted slot) holds."""
    return await count(conn, """
        SELECT COALESCE(max(n), 0) FROM (
            SELECT (SELECT count(*) FROM counted_requests o
                    WHERE o.slot_at > r.slot_at - make_interval(secs => %(w)s)
                      AND o.slot_at <= r.slot_at) AS n
            FROM counted_requests r) x""", {"w": seconds})


async def test_hostile_timings_never_lift_the_fleet_budget(conn: Conn, tmp_path: Path) -> None:
    """A negative margin and connect lead and an enormous horizon: before, the window shrank to
    nothing and slots fell before the gate's, so every call counted. Now at most N in any
    window, however often it is asked."""
    me = await gated_collector(conn, tmp_path, budget=(N, W))
    counted = 0
    for _ in range(4 * N):
        cur = await conn.execute(
            "SELECT outcome FROM admission_count_unattached(%s, %s, 'bootstrap', 'detailed', "
            "%s, %s, %s)", [me.egress_key, me.collector_uuid, *HOSTILE])
        row = await cur.fetchone()
        counted += row is not None and row["outcome"] == "counted"
    assert counted >= 1  # it counts, within bounds
    assert await _most_in_any_window(conn, W) <= N


async def test_the_old_form_reads_neither_the_lane_nor_the_shares_it_is_given(
        conn: Conn, tmp_path: Path) -> None:
    """admission_slot (the form builds of schema 0032 call) with `p_interactive` true and every
    floor 0 for a background collector: the registration's lane and the database's shares
    decide, so the interactive floor stays free while a player waits."""
    me = await gated_collector(conn, tmp_path, budget=(4, W))
    player = await gated_collector(conn, tmp_path, "int-1", egress="eg-int")
    await conn.execute("UPDATE collectors SET lane = 'interactive', health = 'healthy' "
                       "WHERE collector_uuid = %s", [player.collector_uuid])
    await seed_work(conn, 2)
    await conn.execute("UPDATE collection_jobs SET priority_class = 'interactive', "
                       "lane = 'interactive' WHERE job_id = (SELECT min(job_id) "
                       "FROM collection_jobs)")
    await set_policy(conn, budget_floor_interactive=0.5)  # 2 of 4
    await conn.execute("INSERT INTO request_ledger (slot_at, egress_key, budget_class) "
                       "SELECT clock_timestamp(), 'eg-other', 'recent' FROM generate_series(1, 2)")
    cur = await conn.execute(
        "SELECT outcome, classes FROM admission_slot(%s, %s, NULL, NULL, true, 0.05, 5, 1, "
        "'{\"cap_active\": 1, \"floor_interactive\": 0, \"floor_bootstrap\": 0, "
        "\"floor_retry\": 0}'::jsonb)", ["eg-int", me.collector_uuid])
    row = await cur.fetchone()
    assert row is not None and row["outcome"] == "wait" and row["classes"] == []


async def test_the_shares_default_to_the_policy_s(conn: Conn) -> None:
    pol = Policy()
    cur = await conn.execute("SELECT budget_shares() AS s")
    assert await cur.fetchone() == {"s": {
        "cap_active": pol.budget_cap_active, "floor_interactive": pol.budget_floor_interactive,
        "floor_bootstrap": pol.budget_floor_bootstrap, "floor_retry": pol.budget_floor_retry}}
    await conn.execute("INSERT INTO scheduler_policy (key, value) VALUES "
                       "('budget_floor_retry', '7'), ('budget_cap_active', '\"x\"')")
    cur = await conn.execute("SELECT budget_shares() ->> 'floor_retry' AS r, "
                             "budget_shares() ->> 'cap_active' AS a")
    assert await cur.fetchone() == {"r": "1", "a": "0.75"}  # clamped; unreadable: the default


@pytest.mark.parametrize("call", [
    "SELECT * FROM admission_look(%(other)s, 0.05, 5, 1)",
    "SELECT * FROM admission_count(%(other)s, 1, gen_random_uuid(), 0.05, 5, 1)",
    "SELECT * FROM admission_count_unattached('eg-2', %(other)s, 'active', 'detailed', 0.05, 5, 1)",
    "SELECT * FROM admission_count_unattached('eg-2', NULL, 'active', 'detailed', 0.05, 5, 1)",
    "SELECT * FROM admission_slot('eg-2', %(other)s, NULL, NULL, false, 0.05, 5, 1, '{}')",
])
async def test_a_collector_login_is_admitted_only_for_its_own_registration(
        conn: Conn, db_url: str, tmp_path: Path, logins: Logins, call: str) -> None:  # noqa: F811
    """Another host's registration (its db_login another login): refused, nothing counted or
    claimed; the caller's own is admitted."""
    other = await gated_collector(conn, tmp_path, "c-other", egress="eg-2")
    await seed_work(conn, 2)
    await conn.execute("UPDATE collectors SET db_login = 'someone_else' "
                       "WHERE collector_uuid = %s", [other.collector_uuid])
    mine = await gated_collector(conn, tmp_path, "c-mine", egress="eg-3")
    await conn.execute("UPDATE collectors SET db_login = %s WHERE collector_uuid = %s",
                       [logins.names["collector"], mine.collector_uuid])
    async with connection(logins.urls["collector"]) as hostile:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            await hostile.execute(call, {"other": other.collector_uuid})
        # a claim for another's registration claims nothing
        cur = await hostile.execute("SELECT job_id FROM queue_claim(%s, 'background', 60)",
                                    [other.collector_uuid])
        assert await cur.fetchall() == []
        # the caller's own registration is admitted
        cur = await hostile.execute("SELECT outcome FROM admission_look(%s, 0.05, 5, 1)",
                                    [mine.collector_uuid])
        assert await cur.fetchone() == {"outcome": "open"}
    assert await count(conn, "SELECT count(*) FROM request_ledger") == 0
    assert await count(conn, "SELECT count(*) FROM collection_jobs "
                             "WHERE lease_token IS NOT NULL") == 0


async def test_a_full_window_stays_full_after_a_crash_emptied_the_buckets(
        conn: Conn, tmp_path: Path) -> None:
    """The budget's buckets are unlogged: crash recovery empties them (and their ready row).
    The first admission after that counts the window from the ledger again, so a window the
    ledger holds full admits nothing."""
    me = await gated_collector(conn, tmp_path, budget=(N, W))
    await conn.execute("INSERT INTO request_ledger (slot_at, egress_key, budget_class) "
                       "SELECT clock_timestamp(), 'eg-other', 'bootstrap' "
                       "FROM generate_series(1, %s)", [N])
    await conn.execute("DELETE FROM budget_buckets_ready")  # what crash recovery leaves
    await conn.execute("DELETE FROM budget_buckets")
    cur = await conn.execute(
        "SELECT outcome FROM admission_count_unattached(%s, %s, 'bootstrap', 'detailed', "
        "0, 2, 1)", [me.egress_key, me.collector_uuid])
    row = await cur.fetchone()
    assert row is not None and row["outcome"] != "counted"
    assert await count(conn, "SELECT count(*) FROM counted_requests") == N
    assert await count(conn, "SELECT sum(n) FROM budget_buckets WHERE span = 60") == N
