"""The role API from the catalog (issue 44): every function granted to a runtime role
(collector, scheduler, web) is called as that role, with hostile arguments — another
collector's uuid, lease or egress, negative and enormous numbers, a partition inside retention
— and each call is refused (a permission error, the function's own rule: no rows) or clamped
(a check afterwards, as the owner, says the state stayed inside the policy's bounds). The
catalog test fails when a function is granted to a runtime role without a case here, when a
case names a function no runtime role holds, and when a runtime role gains a table write that
is not in the list of writes still to move behind functions. A `gap` case would be a known
hole (it runs, and the docs list it); none is left: the caller-given lease lengths, the
success's freshness, the request attachment and the registrations with no recorded login are
refusals or clamps now."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
import psycopg.rows
import psycopg.sql
import pytest

from bf4ps.db.connect import Conn, connection
from tests.roles import Logins
from tests.system.test_role_matrix import setup as matrix_setup

pytestmark = pytest.mark.server_features  # the server's version can change the outcome

RUNTIME = ("collector", "scheduler", "web")
NOT_OWN = "only its own registration"
NOT_OWN_EGRESS = "only the egress of its own registration"
NO_EXECUTE = "permission denied for function"


@dataclass(frozen=True)
class Case:
    """`function/nargs` called as `role`: `expect` is 'denied' (InsufficientPrivilege whose
    message holds `detail`), 'raises' (the error class named `detail`), 'rows' (that many
    rows: 0 is the function's own refusal), 'true' (its first column is true), 'clamped'
    (it runs; then `check`, as the owner, is true), 'gap' (it runs: a hole named in `detail`)."""

    function: str
    role: str
    sql: str
    expect: str
    detail: Any = None
    check: str | None = None
    before: str | None = None  # run as the owner first


FOREIGN_JOB = "%(job_b)s::bigint, %(cb)s, gen_random_uuid()"
PERSONA = "(SELECT persona_id FROM soldiers WHERE soldier_id = %(soldier)s)"
BARE = "(SELECT soldier_id FROM soldiers WHERE persona_id = 777002)"
CASES: list[Case] = [
    # --- the admission seam (db/functions/admission.sql, queue.sql: rewritten elsewhere)
    # (identity from the registration, the budget's shares from the policy, timings clamped:
    # tests/db/test_admission_trust.py shows the clamps against a full budget)
    Case("admission_slot/12", "collector",
         "SELECT * FROM admission_slot('mx-b', %(cb)s, NULL, NULL, false, -1000, 60, 0.1, "
         "'{}'::jsonb)", "denied", NOT_OWN),
    Case("admission_look/4", "collector",
         "SELECT * FROM admission_look(%(cb)s, -1000, 1e9, -1000)", "denied", NOT_OWN),
    Case("admission_count/6", "collector",
         f"SELECT * FROM admission_count(%(cb)s, {FOREIGN_JOB.split(', ')[0]}, "
         "gen_random_uuid(), -1000, 1e9, -1000)", "denied", NOT_OWN),
    Case("admission_count_unattached/7", "collector",
         "SELECT * FROM admission_count_unattached('mx-b', %(cb)s, 'active', 'detailed', "
         "-1000, 1e9, -1000)", "denied", NOT_OWN),
    Case("admission_succeed/14", "collector",
         "SELECT * FROM admission_succeed(%(job_b)s, %(cb)s, gen_random_uuid(), 1e9, 200, 1, "
         "NULL, false, 600, NULL, false, -1000, 1e9, -1000)", "denied", NOT_OWN),
    Case("queue_claim/6", "collector", "SELECT * FROM queue_claim(%(cb)s, 'background', 600)",
         "rows", 0),
    Case("queue_succeed/13", "collector",
         f"SELECT * FROM queue_succeed({FOREIGN_JOB}, 1e9, 200, 1, '{{}}'::jsonb)", "clamped",
         check="SELECT count(*) = 1 AS ok FROM collection_jobs WHERE job_id = %(job_b)s"),
    Case("queue_succeed_counted/14", "collector",
         f"SELECT * FROM queue_succeed_counted({FOREIGN_JOB}, 1e9, 200, 1, '{{}}'::jsonb, "
         "false, NULL::text, NULL::double precision, NULL::bigint, false, NULL::jsonb, false)",
         "clamped",
         check="SELECT count(*) = 1 AS ok FROM collection_jobs WHERE job_id = %(job_b)s"),
    # --- the budget and the gates: policy and identity from the database
    Case("bf4ps_budget_seed/3", "collector", "SELECT * FROM bf4ps_budget_seed(999999, 0.001, "
         "'lift')", "rows", 0),
    Case("bf4ps_gate_seed/5", "collector",
         "SELECT * FROM bf4ps_gate_seed('mx-b', 0.000001, NULL, NULL, 'x')", "denied",
         NOT_OWN_EGRESS),
    Case("bf4ps_gate_seed/5", "collector",
         "SELECT * FROM bf4ps_gate_seed('mx-c', 0.000001, 1000000, 0.000001, 'a 1 µs gate')",
         "clamped", check="SELECT min_interval_seconds = 0.05 AND window_seconds >= 50000 AS ok "
         "FROM egress_gates WHERE egress_key = 'mx-c'"),
    Case("bf4ps_gate_throttled/3", "collector",
         "SELECT * FROM bf4ps_gate_throttled('mx-b', 1e9, 1e9)", "denied", NOT_OWN_EGRESS),
    Case("bf4ps_gate_throttled/3", "collector",
         "SELECT * FROM bf4ps_gate_throttled('mx-a', 1e9, 1e9)", "clamped",
         check="SELECT cooldown_until <= now() + interval '1801 seconds' AS ok "
               "FROM egress_gates WHERE egress_key = 'mx-a'"),
    Case("bf4ps_gate_cool/2", "collector", "SELECT * FROM bf4ps_gate_cool('mx-b', 1e9)",
         "denied", NOT_OWN_EGRESS),
    Case("bf4ps_gate_cool/2", "collector", "SELECT * FROM bf4ps_gate_cool('mx-a', 1e9)",
         "clamped", check="SELECT cooldown_until <= now() + interval '1801 seconds' AS ok "
                          "FROM egress_gates WHERE egress_key = 'mx-a'"),
    Case("bf4ps_gate_recovered/1", "collector", "SELECT * FROM bf4ps_gate_recovered('mx-b')",
         "denied", NOT_OWN_EGRESS),
    # --- the circuit: holds only behind an open circuit, at most the policy's hold
    Case("bf4ps_circuit_hold_pending/3", "collector",
         "SELECT bf4ps_circuit_hold_pending('background', 'profile', 1e9)", "clamped",
         check="SELECT eligible_at <= now() + interval '3601 seconds' AS ok "
               "FROM collection_jobs WHERE job_id = %(job_p)s"),
    Case("bf4ps_circuit_hold_pending/3", "collector",
         "SELECT bf4ps_circuit_hold_pending('background', 'weapons', 1e9)", "clamped",
         check="SELECT NOT EXISTS (SELECT 1 FROM circuit_holds WHERE resource = 'weapons') "
               "AS ok"),
    Case("bf4ps_circuit_hold_job/3", "collector",
         "SELECT bf4ps_circuit_hold_job(%(job_b)s, 'interactive', 'vehicles')", "clamped",
         check="SELECT NOT EXISTS (SELECT 1 FROM circuit_holds WHERE job_id = %(job_b)s) "
               "AS ok"),
    Case("bf4ps_circuit_release_all/2", "collector",
         "SELECT * FROM bf4ps_circuit_release_all('background', 'profile')", "clamped",
         check="SELECT EXISTS (SELECT 1 FROM circuit_holds WHERE job_id = %(job_p)s) AS ok"),
    Case("bf4ps_circuit_release_one/2", "collector",
         "SELECT * FROM bf4ps_circuit_release_one('background', 'detailed')", "rows", 0),
    Case("bf4ps_circuit_probes_due/0", "collector", "SELECT * FROM bf4ps_circuit_probes_due()",
         "rows", 0),  # the open circuit's probe is an hour away: none due
    Case("bf4ps_circuit_lane_probe_later/2", "collector",  # only in the probe's transaction
         "SELECT bf4ps_circuit_lane_probe_later('background', (SELECT signature FROM "
         "circuit_breakers WHERE lane = 'background' AND resource = 'profile'))", "clamped",
         check="SELECT next_probe_at > now() + interval '30 minutes' AS ok "
               "FROM circuit_breakers WHERE lane = 'background' AND resource = 'profile'"),
    Case("bf4ps_circuit_probe_succeeded/2", "collector",
         "SELECT * FROM bf4ps_circuit_probe_succeeded('background', 'profile')", "rows", 0),
    Case("bf4ps_circuit_close/2", "collector",
         "SELECT * FROM bf4ps_circuit_close('background', 'profile')", "rows", 0),
    Case("bf4ps_circuit_open/5", "collector",
         "SELECT * FROM bf4ps_circuit_open('background', 'vehicles', 'x', 999, 999)", "clamped",
         check="SELECT probe_seconds = 60 AND close_successes = 2 AND next_probe_at <= now() "
               "+ interval '61 seconds' AS ok FROM circuit_breakers WHERE resource = 'vehicles'"),
    # --- the registry: a collector acts for its own login's registrations only
    Case("bf4ps_collector_clock/4", "collector",
         "SELECT * FROM bf4ps_collector_clock(%(cb)s, 1e9, 0, true)", "denied", NOT_OWN),
    Case("bf4ps_collector_heartbeat/1", "collector",
         "SELECT * FROM bf4ps_collector_heartbeat(%(cb)s)", "denied", NOT_OWN),
    Case("bf4ps_collector_insert/7", "collector",
         "SELECT * FROM bf4ps_collector_insert(%(cb)s, 'hijack', 'h', 'background', 'mx-a', "
         "NULL, 'x')", "raises", "UniqueViolation"),
    # another login's egress: registering there would put its gate in this login's reach
    Case("bf4ps_collector_insert/7", "collector",
         "SELECT * FROM bf4ps_collector_insert(gen_random_uuid(), 'squatter', 'h', "
         "'background', 'mx-b', NULL, 'x')", "denied", "unclaimed or its own login's"),
    # its own egress, and an unclaimed one: registered, under its own login
    Case("bf4ps_collector_insert/7", "collector",
         "SELECT * FROM bf4ps_collector_insert(gen_random_uuid(), 'second-on-a', 'h', "
         "'background', 'mx-a', NULL, 'x')", "clamped",
         check="SELECT db_login = %(collector_login)s AS ok FROM collectors "
               "WHERE collector_name = 'second-on-a'"),
    Case("bf4ps_collector_insert/7", "collector",
         "SELECT * FROM bf4ps_collector_insert(gen_random_uuid(), 'first-on-new', 'h', "
         "'background', 'mx-new', NULL, 'x')", "clamped",
         check="SELECT db_login = %(collector_login)s AS ok FROM collectors "
               "WHERE collector_name = 'first-on-new'"),
    Case("bf4ps_collector_mark_lost/1", "collector",
         "SELECT * FROM bf4ps_collector_mark_lost(%(cb)s)", "denied", NOT_OWN),
    Case("bf4ps_collector_replaced_by/2", "collector",
         "SELECT bf4ps_collector_replaced_by(%(cb)s, %(ca)s)", "denied", NOT_OWN),
    Case("bf4ps_collector_retire/2", "collector",
         "SELECT * FROM bf4ps_collector_retire(%(cb)s, NULL)", "denied", NOT_OWN),
    Case("bf4ps_collector_started/4", "collector",
         "SELECT * FROM bf4ps_collector_started(%(cb)s, 'x', 1, NULL)", "denied",
         "was registered by login"),
    Case("bf4ps_collector_stopped/1", "collector",
         "SELECT * FROM bf4ps_collector_stopped(%(cb)s)", "denied", NOT_OWN),
    # a registration with no recorded login (an older build's) is no runtime login's: a start
    # adopts it only while it is not alive
    Case("bf4ps_collector_heartbeat/1", "collector",
         "SELECT * FROM bf4ps_collector_heartbeat(%(cn)s)", "denied", NOT_OWN),
    Case("bf4ps_collector_started/4", "collector",
         "SELECT * FROM bf4ps_collector_started(%(cn)s, 'x', 1, NULL)", "denied",
         "(none recorded, and it is alive)"),
    Case("queue_claim/6", "collector", "SELECT * FROM queue_claim(%(cn)s, 'background', 600)",
         "rows", 0),
    Case("admission_look/4", "collector",
         "SELECT * FROM admission_look(%(cn)s, 0, 0, 0)", "denied", NOT_OWN),
    Case("bf4ps_jobs_expire_abandoned/1", "collector",
         "SELECT * FROM bf4ps_jobs_expire_abandoned(%(cn)s)", "denied", NOT_OWN),
    Case("bf4ps_collectors_mark_silent/1", "scheduler",
         "SELECT * FROM bf4ps_collectors_mark_silent(-1e9)", "rows", 0,
         before="UPDATE collectors SET last_heartbeat_at = now() + interval '1 minute'"),
    # --- the website drains and resumes only
    Case("bf4ps_collector_set_flags/4", "web",
         "SELECT * FROM bf4ps_collector_set_flags('mx-b', false, NULL, NULL)", "denied",
         "only an operator may disable"),
    # --- the queue: leases fence every change; another's job is out of reach
    Case("bf4ps_jobs_expire_abandoned/1", "collector",
         "SELECT * FROM bf4ps_jobs_expire_abandoned(%(cb)s)", "denied", NOT_OWN),
    Case("bf4ps_job_delete/2", "collector",
         "SELECT * FROM bf4ps_job_delete(%(job_b)s, gen_random_uuid())", "rows", 0),
    Case("bf4ps_job_lock_owned/4", "collector",
         f"SELECT * FROM bf4ps_job_lock_owned({FOREIGN_JOB}, ARRAY['claimed', 'running'])",
         "rows", 0),
    Case("bf4ps_job_note_error/4", "collector",
         "SELECT bf4ps_job_note_error(%(job_b)s, gen_random_uuid(), 'forged', 'forged')",
         "clamped", check="SELECT last_error_class IS NULL AS ok FROM collection_jobs "
                          "WHERE job_id = %(job_b)s"),
    Case("bf4ps_job_owned_now/3", "collector",
         f"SELECT * FROM bf4ps_job_owned_now({FOREIGN_JOB})", "rows", 0),
    Case("bf4ps_job_release/4", "collector",
         f"SELECT * FROM bf4ps_job_release({FOREIGN_JOB}, 'x')", "rows", 0),
    Case("bf4ps_job_renew/4", "collector",
         f"SELECT * FROM bf4ps_job_renew({FOREIGN_JOB}, 1e9)", "rows", 0),
    # its own lease: at most the policy's lease_max_seconds (1800 s), whatever it passes
    Case("bf4ps_job_renew/4", "collector",
         "SELECT * FROM bf4ps_job_renew(%(job)s, %(ca)s, %(tok)s, 1e9)", "clamped",
         check="SELECT lease_expires_at <= now() + interval '1801 seconds' AS ok "
               "FROM collection_jobs WHERE job_id = %(job)s"),
    Case("bf4ps_job_start/5", "collector",
         "SELECT * FROM bf4ps_job_start(%(job)s, %(ca)s, %(tok)s, "
         "now() + interval '100 years', 1e9)", "clamped",
         check="SELECT started_at <= now() + interval '61 seconds' AND lease_expires_at "
               "<= now() + interval '1861 seconds' AS ok FROM collection_jobs "
               "WHERE job_id = %(job)s"),
    Case("bf4ps_job_reslot/5", "collector",
         f"SELECT bf4ps_job_reslot({FOREIGN_JOB}, now() - interval '1 day', 1e9)", "clamped",
         check="SELECT lease_expires_at < now() + interval '1 hour' AS ok "
               "FROM collection_jobs WHERE job_id = %(job_b)s"),
    Case("bf4ps_job_reslot/5", "collector",
         "SELECT bf4ps_job_reslot(%(job)s, %(ca)s, %(tok)s, now() + interval '100 years', "
         "1e9)", "clamped",
         check="SELECT started_at <= now() AND lease_expires_at <= now() + interval "
               "'1861 seconds' AS ok FROM collection_jobs WHERE job_id = %(job)s"),
    Case("bf4ps_job_retry/5", "collector",
         "SELECT * FROM bf4ps_job_retry(%(job_b)s, gen_random_uuid(), now(), 'x', 'y')",
         "rows", 0),
    Case("bf4ps_job_snapshot/2", "collector",
         "SELECT lease_token IS NULL FROM bf4ps_job_snapshot(%(job_b)s, gen_random_uuid())",
         "true"),
    Case("bf4ps_job_start/5", "collector",
         f"SELECT * FROM bf4ps_job_start({FOREIGN_JOB}, now(), 1e9)", "rows", 0),
    # a request joins only its own soldier's (or look-up's) job; a collector's only through
    # a look-up job whose lease it holds
    Case("bf4ps_job_attach_request/2", "collector",
         "SELECT bf4ps_job_attach_request(%(job_b)s, %(request)s)", "clamped",
         check="SELECT request_id IS NULL AS ok FROM collection_jobs WHERE job_id = %(job_b)s"),
    Case("bf4ps_job_attach_request/2", "collector",
         "SELECT bf4ps_job_attach_request(%(job_p)s, %(request_s)s)", "clamped",
         check="SELECT request_id IS NULL AS ok FROM collection_jobs WHERE job_id = %(job_p)s"),
    Case("bf4ps_job_attach_request/2", "web",
         "SELECT bf4ps_job_attach_request(%(job_b)s, %(request)s)", "clamped",
         check="SELECT request_id IS NULL AS ok FROM collection_jobs WHERE job_id = %(job_b)s"),
    Case("bf4ps_lease_outcome/2", "collector",
         "SELECT bf4ps_lease_outcome(%(job_b)s, gen_random_uuid()) IS NULL", "true"),
    Case("bf4ps_lease_outcome/2", "scheduler",
         "SELECT bf4ps_lease_outcome(%(job_b)s, gen_random_uuid()) IS NULL", "true"),
    Case("bf4ps_lookup_request_resolved/4", "collector",
         "SELECT * FROM bf4ps_lookup_request_resolved(%(job_b)s, gen_random_uuid(), "
         "%(soldier)s, ARRAY['detailed'])", "rows", 0),
    Case("bf4ps_state_failed/7", "collector",
         "SELECT * FROM bf4ps_state_failed(%(job_b)s, gen_random_uuid(), true, now(), NULL, "
         "'not_found', 'forged')", "rows", 0),
    Case("bf4ps_state_failed/7", "collector",
         "SELECT * FROM bf4ps_state_failed(%(job)s, %(tok)s, false, now() + interval '1 year', "
         "now() + interval '100 years', 'server', 'x')", "clamped",
         check="SELECT last_attempt_at <= now() AND next_attempt_at <= now() + interval '8 days' "
               "AS ok FROM collection_state WHERE soldier_id = %(soldier)s "
               "AND resource = 'detailed'"),
    Case("bf4ps_reap_expired/1", "scheduler",
         "SELECT * FROM bf4ps_reap_expired(2147483647)", "rows", 0),
    # --- the feeder: interactive only for collectors and the website; bounded batches
    Case("bf4ps_enqueue_insert/10", "collector",
         "SELECT * FROM bf4ps_enqueue_insert(%(soldier)s, 'profile', 'background', 'active', "
         "now() - interval '10 years', 'active_refresh', now(), NULL, NULL, NULL)", "denied",
         "may enqueue interactive jobs only"),
    Case("bf4ps_enqueue_insert/10", "web",
         "SELECT * FROM bf4ps_enqueue_insert(%(soldier)s, 'profile', 'background', 'active', "
         "now() - interval '10 years', 'active_refresh', now(), NULL, NULL, NULL)", "denied",
         "may enqueue interactive jobs only"),
    Case("bf4ps_enqueue_promote/7", "collector",
         "SELECT * FROM bf4ps_enqueue_promote(%(job_p)s, 'background', 'active', "
         "now() - interval '10 years', 'x', NULL, now())", "denied",
         "may enqueue interactive jobs only"),
    Case("bf4ps_enqueue_promote/7", "web",
         "SELECT * FROM bf4ps_enqueue_promote(%(job_p)s, 'background', 'active', "
         "now() - interval '10 years', 'x', NULL, now())", "denied",
         "may enqueue interactive jobs only"),
    Case("bf4ps_enqueue_lane_allowed/1", "collector",
         "SELECT bf4ps_enqueue_lane_allowed('background')", "denied",
         "may enqueue interactive jobs only"),
    Case("bf4ps_enqueue_lane_allowed/1", "web",
         "SELECT bf4ps_enqueue_lane_allowed('background')", "denied",
         "may enqueue interactive jobs only"),
    Case("bf4ps_enqueue_lane_allowed/1", "scheduler",
         "SELECT bf4ps_enqueue_lane_allowed('background')", "rows", 1),  # a check: no effect
    Case("bf4ps_enqueue_lock_existing/2", "collector",
         "SELECT count(*) = 1 FROM bf4ps_enqueue_lock_existing(%(soldier)s, 'detailed')",
         "true"),  # reads (and locks for its own transaction): changes nothing
    Case("bf4ps_enqueue_lock_existing/2", "web",
         "SELECT count(*) = 1 FROM bf4ps_enqueue_lock_existing(%(soldier)s, 'detailed')",
         "true"),
    Case("bf4ps_feed_class/4", "scheduler",
         "SELECT * FROM bf4ps_feed_class('active', 'weapons', 2147483647, -1e9)", "clamped",
         check="SELECT NOT EXISTS (SELECT 1 FROM collection_jobs WHERE resource = 'weapons' "
               "AND rank < now() - interval '1 minute') AS ok"),
    Case("bf4ps_feed_retry/1", "scheduler", "SELECT n = 0 FROM bf4ps_feed_retry(-5)", "true"),
    Case("bf4ps_intake_enqueue/6", "scheduler",
         "SELECT * FROM bf4ps_intake_enqueue(ARRAY[999999999]::bigint[], ARRAY['active'], "
         "ARRAY[now()], 'profile', 'bootstrap', now())", "raises", "ForeignKeyViolation"),
    Case("bf4ps_parked_recheck/2", "scheduler",
         "SELECT * FROM bf4ps_parked_recheck(-1e9, 10000)", "clamped",
         check="SELECT status = 'unavailable' AS ok FROM collection_state "
               "WHERE soldier_id = %(soldier)s AND resource = 'vehicles'"),
    # --- sessions: BF4SW's clock, never one from the future
    Case("bf4ps_close_sessions/2", "scheduler",
         "SELECT bf4ps_close_sessions(now() + interval '100 years', -1e9)", "clamped",
         check="SELECT ended_at IS NULL AS ok FROM play_sessions WHERE soldier_id = %(soldier)s"),
    Case("bf4ps_observe_sessions/5", "scheduler",
         "SELECT bf4ps_observe_sessions(ARRAY[%(soldier)s]::bigint[], "
         "ARRAY[now() + interval '100 years'], ARRAY['g'], ARRAY['n'], 1e9)", "clamped",
         check="SELECT max(last_seen_at) < now() + interval '1 day' AS ok FROM play_sessions"),
    # --- retention: never inside event_retention_days
    Case("bf4ps_drop_event_partition/1", "scheduler",
         "SELECT bf4ps_drop_event_partition('collection_events_' || to_char(now(), 'YYYYMM'))",
         "denied", "younger than event_retention_days"),
    Case("bf4ps_events_prune/2", "scheduler",
         "SELECT * FROM bf4ps_events_prune(now() + interval '1 year', 1000000)", "clamped",
         check="SELECT count(*) = 1 AS ok FROM collection_events WHERE persona_id = 424242"),
    Case("bf4ps_ensure_event_partitions/2", "scheduler",
         "SELECT bf4ps_ensure_event_partitions((now() + interval '5 years')::date, 100000) "
         "<= 24", "true"),
    Case("bf4ps_ledger_prune/2", "scheduler",
         "SELECT * FROM bf4ps_ledger_prune(now() + interval '1 year', 1000000)", "rows", 0),
    Case("bf4ps_coverage_fold/0", "scheduler", "SELECT bf4ps_coverage_fold()", "rows", 1),
    # --- progress: a flag's clear and the boards only through functions (the policy's window;
    # the soldier's open flag cleared first, so the boards may show him)
    Case("bf4ps_progress_flag_clear/4", "web",
         "SELECT * FROM bf4ps_progress_flag_clear(%(flag)s, now() + interval '100 years', "
         "'forged', NULL)", "clamped",
         check="SELECT cleared_at <= now() AS ok FROM progress_flags WHERE flag_id = %(flag)s"),
    Case("bf4ps_progress_flag_clear/4", "web",
         "SELECT * FROM bf4ps_progress_flag_clear(%(flag)s, now(), 'twice', NULL)", "rows", 0),
    Case("bf4ps_gains_boards_refresh/1", "scheduler",
         "SELECT bf4ps_gains_boards_refresh(now() + interval '100 years')", "clamped",
         check="SELECT EXISTS (SELECT 1 FROM gains_boards WHERE soldier_id = %(soldier)s) "
               "AS ok"),
    Case("bf4ps_gains_boards_refresh/1", "web",
         "SELECT bf4ps_gains_boards_refresh(now() + interval '100 years')", "clamped",
         check="SELECT EXISTS (SELECT 1 FROM gains_boards WHERE soldier_id = %(soldier)s) "
               "AS ok"),
    Case("bf4ps_gains_boards_drop/1", "scheduler",
         "SELECT bf4ps_gains_boards_drop(ARRAY[%(soldier)s]::bigint[])", "clamped",
         check="SELECT EXISTS (SELECT 1 FROM gains_boards WHERE soldier_id = %(soldier)s) "
               "AS ok"),
    # --- the raw answers archive: the policy's count, never inside its retention
    Case("bf4ps_archive_keep/6", "collector",
         "SELECT bf4ps_archive_keep(%(soldier)s, 'profile', 200, 'stored', 1, '\\x00')",
         "clamped", check="SELECT count(*) = 3 AS ok FROM raw_answers "
                          "WHERE soldier_id = %(soldier)s AND resource = 'profile'",
         before="INSERT INTO raw_answers (soldier_id, resource, http_status, outcome, "
                "body_bytes, body) SELECT %(soldier)s, 'profile', 200, 'stored', 1, '\\x00' "
                "FROM generate_series(1, 5)"),
    Case("bf4ps_archive_prune/2", "scheduler",
         "SELECT * FROM bf4ps_archive_prune(now() + interval '1 year', 1000000)", "rows", 0),
    # --- the ledger and the restore guard
    Case("bf4ps_ledger_unsent/3", "collector",
         "SELECT * FROM bf4ps_ledger_unsent(%(b_ledger)s, %(cb)s, %(tok_b)s)", "denied",
         NOT_OWN),
    Case("bf4ps_ledger_receipt/1", "collector",
         "SELECT * FROM bf4ps_ledger_receipt(%(b_ledger)s)", "rows", 0),
    Case("bf4ps_restore_check/0", "collector", "SELECT * FROM bf4ps_restore_check()",
         "rows", 1),
    Case("bf4ps_restore_check/0", "scheduler", "SELECT * FROM bf4ps_restore_check()",
         "rows", 1),
    Case("bf4ps_restore_check/0", "web", "SELECT * FROM bf4ps_restore_check()", "rows", 1),
    Case("bf4ps_restore_check/3", "collector",
         "SELECT * FROM bf4ps_restore_check(999999999, now() + interval '1 year', 'forged')",
         "clamped", check="SELECT hold_until IS NULL AS ok FROM restore_guard"),
    Case("bf4ps_restore_check/4", "collector",
         "SELECT * FROM bf4ps_restore_check(999999999, now(), 'forged', 'forged')", "clamped",
         check="SELECT hold_until IS NULL AS ok FROM restore_guard"),
    Case("bf4ps_restore_check/4", "scheduler",
         "SELECT * FROM bf4ps_restore_check(999999999, now(), 'forged', 'forged')", "clamped",
         check="SELECT hold_until IS NULL AS ok FROM restore_guard"),
    Case("bf4ps_restore_hold/0", "collector", "SELECT * FROM bf4ps_restore_hold()", "rows", 0),
    Case("bf4ps_restore_hold/0", "scheduler", "SELECT * FROM bf4ps_restore_hold()", "rows", 0),
    Case("bf4ps_restore_hold/0", "web", "SELECT * FROM bf4ps_restore_hold()", "rows", 0),
    # --- events: each role its own kinds, a collector its own registration
    Case("bf4ps_event_record/23", "collector",
         "SELECT bf4ps_event_record('egress_throttled', collector_uuid => %(cb)s)", "denied",
         "events of its own registration only"),
    Case("bf4ps_event_record/23", "web", "SELECT bf4ps_event_record('succeeded', "
         "job_id => %(job_b)s)", "denied", "may not record succeeded events"),
    Case("bf4ps_event_record/23", "scheduler", "SELECT bf4ps_event_record('failed', "
         "job_id => %(job_b)s)", "denied", "may not record failed events"),
    # --- the /ops lock-out: its figures clamped (at most 100 free attempts, a lock >= 1 s)
    Case("bf4ps_ops_login_attempt/6", "web",
         "SELECT bool_or(a.wait_seconds >= 1) FROM generate_series(1, 102) g, "
         "LATERAL bf4ps_ops_login_attempt(ARRAY['client:hostile' || left(g::text, 0)], "
         "'attempt', 1000000, 0, 0, 0) a", "true"),
    # --- soldiers, their state and players' requests: no runtime role writes them directly
    Case("bf4ps_soldier_sighted/7", "collector",
         f"SELECT * FROM bf4ps_soldier_sighted({PERSONA}, 'pc', 'Renamed', 'battlelog', NULL, "
         "%(job_b)s, gen_random_uuid())", "denied", "under its lease"),
    Case("bf4ps_soldier_sighted/7", "collector",
         f"SELECT * FROM bf4ps_soldier_sighted({PERSONA}, 'pc', 'Renamed', 'manual', NULL)",
         "denied", "under its lease"),
    Case("bf4ps_soldier_sighted/7", "web",
         f"SELECT * FROM bf4ps_soldier_sighted({PERSONA}, 'pc', 'Renamed', 'bf4sw', NULL)",
         "denied", "under its lease"),
    Case("bf4ps_soldier_sighted/7", "web",
         f"SELECT * FROM bf4ps_soldier_sighted({PERSONA}, 'pc', 'Renamed', 'manual', NULL)",
         "clamped", check="SELECT current_name <> 'Renamed' AND last_seen_at IS NOT DISTINCT "
                          "FROM %(seen)s AS ok FROM soldiers WHERE soldier_id = %(soldier)s"),
    Case("bf4ps_soldier_sighted/7", "web",
         "SELECT * FROM bf4ps_soldier_sighted(777001, 'pc', 'New', 'manual', '1970-01-01')",
         "clamped", check="SELECT min(eligible_since) > now() - interval '2 days' AS ok FROM "
                          "collection_state cs JOIN soldiers s USING (soldier_id) "
                          "WHERE s.persona_id = 777001"),
    Case("bf4ps_state_init/2", "collector",
         f"SELECT bf4ps_state_init({BARE}, '1970-01-01')", "clamped",
         check=f"SELECT count(*) = 4 AND min(eligible_since) > now() - interval '2 days' AS ok "
               f"FROM collection_state WHERE soldier_id = {BARE}",
         before="INSERT INTO soldiers (persona_id, platform, current_name, first_seen_at) "
                "VALUES (777002, 'pc', 'Bare', now())"),
    Case("bf4ps_state_init/2", "web",
         "SELECT bf4ps_state_init(%(soldier)s, '1970-01-01')", "clamped",
         check="SELECT min(eligible_since) > '1970-01-02' AS ok FROM collection_state "
               "WHERE soldier_id = %(soldier)s"),
    Case("bf4ps_request_insert/6", "web",
         "SELECT * FROM bf4ps_request_insert(gen_random_uuid(), NULL, 'Hostile', 'pc', 'k', "
         "ARRAY['forged', 'detailed'])", "clamped",
         check="SELECT resources = ARRAY['detailed'] AND status = 'queued' AS ok "
               "FROM interactive_requests WHERE lookup_name = 'Hostile'"),
    Case("bf4ps_request_planned/5", "web",  # another submission's request (and a done one)
         "SELECT * FROM bf4ps_request_planned(%(request)s, '{}', now(), true, 'forged')",
         "rows", 0),
    # --- a run of suspect answers: only of a lease held (or just failed), one answer a lease
    Case("bf4ps_suspect_note/6", "collector",
         "SELECT * FROM bf4ps_suspect_note(%(job_b)s, gen_random_uuid(), 'lower', true, '{}')",
         "rows", 0),
    Case("bf4ps_suspect_note/6", "collector",
         "SELECT * FROM bf4ps_suspect_note(%(job)s, %(tok)s, 'lower', true, '{}')", "clamped",
         check="SELECT answers = 1 AS ok FROM answer_suspects WHERE soldier_id = %(soldier)s",
         before="INSERT INTO answer_suspects (soldier_id, resource, kind, first_at, last_at, "
                "answers, counters) VALUES (%(soldier)s, 'detailed', 'lower', now(), now(), 1, "
                "'{}')"),
    Case("bf4ps_progress_flag_raise/6", "scheduler",  # an interval made up: nothing flagged
         "SELECT * FROM bf4ps_progress_flag_raise(%(soldier)s, 'soldier', NULL, "
         "now() - interval '2 hours', now() - interval '1 hour', 'forged')", "rows", 0),
    Case("bf4ps_progress_flag_raise/6", "scheduler",  # a checked one: nothing flagged
         "SELECT f.* FROM soldier_intervals i, LATERAL bf4ps_progress_flag_raise(i.soldier_id, "
         "'soldier', NULL, i.started_at, i.ended_at, 'forged') f "
         "WHERE i.soldier_id = %(soldier)s", "rows", 0),
    # the checks after storage: at most 10,000 a call, the mark the database's clock, and a
    # checked interval's mark never moves (nor is an unchecked one read past the bound)
    Case("bf4ps_soldier_intervals_unchecked/1", "scheduler",
         "SELECT * FROM bf4ps_soldier_intervals_unchecked(2000000000)", "rows", 0),
    Case("bf4ps_item_intervals_unchecked/1", "scheduler",
         "SELECT * FROM bf4ps_item_intervals_unchecked(-1)", "rows", 0),
    Case("bf4ps_soldier_intervals_checked/2", "scheduler",
         "SELECT bf4ps_soldier_intervals_checked(ARRAY[%(soldier)s]::bigint[], "
         "ARRAY[(SELECT ended_at FROM soldier_intervals WHERE soldier_id = %(soldier)s)])",
         "clamped", check="SELECT checked_at = %(checked)s AS ok FROM soldier_intervals "
                          "WHERE soldier_id = %(soldier)s"),
    Case("bf4ps_soldier_intervals_checked/2", "scheduler",
         "SELECT bf4ps_soldier_intervals_checked(array_fill(1::bigint, ARRAY[10001]), "
         "array_fill(now(), ARRAY[10001]))", "raises", "InvalidParameterValue"),
    Case("bf4ps_item_intervals_checked/4", "scheduler",
         "SELECT bf4ps_item_intervals_checked(array_fill(1::bigint, ARRAY[10001]), "
         "array_fill('weapon'::text, ARRAY[10001]), array_fill(1, ARRAY[10001]), "
         "array_fill(now(), ARRAY[10001]))", "raises", "InvalidParameterValue"),
    # the BF4SW intake's batches: at most 10,000 soldiers (100,000 names), no sighting ahead of
    # the database's clock, the source always bf4sw
    Case("bf4ps_intake_soldiers/5", "scheduler",
         "SELECT * FROM bf4ps_intake_soldiers(ARRAY[777003]::bigint[], ARRAY['pc'], "
         "ARRAY['Future'], ARRAY[now() + interval '100 years'], "
         "ARRAY[now() + interval '100 years'])", "clamped",
         check="SELECT first_seen_at <= now() AND last_seen_at <= now() AS ok FROM soldiers "
               "WHERE persona_id = 777003"),
    Case("bf4ps_intake_soldiers/5", "scheduler",
         "SELECT * FROM bf4ps_intake_soldiers(array_fill(1::bigint, ARRAY[10001]), "
         "array_fill('pc'::text, ARRAY[10001]), array_fill('x'::text, ARRAY[10001]), "
         "array_fill(now(), ARRAY[10001]), array_fill(now(), ARRAY[10001]))", "raises",
         "InvalidParameterValue"),
    Case("bf4ps_intake_names/4", "scheduler",
         "SELECT bf4ps_intake_names(ARRAY[%(soldier)s]::bigint[], ARRAY['Later'], "
         "ARRAY[now() + interval '100 years'], ARRAY[now() + interval '100 years'])",
         "clamped", check="SELECT last_seen_at <= now() AS ok FROM soldier_names "
                          "WHERE soldier_id = %(soldier)s AND name = 'Later'"),
    Case("bf4ps_intake_sources/4", "scheduler",
         "SELECT bf4ps_intake_sources(ARRAY[%(soldier)s]::bigint[], "
         "ARRAY[now() + interval '100 years'], ARRAY[now() + interval '100 years'], "
         "now() + interval '100 years')", "clamped",
         check="SELECT last_seen_at <= now() AS ok FROM soldier_sources "
               "WHERE soldier_id = %(soldier)s AND source_type = 'bf4sw'"),
    # --- the scheduler's records: the database's clock, retention outside history_retention_days
    Case("bf4ps_history_record/7", "scheduler",
         "SELECT bf4ps_history_record(-5, -10, '{}', '{}', '{}', '{}', '{}')", "clamped",
         check="SELECT interval_seconds >= 1 AND soldiers >= 0 AND recorded_at <= now() AS ok "
               "FROM fleet_history ORDER BY recorded_at DESC LIMIT 1"),
    Case("bf4ps_history_prune/2", "scheduler",
         "SELECT * FROM bf4ps_history_prune(now() + interval '1 year', 1000000)", "rows", 0,
         before="INSERT INTO fleet_history (recorded_at, interval_seconds, soldiers, coverage, "
                "finished, requests, backlog_age, refresh_lag) VALUES (now() - interval "
                "'2 days', 60, 1, '{}', '{}', '{}', '{}', '{}')"),
    Case("bf4ps_forecast_record/1", "scheduler", "SELECT bf4ps_forecast_record('{}')",
         "clamped", check="SELECT max(recorded_at) <= now() AS ok FROM forecast_records"),
    Case("bf4ps_forecast_prune/2", "scheduler",
         "SELECT * FROM bf4ps_forecast_prune(now() + interval '1 year', 1000000)", "rows", 0),
    Case("bf4ps_capacity_check_set/4", "scheduler",
         "SELECT bf4ps_capacity_check_set(true, -1, -1, repeat('x', 10000))", "clamped",
         check="SELECT demand_per_hour >= 0 AND capacity_per_hour >= 0 AND checked_at <= now() "
               "AND length(summary) <= 500 AS ok FROM capacity_check"),
    Case("bf4ps_backtest_set/3", "scheduler",
         "SELECT bf4ps_backtest_set(now() + interval '100 years', -5, '{}')", "clamped",
         check="SELECT since <= now() AND records >= 0 AS ok FROM forecast_backtest"),
    Case("bf4ps_intake_mark/4", "scheduler",
         "SELECT bf4ps_intake_mark('bf4sw', -5, NULL, NULL)", "clamped",
         check="SELECT last_alias_id = 100 AS ok FROM intake_state WHERE source_name = 'bf4sw'",
         before="INSERT INTO intake_state (source_name, last_alias_id) VALUES ('bf4sw', 100)"),
    Case("bf4ps_intake_mark/4", "scheduler",
         "SELECT bf4ps_intake_mark('anything', 1, NULL, NULL)", "raises",
         "InvalidParameterValue"),
    # last (it ends the collector's own lease): the freshness is the policy's (a week for
    # detailed stats), not the caller's 1e9 s
    Case("queue_succeed/13", "collector",
         "SELECT * FROM queue_succeed(%(job)s, %(ca)s, %(tok)s, 1e9, 200, 1, '{}'::jsonb)",
         "clamped", check="SELECT next_due_at <= now() + interval '7 days 1 minute' AS ok "
                          "FROM collection_state WHERE soldier_id = %(soldier)s "
                          "AND resource = 'detailed'"),
]


async def more_setup(conn: Conn, params: dict[str, Any], logins: Logins) -> dict[str, Any]:
    """Beyond the matrix's: a leased job and a ledger row of the other login's collector, a
    registration of the collector's login on an egress with no gate yet, an open circuit with
    a pending job behind it, a parked resource, a live play session, an event two days old."""
    b = await (await conn.execute(
        "SELECT job_id, lease_token FROM queue_claim(%s, 'background', 600)",
        (params["cb"],))).fetchone()
    assert b is not None
    led = await (await conn.execute(
        "INSERT INTO request_ledger (slot_at, egress_key, budget_class, collector_uuid, job_id) "
        "VALUES (now(), 'mx-b', 'bootstrap', %s, %s) RETURNING request_id",
        (params["cb"], b["job_id"]))).fetchone()
    assert led is not None
    await conn.execute(
        "INSERT INTO collectors (collector_uuid, collector_name, hostname, lane, egress_key, "
        "health, last_heartbeat_at, db_login) VALUES (gen_random_uuid(), 'mx-c', 'matrix', "
        "'background', 'mx-c', 'healthy', now(), %s)", (logins.names["collector"],))
    cn = await (await conn.execute(  # an older build's, alive: no login recorded
        "INSERT INTO collectors (collector_uuid, collector_name, hostname, lane, egress_key, "
        "health, last_heartbeat_at) VALUES (gen_random_uuid(), 'mx-n', 'matrix', "
        "'background', 'mx-n', 'healthy', now()) RETURNING collector_uuid")).fetchone()
    assert cn is not None
    request_s = await (await conn.execute(
        "INSERT INTO interactive_requests (request_id, soldier_id, platform, client_key) "
        "VALUES (gen_random_uuid(), %s, 'pc', '203.0.113.8') RETURNING request_id",
        (params["soldier"],))).fetchone()
    assert request_s is not None
    await conn.execute(
        "INSERT INTO circuit_breakers (lane, resource, state, signature, opened_at, "
        "next_probe_at, probe_seconds, close_successes, soldiers, egresses) VALUES "
        "('background', 'profile', 'open', 'x', now(), now() + interval '1 hour', 60, 2, 3, 2)")
    job_p = await (await conn.execute(
        "INSERT INTO collection_jobs (soldier_id, resource, lane, priority_class, rank, reason) "
        "VALUES (%s, 'profile', 'background', 'active', now(), 'active_refresh') "
        "RETURNING job_id", (params["soldier"],))).fetchone()
    assert job_p is not None
    await conn.execute(
        "UPDATE collection_state SET status = 'unavailable', activity_class = 'active', "
        "last_attempt_at = now() - interval '1 minute', last_error_class = 'not_found', "
        "last_error_at = now() - interval '1 minute' "
        "WHERE soldier_id = %s AND resource = 'vehicles'", (params["soldier"],))
    await conn.execute(
        "INSERT INTO play_sessions (soldier_id, started_at, last_seen_at) "
        "VALUES (%s, now() - interval '10 minutes', now() - interval '30 seconds')",
        (params["soldier"],))
    await conn.execute("SELECT bf4ps_ensure_event_partitions("
                       "(now() - interval '1 month')::date, 2)")
    await conn.execute("INSERT INTO collection_events (event_type, occurred_at, persona_id) "
                       "VALUES ('created', now() - interval '2 days', 424242)")
    # a checked hour of play ended a minute ago (on the boards), and a flag of another hour
    await conn.execute(
        "INSERT INTO soldier_intervals (soldier_id, platform, started_at, ended_at, kills, "
        "deaths, score, seconds, checked_at) VALUES (%s, 'pc', now() - interval '3 hours', "
        "now() - interval '1 minute', 100, 10, 1000, 7200, now())", (params["soldier"],))
    flag = await (await conn.execute(
        "INSERT INTO progress_flags (soldier_id, kind, started_at, ended_at, reason) VALUES "
        "(%s, 'soldier', now() - interval '10 days', now() - interval '9 days', 'kpm') "
        "RETURNING flag_id", (params["soldier"],))).fetchone()
    assert flag is not None
    request = await (await conn.execute(
        "SELECT request_id FROM interactive_requests WHERE lookup_name = 'Someone'"
        )).fetchone()
    assert request is not None
    checked = await (await conn.execute(
        "SELECT checked_at FROM soldier_intervals WHERE soldier_id = %s",
        (params["soldier"],))).fetchone()
    assert checked is not None
    seen = await (await conn.execute("SELECT last_seen_at FROM soldiers WHERE soldier_id = %s",
                                     (params["soldier"],))).fetchone()
    assert seen is not None
    return params | {"seen": seen["last_seen_at"], "job_b": b["job_id"], "tok_b": b["lease_token"],
                     "b_ledger": led["request_id"], "job_p": job_p["job_id"],
                     "request": request["request_id"], "flag": flag["flag_id"],
                     "cn": cn["collector_uuid"], "request_s": request_s["request_id"],
                     "collector_login": logins.names["collector"],
                     "checked": checked["checked_at"]}


async def run_case(conns: dict[str, Conn], owner: Conn, case: Case,
                   params: dict[str, Any]) -> str | None:
    """What differed from the case (None: as expected)."""
    if case.before:
        await owner.execute(case.before, params)  # type: ignore[arg-type]
    try:
        cur = await conns[case.role].execute(case.sql, params)  # type: ignore[arg-type]
        rows = await cur.fetchall() if cur.description else []
    except psycopg.errors.InsufficientPrivilege as exc:
        ok = case.expect == "denied" and case.detail in str(exc)
        return None if ok else f"refused ({exc})"
    except psycopg.Error as exc:
        ok = case.expect == "raises" and type(exc).__name__ == case.detail
        return None if ok else f"raised {type(exc).__name__} ({exc})"
    if case.expect in ("denied", "raises"):
        return f"ALLOWED ({len(rows)} rows)"
    if case.expect == "rows" and len(rows) != case.detail:
        return f"{len(rows)} rows, not {case.detail}"
    if case.expect == "true" and not (rows and next(iter(rows[0].values())) is True):
        return f"not true: {rows}"
    if case.check:
        row = await (await owner.execute(case.check, params)).fetchone()  # type: ignore[arg-type]
        if not (row and row["ok"]):
            return f"not clamped: {case.check}"
    return None


async def test_every_runtime_function_refuses_or_clamps_its_hostile_case(
        logins: Logins, conn: Conn) -> None:
    params = await more_setup(conn, await matrix_setup(conn, logins), logins)
    wrong = []
    conns: dict[str, Conn] = {}
    try:
        for role in RUNTIME:
            conns[role] = await psycopg.AsyncConnection.connect(
                logins.urls[role], autocommit=True, row_factory=psycopg.rows.dict_row)
        for case in CASES:
            problem = await run_case(conns, conn, case, params)
            if problem:
                wrong.append(f"{case.role}: {case.function}: {case.sql}: {problem}")
    finally:
        for c in conns.values():
            await c.close()
    assert not wrong, "\n".join(wrong)


GRANTED = """
SELECT DISTINCT p.proname || '/' || p.pronargs AS function, r.rolname AS role
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace,
     aclexplode(COALESCE(p.proacl, acldefault('f', p.proowner))) a
JOIN pg_roles r ON r.oid = a.grantee
WHERE n.nspname = current_schema() AND a.privilege_type = 'EXECUTE'
  AND r.rolname IN ('bf4ps_collector', 'bf4ps_scheduler', 'bf4ps_web')
UNION
-- a SECURITY DEFINER function anyone may run would be every role's
SELECT p.proname || '/' || p.pronargs, 'PUBLIC'
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace,
     aclexplode(COALESCE(p.proacl, acldefault('f', p.proowner))) a
WHERE n.nspname = current_schema() AND p.prosecdef AND a.grantee = 0
ORDER BY 1, 2
"""


async def test_the_catalog_grants_no_function_without_its_hostile_case(conn: Conn) -> None:
    granted = {(r["function"], r["role"].removeprefix("bf4ps_"))
               for r in await (await conn.execute(GRANTED)).fetchall()}
    covered = {(c.function, c.role) for c in CASES}
    assert not granted - covered, f"granted without a hostile case: {sorted(granted - covered)}"
    assert not covered - granted, f"cases of functions not granted: {sorted(covered - granted)}"
    # the check can fail: a function granted to a runtime role with no case
    async with conn.transaction(force_rollback=True):
        await conn.execute("GRANT EXECUTE ON FUNCTION bf4ps_gate_set(text, double precision, "
                           "integer, double precision, double precision, boolean, boolean, "
                           "text) TO bf4ps_web")
        found = {(r["function"], r["role"]) for r in await (await conn.execute(GRANTED))
                 .fetchall()}
        assert ("bf4ps_gate_set/8", "bf4ps_web") in found


# The table writes the runtime roles still hold: the stats writer, the archive, the names and
# sources, coverage, the circuit's rows, recon, the scheduler's boards, flags, forecasts and
# intake (docs/operations.md, "The role API": what is still to move behind functions). A new
# write fails the test; one moved behind a function must leave this list.
REMAINING_WRITES: dict[str, set[str]] = {
    "bf4ps_collector": {
        "detailed_stats_current:INSERT,UPDATE",
        "detailed_stats_history:INSERT",
        "item_intervals:INSERT", "profile_current:INSERT,UPDATE",
        "soldier_intervals:INSERT", "soldier_vehicle_history:INSERT",
        "soldier_vehicle_stats:INSERT,UPDATE", "soldier_weapon_history:INSERT",
        "soldier_weapon_stats:INSERT,UPDATE", "soldiers:UPDATE",
        "vehicle_catalog:INSERT,UPDATE", "weapon_catalog:INSERT,UPDATE"},
    "bf4ps_scheduler": {
        "collection_state:UPDATE", "coverage_deltas:INSERT"},
    "bf4ps_web": set(),  # the website writes no table directly
}

TABLE_WRITES = """
SELECT r.role, c.relname || ':' || string_agg(p.priv, ',' ORDER BY p.priv) AS grant
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace,
     unnest(ARRAY['bf4ps_collector', 'bf4ps_scheduler', 'bf4ps_web']) r(role),
     unnest(ARRAY['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) p(priv)
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v')
  AND (has_table_privilege(r.role, c.oid, p.priv)
       OR (p.priv IN ('INSERT', 'UPDATE')
           AND has_any_column_privilege(r.role, c.oid, p.priv)))
GROUP BY r.role, c.relname
"""


async def test_no_runtime_role_gains_a_table_write(conn: Conn) -> None:
    held: dict[str, set[str]] = {role: set() for role in REMAINING_WRITES}
    for row in await (await conn.execute(TABLE_WRITES)).fetchall():
        held[row["role"]].add(row["grant"])
    assert held == REMAINING_WRITES, {
        role: {"gained": sorted(held[role] - REMAINING_WRITES[role]),
               "lost (take it off the list)": sorted(REMAINING_WRITES[role] - held[role])}
        for role in REMAINING_WRITES}
    async with conn.transaction(force_rollback=True):  # the check can fail
        await conn.execute("GRANT UPDATE ON fleet_budget TO bf4ps_web")
        rows = await (await conn.execute(TABLE_WRITES)).fetchall()
        assert {"role": "bf4ps_web", "grant": "fleet_budget:UPDATE"} in rows


PATHS = """
SELECT p.oid::regprocedure::text AS function,
       (SELECT c FROM unnest(p.proconfig) c WHERE c LIKE 'search_path=%%') AS path
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = current_schema() AND p.prosecdef
ORDER BY 1
"""


async def test_every_definer_function_searches_the_temporary_schema_last(conn: Conn) -> None:
    rows = await (await conn.execute(PATHS)).fetchall()
    assert len(rows) >= 78
    bad = [r for r in rows if r["path"] not in ("search_path=public, pg_temp",
                                                'search_path="public", "pg_temp"')]
    assert not bad, bad


async def test_a_temporary_table_shadows_nothing_inside_a_definer_function(
        logins: Logins, conn: Conn, pg_server_url: str) -> None:
    """The review's attack: a login given TEMPORARY makes its own egress_gates; a gate
    function it calls still reads and writes the real one (pg_temp is searched last)."""
    params = await matrix_setup(conn, logins)
    dbname = (await (await conn.execute("SELECT current_database() AS d")).fetchone() or {})["d"]
    login = logins.names["collector"]
    temp = psycopg.sql.SQL("{} TEMPORARY ON DATABASE {} {} {}")
    async with await psycopg.AsyncConnection.connect(pg_server_url, autocommit=True) as admin:
        await admin.execute(temp.format(psycopg.sql.SQL("GRANT"), psycopg.sql.Identifier(dbname),
                                        psycopg.sql.SQL("TO"), psycopg.sql.Identifier(login)))
    try:
        await _shadow(logins, params, login)
    finally:
        async with await psycopg.AsyncConnection.connect(pg_server_url,
                                                         autocommit=True) as admin:
            await admin.execute(temp.format(
                psycopg.sql.SQL("REVOKE"), psycopg.sql.Identifier(dbname),
                psycopg.sql.SQL("FROM"), psycopg.sql.Identifier(login)))
    real = await (await conn.execute("SELECT cooldown_until > now() AS cooling FROM "
                                     "egress_gates WHERE egress_key = 'mx-a'")).fetchone()
    assert real == {"cooling": True}


async def _shadow(logins: Logins, params: dict[str, Any], login: str) -> None:
    async with connection(logins.urls["collector"]) as c:
        await c.execute("CREATE TEMP TABLE egress_gates (egress_key text PRIMARY KEY, "
                        "cooldown_until timestamptz, last_outage_at timestamptz, "
                        "updated_at timestamptz)")
        await c.execute("INSERT INTO egress_gates VALUES ('mx-a', NULL, NULL, NULL)")
        await c.execute("CREATE TEMP TABLE collectors (collector_uuid uuid, egress_key text, "
                        "retired_at timestamptz, db_login text)")
        await c.execute("INSERT INTO collectors VALUES (%s, 'mx-b', NULL, %s)",
                        (params["cb"], login))
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match=NOT_OWN_EGRESS):
            await c.execute("SELECT * FROM bf4ps_gate_cool('mx-b', 60)")
        row = await (await c.execute("SELECT * FROM bf4ps_gate_cool('mx-a', 60)")).fetchone()
        assert row and row["cooldown_until"] is not None
        mine = await (await c.execute(
            "SELECT cooldown_until FROM pg_temp.egress_gates")).fetchone()
        assert mine == {"cooldown_until": None}  # its own table untouched


async def test_the_events_these_functions_write_name_the_caller(
        logins: Logins, conn: Conn) -> None:
    """Every event records the session_user that wrote it, whichever function inserted it:
    the collector's own lost mark, the website's drain, the scheduler's reaping."""
    params = await matrix_setup(conn, logins)
    async with connection(logins.urls["collector"]) as c:
        await c.execute("SELECT bf4ps_event_record('heartbeat_lost', collector_uuid => %s)",
                        (params["ca"],))
    async with connection(logins.urls["web"]) as w:
        await w.execute("SELECT * FROM bf4ps_collector_set_flags('mx-b', NULL, true, 'x')")
        await w.execute("SELECT bf4ps_event_record('collector_drained', collector_uuid => %s)",
                        (params["cb"],))
    await conn.execute("UPDATE collection_jobs SET lease_expires_at = now() "
                       "WHERE job_id = %s", (params["job"],))
    async with connection(logins.urls["scheduler"]) as s:
        await s.execute("SELECT * FROM bf4ps_reap_expired(10)")
    rows = await (await conn.execute(
        "SELECT event_type, recorded_by FROM collection_events WHERE event_type IN "
        "('heartbeat_lost', 'collector_drained', 'lease_expired') ORDER BY event_id")).fetchall()
    names = logins.names
    assert [(r["event_type"], r["recorded_by"]) for r in rows] == [
        ("heartbeat_lost", names["collector"]), ("collector_drained", names["web"]),
        ("lease_expired", names["scheduler"])], rows
