"""The role matrix of docs/operations.md ("Roles and what each may do"), on the real server: each
runtime role (a login made for the test, given its group role by `bf4ps db grant`) runs each
statement of its row, and each is refused (permission denied, or the function's own rule) or
allowed as documented — the direct UPDATEs of the budget, the gates and the ledger, a forged
restore hold, temporary functions, other collectors' lease tokens and players' addresses,
another login's collector's heartbeat, clock or stop, and every role's direct write of the
event log (an operator's too) among them. Then: every fleet-settings change is audited with
session_user (an operator's through the audited functions, a superuser's direct UPDATE),
`bf4ps gate list` names the database role, and every function a runtime role may execute that
writes is SECURITY DEFINER with a fixed search_path (a later migration that re-creates one is
caught)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bf4ps.db.connect import Conn, connection
from tests.helpers import seed_work
from tests.roles import Logins, bf4ps_cli

pytestmark = pytest.mark.server_features  # the server's version can change the outcome

DENIED = "denied"       # InsufficientPrivilege, the message containing the text given
NO_FUNCTION = "nofunc"  # no such function (the restore check takes no reason any more)
ROWS = "rows"           # runs; returns this many rows (0: the function's rule refused it)
OK = "ok"               # runs

TEMP_TABLE = "CREATE TEMP TABLE mine (a int)"
TEMP_FUNCTION = "CREATE FUNCTION pg_temp.mine() RETURNS int LANGUAGE sql AS 'SELECT 1'"
NO_TEMP = "permission denied to create temporary tables"

# statements every runtime role is refused, whatever it is
FOR_NOBODY = [
    ("UPDATE fleet_budget SET requests = 999999", DENIED, "permission denied for table"),
    ("UPDATE egress_gates SET min_interval_seconds = 0.05", DENIED, "permission denied for table"),
    ("UPDATE request_ledger SET unsent_at = now()", DENIED, "permission denied for table"),
    # retention deletes through bf4ps_ledger_prune / bf4ps_events_prune only (0027)
    ("DELETE FROM request_ledger", DENIED, "permission denied for table request_ledger"),
    ("DELETE FROM collection_events", DENIED, "permission denied for table collection_events"),
    ("INSERT INTO fleet_settings_changes (setting, subject, changed_by) "
     "VALUES ('gate', 'x', 'me')", DENIED, "permission denied for table"),
    (TEMP_TABLE, DENIED, NO_TEMP),
    (TEMP_FUNCTION, DENIED, NO_TEMP),
    ("SELECT * FROM bf4ps_restore_check('forged: hold the fleet')", NO_FUNCTION, ""),
    ("SELECT secret FROM ledger_receipt_key", DENIED, "permission denied for table"),
    ("SELECT bf4ps_ledger_sign(1, now())", DENIED, "permission denied for function"),
]


def event(kind: str, args: str = "") -> str:
    """bf4ps_event_record (migration 0023): the one way a runtime role writes an event."""
    return f"SELECT bf4ps_event_record('{kind}'{', ' + args if args else ''})"


NO_DIRECT_EVENT = ("INSERT INTO collection_events (event_type, job_id, lease_token) "
                   "VALUES ('succeeded', %(job)s, %(tok)s)", DENIED,
                   "permission denied for table collection_events")
NOT_OWN = "only its own registration"
NO_EXECUTE = "permission denied for function"
OWN_LEASE = "collector_uuid => %(ca)s, job_id => %(job)s, lease_token => %(tok)s"
SCHEDULER_BATCHES = [
    "SELECT bf4ps_feed_class('bootstrap', 'detailed', 0, 0)",
    "SELECT bf4ps_feed_retry(0)",
    "SELECT * FROM bf4ps_reap_expired(10)",
    "SELECT * FROM bf4ps_collectors_mark_silent(600)",
    "SELECT bf4ps_parked_recheck(86400, 10)",
    "SELECT * FROM bf4ps_intake_enqueue('{}'::bigint[], '{}'::text[], '{}'::timestamptz[], "
    "'profile', 'bf4sw_discovery', now())",
]
LOGIN_ATTEMPT = ("SELECT * FROM bf4ps_ops_login_attempt(ARRAY['net:203.0.113.0/24'], "
                 "'failed', 5, 1, 300, 3600)")
# the restore guard's hold as its readers show it (0027): every role may read it (no hold
# here: 0 rows); only an operator may vouch for a server start
READ_HOLD = ("SELECT * FROM bf4ps_restore_hold()", ROWS, 0)
NO_VOUCH = ("SELECT * FROM bf4ps_restore_vouch('forged: the fleet was down')", DENIED,
            "permission denied for function bf4ps_restore_vouch")
# retention only through its functions, which keep their floors (0027): the rows of the
# setup are inside the budget window, so nothing is deleted
PRUNE = [("SELECT * FROM bf4ps_ledger_prune(now(), 1000)", ROWS, 0),
         ("SELECT * FROM bf4ps_events_prune(now(), 1000)", ROWS, 0)]
# (statement, rows it returns when allowed)
SCHEDULER_ALLOWED = [(SCHEDULER_BATCHES[0], 1), (SCHEDULER_BATCHES[1], 1),
                     (SCHEDULER_BATCHES[2], 0), (SCHEDULER_BATCHES[3], 0),
                     (SCHEDULER_BATCHES[4], 1), (SCHEDULER_BATCHES[5], 0)]
NOT_THE_SCHEDULERS = [(b, DENIED, "permission denied for function") for b in SCHEDULER_BATCHES]

MATRIX: dict[str, list[tuple[str, str, Any]]] = {
    "collector": [*FOR_NOBODY, READ_HOLD, NO_VOUCH,
        ("INSERT INTO egress_gates (egress_key, min_interval_seconds) VALUES ('mx-new', 0.05)",
         DENIED, "permission denied for table egress_gates"),
        ("DELETE FROM collection_jobs", DENIED, "permission denied for table collection_jobs"),
        ("UPDATE collection_jobs SET eligible_at = now()", DENIED, "permission denied for table"),
        ("UPDATE collectors SET enabled = false", DENIED, "permission denied for table"),
        ("SELECT lease_token FROM collection_jobs", DENIED, "permission denied for table"),
        ("SELECT * FROM collection_jobs", DENIED, "permission denied for table"),
        ("SELECT lease_token FROM collection_events", DENIED, "permission denied for table"),
        ("SELECT lease_token FROM collection_events_log", DENIED, "permission denied for view"),
        ("SELECT client_key FROM interactive_requests", DENIED, "permission denied for table"),
        ("SELECT * FROM bf4ps_gate_set('mx-a', 0.05, NULL, NULL, NULL, false, false, 'x')",
         DENIED, "permission denied for function bf4ps_gate_set"),
        ("SELECT * FROM bf4ps_budget_set(999999, 60, true, 'x')", DENIED,
         "permission denied for function bf4ps_budget_set"),
        ("SELECT * FROM bf4ps_recon_gate_interval('mx-a', 0.05)", DENIED,
         "permission denied for function"),
        ("SELECT * FROM bf4ps_collector_set_flags('mx-b', false, NULL, NULL)", DENIED,
         "permission denied for function bf4ps_collector_set_flags"),
        ("SELECT * FROM bf4ps_ledger_unsent_operator(%(old_ledger)s)", DENIED,
         "permission denied for function"),
        # the functions' own rules
        ("SELECT * FROM bf4ps_collector_retire(%(cb)s, NULL)", DENIED, NOT_OWN),
        ("SELECT * FROM bf4ps_enqueue_insert(%(soldier)s, 'profile', 'background', 'active', "
         "now(), 'active_refresh', now(), NULL, NULL, NULL)", DENIED,
         "may enqueue interactive jobs only"),
        ("SELECT * FROM bf4ps_ledger_unsent(%(old_ledger)s, %(ca)s, %(tok)s)", ROWS, 0),
        ("SELECT * FROM bf4ps_ledger_unsent(%(new_ledger)s, %(ca)s, gen_random_uuid())", ROWS, 0),
        ("SELECT * FROM bf4ps_job_delete(%(job)s, gen_random_uuid())", ROWS, 0),
        ("SELECT * FROM bf4ps_job_retry(%(job)s, gen_random_uuid(), now(), 'x', 'y')", ROWS, 0),
        ("SELECT * FROM bf4ps_gate_seed('mx-a', 0.05, NULL, NULL, 'x')", ROWS, 0),
        ("SELECT * FROM bf4ps_budget_seed(999999, 60, 'x')", ROWS, 0),
        # what it needs
        ("SELECT job_id, status, collector_uuid, lease_expires_at FROM collection_jobs", OK, None),
        ("SELECT soldier_id, status, message FROM interactive_requests", OK, None),
        ("SELECT * FROM bf4ps_restore_check()", ROWS, 1),
        ("SELECT * FROM bf4ps_collector_heartbeat(%(ca)s)", ROWS, 1),
        ("SELECT * FROM bf4ps_job_renew(%(job)s, %(ca)s, %(tok)s, 300)", ROWS, 1),
        ("SELECT * FROM bf4ps_gate_seed('mx-c', 1.0, NULL, NULL, 'first collector')", DENIED,
         "only the egress of its own registration"),
        ("SELECT * FROM bf4ps_ledger_unsent(%(new_ledger)s, %(ca)s, %(tok)s)", ROWS, 1),
        ("SELECT * FROM admission_slot('mx-a', %(ca)s, NULL, NULL, false, 0.1, 60, 0.1, "
         "'{}'::jsonb)", ROWS, 1),
        # events (migration 0023): only through bf4ps_event_record, under its rules
        NO_DIRECT_EVENT,
        (event("succeeded", OWN_LEASE), DENIED, "may not record succeeded events"),
        (event("lease_expired", OWN_LEASE), DENIED, "may not record lease_expired events"),
        (event("scheduler_started"), DENIED, "may not record scheduler_started events"),
        (event("egress_throttled", "collector_uuid => %(cb)s"), DENIED,
         "events of its own registration only"),
        (event("egress_throttled"), DENIED, "events of its own registration only"),
        (event("failed", "collector_uuid => %(ca)s, job_id => %(job)s, "
                         "lease_token => gen_random_uuid()"), DENIED,
         "only of a lease its collector holds now"),
        (event("retry_scheduled", OWN_LEASE), DENIED, "only once, after its own lease's failed"),
        (event("stale_finalize_rejected", OWN_LEASE), DENIED, "its finalize is not stale"),
        (event("heartbeat_restored", "collector_uuid => %(ca)s, job_id => %(job)s"), DENIED,
         "names no job or lease"),
        (event("created", "job_id => %(job)s, lease_token => %(tok)s"), DENIED,
         "carries no lease token"),
        (event("egress_throttled", "collector_uuid => %(ca)s, collector_name => 'forged', "
                                   "egress_key => 'forged'"), ROWS, 1),
        (event("failed", OWN_LEASE + ", soldier_id => 1, resource => 'weapons', "
                                     "result => 'server'"), ROWS, 1),
        (event("retry_scheduled", OWN_LEASE), ROWS, 1),
        (event("retry_scheduled", OWN_LEASE), DENIED, "only once, after its own lease's failed"),
        (event("stale_finalize_rejected", "collector_uuid => %(ca)s, job_id => %(job)s, "
                                          "lease_token => gen_random_uuid()"), ROWS, 1),
        ("SELECT * FROM bf4ps_collector_started(%(cb)s, 'x', 1, NULL)", DENIED,
         "was registered by login"),
        # the restore guard's receipts (0023): a forged one of a row that never was holds
        # nothing (the final state: no hold); a real one of an existing row is given
        ("SELECT * FROM bf4ps_restore_check(999999999, now(), 'forged')", ROWS, 1),
        ("SELECT * FROM bf4ps_restore_check(999999999, now(), repeat('0', 64))", ROWS, 1),
        ("SELECT * FROM bf4ps_ledger_receipt(%(new_ledger)s)", ROWS, 1),
        *NOT_THE_SCHEDULERS,
        (LOGIN_ATTEMPT, DENIED, "permission denied for function"),
        # the lifecycle of its own registration only (0026): not another login's collector
        ("SELECT * FROM bf4ps_collector_heartbeat(%(cb)s)", DENIED, NOT_OWN),
        ("SELECT * FROM bf4ps_collector_clock(%(cb)s, 9.0, 0.1, true)", DENIED, NOT_OWN),
        ("SELECT * FROM bf4ps_collector_stopped(%(cb)s)", DENIED, NOT_OWN),
        ("SELECT * FROM bf4ps_collector_clock(%(ca)s, 0.01, 0.1, false)", ROWS, 1),
        ("SELECT * FROM bf4ps_collector_stopped(%(ca)s)", ROWS, 1),
        ("SELECT * FROM bf4ps_collector_heartbeat(%(ca)s)", ROWS, 1),
    ],
    "web": [*FOR_NOBODY, READ_HOLD, NO_VOUCH,
        ("UPDATE collection_jobs SET lane = 'interactive'", DENIED, "permission denied for table"),
        ("DELETE FROM collection_jobs", DENIED, "permission denied for table"),
        ("INSERT INTO collection_jobs (soldier_id, resource, lane, priority_class, rank, reason) "
         "VALUES (%(soldier)s, 'profile', 'background', 'active', now(), 'active_refresh')",
         DENIED, "permission denied for table"),
        ("SELECT * FROM bf4ps_enqueue_insert(%(soldier)s, 'profile', 'background', 'active', "
         "now(), 'active_refresh', now(), NULL, NULL, NULL)", DENIED,
         "may enqueue interactive jobs only"),
        ("SELECT * FROM bf4ps_enqueue_promote(%(job)s, 'background', 'active', now(), "
         "'active_refresh', NULL, now())", DENIED, "may enqueue interactive jobs only"),
        ("SELECT * FROM bf4ps_job_delete(%(job)s, %(tok)s)", DENIED,
         "permission denied for function"),
        ("SELECT lease_token FROM collection_jobs", DENIED, "permission denied for table"),
        ("SELECT * FROM bf4ps_gate_set('mx-a', 0.05, NULL, NULL, NULL, false, false, 'x')",
         DENIED, "permission denied for function"),
        ("SELECT * FROM bf4ps_collector_heartbeat(%(ca)s)", DENIED,
         "permission denied for function"),
        ("SELECT client_key FROM interactive_requests", OK, None),
        ("SELECT * FROM bf4ps_collector_set_flags('mx-b', NULL, true, 'console')", ROWS, 1),
        ("SELECT * FROM bf4ps_collector_set_flags('mx-b', NULL, false, NULL)", ROWS, 1),
        # a resume keeps enabled (the CLI's resume names it); disabling is an operator's
        ("SELECT * FROM bf4ps_collector_set_flags('mx-b', true, false, NULL)", ROWS, 1),
        ("SELECT * FROM bf4ps_collector_set_flags('mx-b', false, NULL, NULL)", DENIED,
         "only an operator may disable"),
        ("SELECT * FROM bf4ps_collector_retire(%(cb)s, NULL)", DENIED, NO_EXECUTE),
        # the event log without its lease tokens, no partition read directly (0023)
        ("SELECT lease_token FROM collection_events", DENIED, "permission denied for table"),
        ("SELECT * FROM collection_events", DENIED, "permission denied for table"),
        ("SELECT lease_token FROM collection_events_log", DENIED, "permission denied for view"),
        ("SELECT lease_token FROM collection_events_default", DENIED,
         "permission denied for table"),
        ("SELECT event_id, event_type, collector_name, job_id, details FROM collection_events",
         OK, None),
        ("SELECT event_id, ord, event_type FROM collection_events_log", OK, None),
        NO_DIRECT_EVENT,
        (event("failed", OWN_LEASE), DENIED, "may not record failed events"),
        (event("lease_expired", OWN_LEASE), DENIED, "may not record lease_expired events"),
        (event("created", "job_id => %(job)s, lease_token => %(tok)s"), DENIED,
         "carries no lease token"),
        (event("collector_drained", "collector_uuid => %(cb)s, collector_name => 'forged', "
                                    "result => 'drain'"), ROWS, 1),
        (event("created", "job_id => %(job)s, lane => 'interactive', resource => 'weapons'"),
         ROWS, 1),
        *NOT_THE_SCHEDULERS,
        ("SELECT * FROM bf4ps_ledger_receipt(%(new_ledger)s)", DENIED,
         "permission denied for function"),
        ("SELECT * FROM bf4ps_restore_check(1, now(), 'x')", DENIED,
         "permission denied for function"),
        # the /ops lock-out counts: through the function only
        (LOGIN_ATTEMPT, ROWS, 1),
        ("SELECT * FROM ops_login_failures", DENIED, "permission denied for table"),
        ("DELETE FROM ops_login_failures", DENIED, "permission denied for table"),
    ],
    "scheduler": [*FOR_NOBODY, READ_HOLD, NO_VOUCH, *PRUNE,
        ("SELECT client_key FROM interactive_requests", DENIED, "permission denied for table"),
        ("SELECT * FROM bf4ps_gate_set('mx-a', 0.05, NULL, NULL, NULL, false, false, 'x')",
         DENIED, "permission denied for function"),
        ("SELECT collector_uuid, lease_expires_at FROM collection_jobs", OK, None),
        ("SELECT lease_token FROM collection_jobs", DENIED, "permission denied for table"),
        ("SELECT lease_token FROM collection_events", DENIED, "permission denied for table"),
        ("SELECT lease_token FROM collection_events_log", DENIED, "permission denied for view"),
        ("SELECT bf4ps_coverage_fold()", ROWS, 1),
        # the queue tables only through its batch functions (0023)
        ("UPDATE collection_jobs SET eligible_at = now()", DENIED, "permission denied for table"),
        ("DELETE FROM collection_jobs", DENIED, "permission denied for table"),
        ("INSERT INTO collection_jobs (soldier_id, resource, lane, priority_class, rank, reason) "
         "VALUES (%(soldier)s, 'profile', 'background', 'active', now(), 'active_refresh')",
         DENIED, "permission denied for table"),
        ("UPDATE collectors SET health = 'lost'", DENIED, "permission denied for table"),
        NO_DIRECT_EVENT,
        (event("lease_expired", OWN_LEASE), DENIED, "may not record lease_expired events"),
        (event("failed", OWN_LEASE), DENIED, "may not record failed events"),
        (event("scheduler_started", "details => '{\"why\": \"matrix\"}'"), ROWS, 1),
        *[(b, ROWS, n) for b, n in SCHEDULER_ALLOWED],
        (LOGIN_ATTEMPT, DENIED, "permission denied for function"),
        ("SELECT * FROM ops_login_failures", DENIED, "permission denied for table"),
    ],
    "operator": [*FOR_NOBODY, READ_HOLD, *PRUNE,
        ("SELECT * FROM bf4ps_restore_vouch('matrix: the fleet was down')", ROWS, 1),
        ("SELECT * FROM bf4ps_gate_set('mx-a', 2.0, NULL, NULL, NULL, false, false, "
         "'matrix: slower')", ROWS, 1),
        ("SELECT * FROM bf4ps_budget_set(50, 60, true, 'matrix: a budget')", ROWS, 1),
        ("SELECT client_key FROM interactive_requests", OK, None),
        ("SELECT lease_token FROM collection_jobs", OK, None),
        ("SELECT lease_token FROM collection_events", OK, None),
        ("UPDATE collection_jobs SET eligible_at = now()", DENIED, "permission denied for table"),
        ("DELETE FROM collection_jobs", DENIED, "permission denied for table"),
        ("UPDATE collectors SET enabled = false", DENIED, "permission denied for table"),
        *[(b, ROWS, n) for b, n in SCHEDULER_ALLOWED],
        ("SELECT * FROM ops_login_failures", OK, None),
        # events only through bf4ps_event_record, under the rules of the roles it holds (0026)
        NO_DIRECT_EVENT,
        (event("succeeded", OWN_LEASE), DENIED, "may not record succeeded events"),
        (event("lease_expired", OWN_LEASE), DENIED, "may not record lease_expired events"),
        (event("failed", OWN_LEASE), DENIED, "events of its own registration only"),
        (event("created", "job_id => %(job)s, lease_token => %(tok)s"), DENIED,
         "carries no lease token"),
        (event("collector_resumed", "collector_uuid => %(cb)s, collector_name => 'forged'"),
         ROWS, 1),
        # an operator may act on any registration's lifecycle (it runs `bf4ps collector`)
        ("SELECT * FROM bf4ps_collector_clock(%(cb)s, 0.01, 0.1, false)", ROWS, 1),
    ],
}


async def setup(conn: Conn, logins: Logins | None = None) -> dict[str, Any]:
    """Two collectors on their egresses (both alive), a configured budget, a leased job of the
    first, an old and a fresh ledger row of that job, a player's request with an address. The
    first registered by the collector's login, the second by another (the website's)."""
    ca, cb = uuid.uuid4(), uuid.uuid4()
    await conn.execute("UPDATE fleet_budget SET requests = 100, window_seconds = 60, "
                       "configured_at = now()")
    await conn.execute("INSERT INTO egress_gates (egress_key, min_interval_seconds) "
                       "VALUES ('mx-a', 1), ('mx-b', 1)")
    for uid, name in ((ca, "mx-a"), (cb, "mx-b")):
        await conn.execute(
            "INSERT INTO collectors (collector_uuid, collector_name, hostname, lane, egress_key, "
            "health, last_heartbeat_at) VALUES (%s, %s, 'matrix', 'background', %s, 'healthy', "
            "now())", (uid, name, name))
    if logins is not None:
        for uid, who in ((ca, "collector"), (cb, "web")):
            await conn.execute("UPDATE collectors SET db_login = %s WHERE collector_uuid = %s",
                               (logins.names[who], uid))
    await seed_work(conn, 2, resources=("detailed",))
    job = await (await conn.execute(
        "SELECT job_id, lease_token, soldier_id FROM queue_claim(%s, 'background', 600)",
        (ca,))).fetchone()
    assert job is not None
    ledger = {}
    for key, ago in (("old_ledger", 60), ("new_ledger", 0)):
        row = await (await conn.execute(
            "INSERT INTO request_ledger (slot_at, egress_key, budget_class, collector_uuid, "
            "job_id) VALUES (now() - make_interval(secs => %s), 'mx-a', 'bootstrap', %s, %s) "
            "RETURNING request_id", (ago, ca, job["job_id"]))).fetchone()
        assert row is not None
        ledger[key] = row["request_id"]
    await conn.execute("INSERT INTO interactive_requests (request_id, lookup_name, platform, "
                       "client_key) VALUES (gen_random_uuid(), 'Someone', 'pc', '203.0.113.7')")
    return {"ca": ca, "cb": cb, "job": job["job_id"], "tok": job["lease_token"],
            "soldier": job["soldier_id"], **ledger}


async def run_row(url: str, role: str, params: dict[str, Any]) -> list[str]:
    """Each statement of the role's row in its own transaction; what differed from the matrix."""
    wrong = []
    async with connection(url) as c:
        for statement, expect, detail in MATRIX[role]:
            try:
                cur = await c.execute(statement, params)  # type: ignore[arg-type]
                rows = await cur.fetchall() if cur.description else []
            except psycopg.errors.InsufficientPrivilege as exc:
                if expect != DENIED or detail not in str(exc):
                    wrong.append(f"{role}: {statement}: refused ({exc})")
                continue
            except psycopg.errors.UndefinedFunction as exc:
                if expect != NO_FUNCTION:
                    wrong.append(f"{role}: {statement}: {exc}")
                continue
            if expect in (DENIED, NO_FUNCTION):
                wrong.append(f"{role}: {statement}: ALLOWED ({len(rows)} rows)")
            elif expect == ROWS and len(rows) != detail:
                wrong.append(f"{role}: {statement}: {len(rows)} rows, not {detail}")
    return wrong


async def test_each_role_is_refused_or_allowed_as_documented(logins: Logins, conn: Conn) -> None:
    params = await setup(conn, logins)
    wrong = []
    for role in ("collector", "web", "scheduler", "operator"):
        wrong += await run_row(logins.urls[role], role, params)
    assert not wrong, "\n".join(wrong)
    # nothing the refused statements aimed at changed
    state = await (await conn.execute(
        "SELECT (SELECT requests FROM fleet_budget) AS budget,"
        " (SELECT min_interval_seconds FROM egress_gates WHERE egress_key = 'mx-a') AS interval,"
        " (SELECT count(*) FROM collectors WHERE enabled AND NOT drained) AS enabled,"
        " (SELECT count(*) FROM collection_jobs) AS jobs,"
        " (SELECT count(*) FROM request_ledger WHERE unsent_at IS NOT NULL) AS unsent,"
        " (SELECT hold_until FROM restore_guard) AS hold")).fetchone()
    # the operator's audited changes are the only ones: budget 50, interval 2
    assert state == {"budget": 50, "interval": 2.0, "enabled": 2, "jobs": 2, "unsent": 1,
                     "hold": None}, state
    # the events the roles were allowed to record say what the registry and the job say, not
    # what the caller wrote (a forged name and egress, another soldier and resource)
    written = await (await conn.execute(
        "SELECT event_type, collector_name, egress_key, soldier_id, resource, lease_token "
        "FROM collection_events WHERE event_type IN ('egress_throttled', 'failed', "
        "'retry_scheduled', 'collector_drained', 'created') "
        "AND (collector_uuid IS NOT NULL OR event_type = 'created') ORDER BY event_id")
    ).fetchall()
    job = {"soldier_id": params["soldier"], "resource": "detailed"}
    assert [(w["event_type"], w["collector_name"], w["egress_key"]) for w in written
            if w["event_type"] != "created"] == [
        ("egress_throttled", "mx-a", "mx-a"), ("failed", "mx-a", "mx-a"),
        ("retry_scheduled", "mx-a", "mx-a"), ("collector_drained", "mx-b", "mx-b")], written
    for w in written:
        if w["event_type"] in ("failed", "retry_scheduled"):
            assert {k: w[k] for k in job} == job and w["lease_token"] == params["tok"], w
    resumed = await (await conn.execute(
        "SELECT collector_name, egress_key FROM collection_events "
        "WHERE event_type = 'collector_resumed'")).fetchall()
    assert resumed == [{"collector_name": "mx-b", "egress_key": "mx-b"}], resumed
    # a foreign collector's clock was never reported by the collector's login (the operator's
    # report is the last word), its registration never stopped
    other = await (await conn.execute(
        "SELECT health, clock_offset_seconds, clock_skewed_since FROM collectors "
        "WHERE collector_uuid = %s", (params["cb"],))).fetchone()
    assert other == {"health": "healthy", "clock_offset_seconds": 0.01,
                     "clock_skewed_since": None}, other
    web_created = [w for w in written if w["event_type"] == "created"][-1]
    assert {k: web_created[k] for k in job} == job, web_created


async def test_every_settings_change_is_audited_with_the_database_role(
        logins: Logins, conn: Conn, tmp_path: Path) -> None:
    await setup(conn)  # its own changes (as the superuser) are audited too: counted from here
    start = (await (await conn.execute(
        "SELECT max(change_id) AS n FROM fleet_settings_changes")).fetchone() or {})["n"]
    first_event = (await (await conn.execute(
        "SELECT max(event_id) AS n FROM collection_events")).fetchone() or {})["n"]
    operator = logins.names["operator"]
    async with connection(logins.urls["operator"]) as o:
        await o.execute("SELECT * FROM bf4ps_gate_set('mx-a', 3.0, NULL, NULL, NULL, false, "
                        "false, 'slower for a test')")
    # a superuser's direct UPDATE, with no function and no reason: recorded all the same
    await conn.execute("UPDATE fleet_budget SET requests = 77")
    me = (await (await conn.execute("SELECT session_user AS u")).fetchone() or {})["u"]
    changes = await (await conn.execute(
        "SELECT setting, subject, old_value, new_value, changed_by, reason "
        "FROM fleet_settings_changes WHERE change_id > %s ORDER BY change_id", (start,))
    ).fetchall()
    assert [(c["setting"], c["subject"], c["changed_by"], c["reason"]) for c in changes] == [
        ("gate", "mx-a", operator, "slower for a test"), ("budget", "fleet", me, None)]
    assert changes[0]["old_value"]["min_interval_seconds"] == 1.0
    assert changes[0]["new_value"]["min_interval_seconds"] == 3.0
    assert changes[1]["new_value"] == {"requests": 77, "window_seconds": 60.0}
    events = await (await conn.execute(
        "SELECT details->>'by' AS by, result FROM collection_events "
        "WHERE event_type = 'fleet_settings_changed' AND event_id > %s ORDER BY event_id",
        (first_event,))).fetchall()
    assert events == [{"by": operator, "result": "gate"}, {"by": me, "result": "budget"}]
    # an admission (the gate's next slot and count) and a throttle are not settings changes
    await conn.execute("SELECT * FROM admission_slot('mx-a', %s, 0, NULL, false, 0.1, 60, 0.1, "
                       "'{}'::jsonb, 'bootstrap', 'detailed')", (None,))
    await conn.execute("SELECT * FROM bf4ps_gate_throttled('mx-a', 1, 10)")
    assert len(await (await conn.execute("SELECT 1 FROM fleet_settings_changes WHERE "
                                         "change_id > %s", (start,))).fetchall()) == 2
    listed = bf4ps_cli(logins.urls["operator"], "gate", "list", data_dir=tmp_path)
    assert listed.returncode == 0, listed.stderr
    line = next(x for x in listed.stdout.splitlines() if x.startswith("mx-a"))
    assert f"set by {operator}" in line, listed.stdout


WRITES_AS_CALLER = """
SELECT p.oid::regprocedure::text AS function, p.prosecdef AS definer, p.proconfig AS config
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = current_schema() AND p.prokind = 'f' AND p.provolatile = 'v'
  AND p.prorettype <> 'trigger'::regtype
  -- `bf4ps db grant` grants with the caller's own rights, on purpose (migration 0013)
  AND p.proname <> 'bf4ps_grant_role'
  AND EXISTS (SELECT 1 FROM unnest(ARRAY['bf4ps_collector', 'bf4ps_scheduler', 'bf4ps_web',
                                         'bf4ps_operator']) r
              WHERE has_function_privilege(r, p.oid, 'EXECUTE'))
  AND NOT (p.prosecdef AND EXISTS (SELECT 1 FROM unnest(p.proconfig) c
                                   WHERE c LIKE 'search_path=%%'))
ORDER BY 1
"""


async def test_every_function_a_runtime_role_may_run_writes_as_its_definer(conn: Conn) -> None:
    """A CREATE OR REPLACE FUNCTION resets SECURITY DEFINER and the search_path: a migration
    that re-creates one of the roles' functions without them is caught here."""
    assert await (await conn.execute(WRITES_AS_CALLER)).fetchall() == []
    # the check can fail: a function re-created as it was before migration 0018
    async with conn.transaction(force_rollback=True):
        await conn.execute("""
            CREATE OR REPLACE FUNCTION bf4ps_job_renew(p_job bigint, p_collector uuid,
                                                       p_token uuid, p_lease double precision)
            RETURNS TABLE (lease_expires_at timestamptz) LANGUAGE sql AS $$
                SELECT NULL::timestamptz $$""")
        found = await (await conn.execute(WRITES_AS_CALLER)).fetchall()
        assert [f["function"] for f in found] == [
            "bf4ps_job_renew(bigint,uuid,uuid,double precision)"], found


@pytest.mark.parametrize("role", ["collector", "web", "scheduler", "operator"])
async def test_no_runtime_role_may_create_temporary_objects(logins: Logins, role: str) -> None:
    async with connection(logins.urls[role]) as c:
        row = await (await c.execute(
            "SELECT has_database_privilege(current_database(), 'TEMPORARY') AS temp")).fetchone()
    assert row == {"temp": False}
