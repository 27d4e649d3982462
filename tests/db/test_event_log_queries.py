"""Every SQL query of docs/operations.md's "Troubleshooting with the event log" runs against a
real database holding a known story, and the seed's questions get their answers: one persona's
history (claims and starts included), one collector's actions, throttles by egress, the wait
at the gate, lease recovery, one job's whole story, failures by resource, a UTC window."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bf4ps.db.connect import Conn
from bf4ps.domain import ErrorClass, Platform
from bf4ps.policy import Policy
from bf4ps.queue import claim as qclaim
from bf4ps.queue import finalize
from bf4ps.queue.finalize import Attempt
from tests.helpers import add_job, make_collector, make_soldier

DOCS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
POLICY = Policy()
PERSONA = 949078968767  # the docs' examples name this persona, job 276 and collector mak-03
JOB = 276


def doc_queries() -> list[str]:
    text = DOCS.read_text()
    section = text[text.index("## Troubleshooting with the event log"):]
    section = section[:section.index("### Common problems")]
    statements: list[str] = []
    for block in re.findall(r"```sql\n(.*?)```", section, re.S):
        statements += [s.strip() for s in re.split(r";\s*\n", block) if s.strip()
                       and not all(line.startswith("--") for line in s.strip().splitlines())]
    return statements


async def seed_story(conn: Conn, tmp_path: Path) -> None:
    """Job 276 (weapons): mak-03 claims and starts it, stalls past its lease, mak-04 reclaims
    and collects it, mak-03's late answer is fenced. A detailed job: a 403 throttle, retried. A
    profile job: claimed, then released at shutdown."""
    zombie = await make_collector(conn, tmp_path, "mak-03")
    rescuer = await make_collector(conn, tmp_path, "mak-04", egress="eg-2")
    sid = await make_soldier(conn, PERSONA, Platform.XBOXONE, "xXSniperXx")
    await conn.execute("SELECT setval(pg_get_serial_sequence('collection_jobs', 'job_id'), "
                       "%s)", [JOB - 1])
    assert (await add_job(conn, sid, "weapons")).job_id == JOB
    stale = await qclaim.claim(conn, zombie, 0.3)
    assert stale is not None and await qclaim.start(conn, stale, 0.3, stale.claimed_at)
    await asyncio.sleep(0.5)
    fresh = await qclaim.claim(conn, rescuer, 60)
    assert fresh is not None and fresh.reclaimed and fresh.job_id == JOB
    await asyncio.sleep(0.3)  # waiting at the gate
    assert await qclaim.start(conn, fresh, 60, datetime.now(UTC))
    assert (await finalize.succeed(conn, rescuer, fresh, Attempt(200, 812), POLICY)).committed
    assert not (await finalize.succeed(conn, zombie, stale, Attempt(200, 900), POLICY)).committed

    await add_job(conn, sid, "detailed")
    job = await qclaim.claim(conn, zombie, 60)
    assert job is not None and await qclaim.start(conn, job, 60, job.claimed_at)
    out = await finalize.fail(conn, zombie, job, ErrorClass.THROTTLE, "throttle: HTTP 403",
                              Attempt(403, 120), POLICY)
    assert out.event == "retry_scheduled"

    await add_job(conn, sid, "profile")
    job = await qclaim.claim(conn, zombie, 60)
    assert job is not None and job.resource == "profile"
    assert await qclaim.release(conn, zombie, job, "shutdown")


def _window(query: str) -> str:
    """The docs' UTC window, moved to now."""
    start = (datetime.now(UTC) - timedelta(minutes=10)).strftime("%Y-%m-%d %H:%M:%S+00")
    end = (datetime.now(UTC) + timedelta(minutes=10)).strftime("%Y-%m-%d %H:%M:%S+00")
    return query.replace("2026-11-30 04:24:00+00", start).replace("2026-11-30 04:26:00+00", end)


async def test_every_event_log_query_of_the_docs_answers(conn: Conn, tmp_path: Path) -> None:
    await seed_story(conn, tmp_path)
    queries = doc_queries()
    assert len(queries) >= 10, queries
    answers: dict[str, list[dict[str, Any]]] = {}
    for query in queries:
        cur = await conn.execute(_window(query))  # type: ignore[arg-type]
        answers[query] = list(await cur.fetchall())

    def answer(fragment: str) -> list[dict[str, Any]]:
        hits = [rows for query, rows in answers.items() if fragment in query]
        assert len(hits) == 1, fragment
        return hits[0]

    history = answer("resource = 'weapons'")  # one persona/resource, through its soldier
    assert [r["event_type"] for r in history] == [
        "created", "claimed", "started", "lease_expired", "reclaimed", "claimed", "started",
        "succeeded", "stale_finalize_rejected"]
    assert [r["wait_ms"] for r in history if r["event_type"] == "started"][1] >= 300
    mine = {r["event_type"]: r["n"] for r in answer("lower(collector_name) = 'mak-03'")}
    assert mine["failed"] == 1 and mine["released"] == 1 and mine["lease_expired"] == 1
    assert mine["claimed"] == 3 and mine["started"] == 2  # the view's rows
    throttled = answer("throttled_requests")
    assert [(r["egress_key"], r["throttled_requests"]) for r in throttled] == [("eg-1", 1)]
    waits = {r["lane"]: r for r in answer("avg_wait_ms")}
    assert waits["background"]["n"] == 3 and waits["background"]["max_wait_ms"] >= 300
    recovery = [r["event_type"] for r in answer("reclaimed_by")]
    assert sorted(recovery) == ["lease_expired", "reclaimed", "stale_finalize_rejected"]
    story = answer(f"WHERE job_id = {JOB}")
    assert [(r["event_type"], r["collector_name"]) for r in story] == [
        ("created", None), ("claimed", "mak-03"), ("started", "mak-03"),
        ("lease_expired", "mak-03"), ("reclaimed", "mak-04"), ("claimed", "mak-04"),
        ("started", "mak-04"), ("succeeded", "mak-04"), ("stale_finalize_rejected", "mak-03")]
    failures = answer("AS failures")
    assert [(r["resource"], r["error_class"], r["http_status"]) for r in failures] == [
        ("detailed", "throttle", 403)]
    rates = {r["resource"]: (r["ok"], r["failed"]) for r in answer("failed_pct")}
    assert rates == {"weapons": (1, 0), "detailed": (0, 1)}
    window = [r["event_type"] for r in answer("timestamptz")]
    assert window.count("claimed") == 4 and window.count("started") == 3
    assert answer("heartbeat_lost") == []
