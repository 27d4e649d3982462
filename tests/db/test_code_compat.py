"""A collector of the build before the admission's split (schema 0032) keeps working after the
upgrade re-applied the code files: its two calls, in the exact text that build sends
(admission_slot for a look and a count, queue_succeed_counted for a success that claims and
counts the next job behind the gate), still claim, count and finish, now under the new trust
(its identity, lane and the budget's shares are the database's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from psycopg.types.json import Jsonb

from bf4ps.db.connect import Conn
from tests.helpers import count, gated_collector, seed_work

# the named queries of that build, as it sends them (git show 25ac9a8:src/bf4ps/db/sql/...)
OLD_ADMISSION = """
SELECT outcome, slot, wait_until, ledger_id, classes
FROM admission_slot(%(egress_key)s, %(collector_uuid)s, %(job_id)s::bigint,
                    %(lease_token)s::uuid, %(interactive)s, %(margin)s, %(ahead)s,
                    %(connect_lead)s, %(policy)s, %(budget_class)s, %(resource)s)"""
OLD_SUCCESS = """
SELECT (c.claimed).*, c.slot_at, c.ledger_id
FROM queue_succeed_counted(%(job_id)s, %(collector_uuid)s, %(lease_token)s,
                           %(freshness_seconds)s, %(http_status)s, %(duration_ms)s,
                           %(details)s::jsonb, %(next)s, %(lane)s, %(lease_seconds)s,
                           %(soldier_id)s, %(start)s, %(gate)s::jsonb, %(strict)s) c"""
POLICY = {"cap_active": 0.75, "floor_interactive": 0.25, "floor_bootstrap": 0.2,
          "floor_retry": 0.05}


async def _one(conn: Conn, sql: str, params: dict[str, Any]) -> dict[str, Any]:
    cur = await conn.execute(sql, params)
    row = await cur.fetchone()
    assert row is not None
    return row


async def test_an_old_build_s_calls_claim_count_and_chain(conn: Conn, tmp_path: Path) -> None:
    me = await gated_collector(conn, tmp_path, budget=(100, 60.0))
    await seed_work(conn, 3)
    timings = {"egress_key": me.egress_key, "collector_uuid": me.collector_uuid,
               "interactive": False, "margin": 0.05, "ahead": 5.0, "connect_lead": 0.0,
               "policy": Jsonb(POLICY), "budget_class": None, "resource": None}
    look = await _one(conn, OLD_ADMISSION, timings | {"job_id": None, "lease_token": None})
    assert look["outcome"] == "open" and "bootstrap" in look["classes"]
    job = await _one(conn, "SELECT job_id, lease_token FROM queue_claim(%s, 'background', 60, "
                           "NULL, %s)", [me.collector_uuid, look["classes"]])
    counted = await _one(conn, OLD_ADMISSION, timings | {"job_id": job["job_id"],
                                                         "lease_token": job["lease_token"]})
    assert counted["outcome"] == "counted" and counted["ledger_id"] is not None
    await conn.execute("SELECT bf4ps_job_start(%s, %s, %s, clock_timestamp(), 60)",
                       [job["job_id"], me.collector_uuid, job["lease_token"]])
    gate = {"egress": me.egress_key, "interactive": False, "margin": 0.05, "ahead": 5.0,
            "connect_lead": 0.0, "policy": POLICY}
    done = await _one(conn, OLD_SUCCESS, {
        "job_id": job["job_id"], "collector_uuid": me.collector_uuid,
        "lease_token": job["lease_token"], "freshness_seconds": 3600.0, "http_status": 200,
        "duration_ms": 5, "details": None, "next": True, "lane": "background",
        "lease_seconds": 60.0, "soldier_id": None, "start": False, "gate": Jsonb(gate),
        "strict": False})
    assert done["finished"] == job["job_id"]
    assert done["job_id"] is not None and done["ledger_id"] is not None  # claimed and counted
    assert await count(conn, "SELECT count(*) FROM request_ledger") == 2
    assert await count(conn, "SELECT count(*) FROM collection_events "
                             "WHERE event_type = 'succeeded'") == 1
    # a stale success of that build: nothing written, as before
    stale = await _one(conn, OLD_SUCCESS, {
        "job_id": job["job_id"], "collector_uuid": me.collector_uuid,
        "lease_token": job["lease_token"], "freshness_seconds": 3600.0, "http_status": 200,
        "duration_ms": 5, "details": None, "next": False, "lane": "background",
        "lease_seconds": 60.0, "soldier_id": None, "start": False, "gate": None,
        "strict": False})
    assert stale["finished"] is None
