"""The console's and `bf4ps status`'s window figures (throughput, failures by class, throttles,
the fleet budget by class) against a direct count of the event log and the ledger after a mix
of writes: events of every kind the windows count or skip, inside the hour, inside the day but
not the hour, and older than the day. And the reads' window bounds are index conditions, not
filters over the whole retained log (a volatile bound made the console read 4M events)."""

from __future__ import annotations

import json
import random
from typing import Any

from bf4ps.db.connect import Conn
from bf4ps.db.queries import q
from bf4ps.events import log as events
from bf4ps.events.log import EventType
from bf4ps.views import console, fleet_status

RESOURCES = ("detailed", "profile", "weapons", "vehicles")
AGES = ("0 seconds", "50 minutes", "3 hours", "23 hours", "2 days", "40 days")


async def write_mix(conn: Conn) -> None:
    """Events as the collectors write them (the event writer), then aged: each row's age drawn
    from AGES, so each window has rows on both sides of its bound."""
    rng = random.Random(34)
    kinds: list[tuple[EventType, dict[str, Any]]] = []
    for i in range(240):
        resource = rng.choice(RESOURCES)
        roll = rng.random()
        if roll < 0.45:
            kinds.append((EventType.SUCCEEDED, {"resource": resource, "http_status": 200,
                                                "duration_ms": rng.choice([None, 100 + i])}))
        elif roll < 0.65:
            error, status = rng.choice([("throttle", 429), ("throttle", 403), ("timeout", None),
                                        ("server", 502), ("unrecognized", 200), (None, 403)])
            kinds.append((EventType.FAILED, {"resource": resource, "error_class": error,
                                             "http_status": status, "duration_ms": 50}))
        elif roll < 0.75:
            kinds.append((EventType.RETRY_SCHEDULED, {"resource": resource,
                                                      "error_class": "throttle",
                                                      "http_status": 429}))
        elif roll < 0.85:
            kinds.append((EventType.EGRESS_THROTTLED, {"egress_key": f"eg-{i % 3}",
                                                       "http_status": 429}))
        else:
            kinds.append((rng.choice([EventType.CLAIMED, EventType.STARTED]),
                          {"resource": resource}))
    for kind, fields in kinds:
        await events.record(conn, kind, collector_name="mix", lane="background", **fields)
    await conn.execute(
        "UPDATE collection_events SET occurred_at = occurred_at - (%(ages)s::interval[])"
        "[1 + (event_id * 7 %% %(n)s)]", {"ages": list(AGES), "n": len(AGES)})
    for i in range(90):
        await conn.execute(
            "INSERT INTO request_ledger (slot_at, egress_key, budget_class, resource) "
            "VALUES (clock_timestamp() - %s::interval, %s, %s, 'detailed')",
            [AGES[i % len(AGES)], f"eg-{i % 3}",
             ("active", "recent", "bootstrap", "retry", "interactive")[i % 5]])


async def direct(conn: Conn, sql: str) -> list[dict[str, Any]]:
    cur = await conn.execute(sql)  # type: ignore[arg-type]
    return list(await cur.fetchall())


async def test_status_window_figures_equal_a_direct_count_of_the_log(conn: Conn) -> None:
    await write_mix(conn)
    hour = "occurred_at > clock_timestamp() - interval '1 hour'"
    status = await console.status(conn)

    counted = await direct(conn, f"""
        SELECT resource, event_type, count(*) AS n, avg(duration_ms) AS ms
        FROM collection_events WHERE {hour} AND event_type IN ('succeeded', 'failed')
        GROUP BY 1, 2""")
    expected: dict[str, dict[str, Any]] = {}
    for r in counted:
        entry = expected.setdefault(r["resource"], {"succeeded": 0, "failed": 0,
                                                    "avg_duration_ms": None})
        entry[r["event_type"]] = r["n"]
        if r["event_type"] == "succeeded" and r["ms"] is not None:
            entry["avg_duration_ms"] = round(float(r["ms"]), 1)
    assert set(expected) == set(RESOURCES)  # the mix reaches every resource in the hour
    assert {k: v.model_dump() for k, v in status.throughput.by_resource.items()} == expected

    failures = {r["c"]: r["n"] for r in await direct(conn, f"""
        SELECT COALESCE(error_class, '') AS c, count(*) AS n FROM collection_events
        WHERE {hour} AND event_type = 'failed' GROUP BY 1""")}
    assert len(failures) >= 3 and status.failures_by_class == failures
    assert (await fleet_status.status_report(conn)).failures_by_class == failures

    day = "occurred_at > clock_timestamp() - interval '1 day'"
    throttles = [r["event_id"] for r in await direct(conn, f"""
        SELECT event_id FROM collection_events
        WHERE {day} AND (event_type IN ('egress_throttled', 'egress_cooled')
                         OR error_class = 'throttle' OR http_status IN (403, 429))
        ORDER BY occurred_at DESC LIMIT 20""")]
    assert len(throttles) == 20 and [e.event_id for e in status.throttles] == throttles

    window = status.budget.fleet.window_seconds
    by_class = {r["budget_class"]: r["n"] for r in await direct(conn, f"""
        SELECT budget_class, count(*) AS n FROM request_ledger
        WHERE slot_at > clock_timestamp() - interval '{window:.0f} seconds'
        GROUP BY 1""")}
    assert len(by_class) == 5 and status.budget.fleet.by_class == by_class
    assert status.budget.fleet.used == sum(by_class.values())


def _index_conditions(plan: dict[str, Any]) -> list[str]:
    found = [str(plan[k]) for k in ("Index Cond", "Recheck Cond") if k in plan]
    for child in plan.get("Plans", []):
        found += _index_conditions(child)
    return found


async def test_window_reads_are_read_through_an_index(conn: Conn) -> None:
    """With sequential scans priced out, each window read bounds an index scan by its window
    (a volatile bound such as clock_timestamp() cannot be an index condition: it is then a
    filter over every row of the log, however short the window)."""
    await write_mix(conn)
    await conn.execute("SET enable_seqscan = off")
    reads = {"failures_by_class": ("occurred_at", {"window_seconds": 3600}),
             "throughput": ("occurred_at", {"window_seconds": 3600}),
             "web_recent_throttles": ("occurred_at", {"window_seconds": 86400, "limit": 20}),
             # (web_budget_by_class reads budget_window: its buckets and the edge's part-second,
             # tests/db/test_budget_buckets.py)
             # the scheduler's and the collectors' windows over the same log and ledger
             "refresh_lag": ("occurred_at", {"window_seconds": 3600}),
             "forecast_costs": ("occurred_at", {"window_seconds": 3600}),
             "forecast_sent": ("slot_at", {"window_seconds": 3600}),
             "requests_by_egress": ("slot_at", {"window_seconds": 60}),
             "circuit_window": ("occurred_at", {
                 "resources": ["detailed", "weapons"], "lane": "background",
                 "window_seconds": 600, "who": 1, "by_job": True, "egress_key": "eg-1",
                 "signature": "unrecognized:login_wall"}),
             "egress_soft_answers": ("occurred_at", {
                 "egress_key": "eg-1", "answers": 5, "window_seconds": 600})}
    for name, (column, params) in reads.items():
        cur = await conn.execute(f"EXPLAIN (FORMAT JSON) {q(name)}",  # type: ignore[arg-type]
                                 params)
        row = await cur.fetchone()
        assert row is not None
        plan = row["QUERY PLAN"]
        plan = json.loads(plan) if isinstance(plan, str) else plan
        conditions = _index_conditions(plan[0]["Plan"])
        assert any(f"{column} >" in c for c in conditions), (name, conditions)
    await conn.execute("RESET enable_seqscan")
