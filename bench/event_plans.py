"""The event log's queries at 10M rows: every SQL query of docs/operations.md's "Troubleshooting
with the event log" and every named query of src/bf4ps/db/sql that reads collection_events,
run with EXPLAIN (ANALYZE, BUFFERS) on a log of `--events` rows (60 days of a fleet: 24
collectors and mak-03, 200,000 soldiers, the docs' persona and job among them; 85 % successes,
8 % failures, the rest retries, throttles, lease recovery, a heartbeat lost and restored every
100,000 events). Prints each query's execution time (the second of two runs; over
--timeout seconds it is cancelled and printed as such), the indexes its plan reads and, with
--plans, the whole plan. --reuse keeps the database of an earlier run (same schema).
usage: python -m bench.event_plans [--events 10000000] [--plans] [--reuse] [--timeout 30]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time
from typing import Any

import psycopg

from bench.common import fresh_database, machine, server_url
from bf4ps.db.connect import Conn, connection, with_dbname
from bf4ps.db.queries import q
from bf4ps.web.metrics import BOUNDS_MS
from tests.db.test_event_log_queries import doc_queries

SOLDIERS = 200_000
DAYS = 60
CHUNK = 1_000_000

# g: the event's number, in time order (rows are appended as they happen)
FILL = """
INSERT INTO collection_events (occurred_at, event_type, collector_uuid, collector_name, hostname,
    egress_key, lane, job_id, soldier_id, persona_id, platform, resource, priority_class,
    attempt_number, result, duration_ms, wait_ms, http_status, error_class, error_message,
    claimed_at, started_at)
SELECT e.at, e.kind, c.collector_uuid, c.collector_name, c.hostname, c.egress_key,
       CASE WHEN e.g %% 20 = 0 THEN 'interactive' ELSE 'background' END,
       CASE WHEN e.kind IN ('heartbeat_lost', 'heartbeat_restored', 'egress_throttled')
            THEN NULL ELSE e.g / 3 END,
       e.sid, s.persona_id, s.platform,
       CASE WHEN e.kind IN ('heartbeat_lost', 'heartbeat_restored', 'egress_throttled') THEN NULL
            ELSE (ARRAY['detailed', 'profile', 'weapons', 'vehicles'])[1 + e.g %% 4] END,
       'recent', 1,
       CASE e.kind WHEN 'succeeded' THEN 'ok' END,
       CASE WHEN e.kind IN ('succeeded', 'failed') THEN 200 + e.g %% 700 END,
       CASE WHEN e.kind IN ('succeeded', 'failed') THEN e.g %% 900 END,
       CASE e.kind WHEN 'succeeded' THEN 200 WHEN 'failed' THEN
            CASE WHEN e.g %% 5 = 0 THEN 429 ELSE 500 END END,
       CASE e.kind WHEN 'failed' THEN CASE WHEN e.g %% 5 = 0 THEN 'throttle' ELSE 'server' END
            WHEN 'egress_throttled' THEN 'throttle' END,
       CASE e.kind WHEN 'failed' THEN 'HTTP 500' END,
       CASE WHEN e.kind IN ('succeeded', 'failed') THEN e.at - interval '2 s' END,
       CASE WHEN e.kind IN ('succeeded', 'failed') THEN e.at - interval '1 s' END
FROM (SELECT g, now() - make_interval(days => %(days)s)
                 + g * make_interval(secs => %(days)s * 86400.0 / %(total)s) AS at,
             1 + g %% %(soldiers)s AS sid,
             CASE WHEN g %% 1000 < 850 THEN 'succeeded' WHEN g %% 1000 < 930 THEN 'failed'
                  WHEN g %% 1000 < 960 THEN 'retry_scheduled'
                  WHEN g %% 1000 < 965 THEN 'egress_throttled'
                  WHEN g %% 1000 < 968 THEN 'lease_expired' WHEN g %% 1000 < 971 THEN 'reclaimed'
                  WHEN g %% 1000 < 972 THEN 'stale_finalize_rejected'
                  WHEN g %% 100000 = 973 THEN 'heartbeat_lost'
                  WHEN g %% 100000 = 974 THEN 'heartbeat_restored'
                  ELSE 'retry_scheduled' END AS kind
      FROM generate_series(%(lo)s, %(hi)s) g) e
JOIN soldiers s ON s.soldier_id = e.sid
JOIN collectors c ON c.collector_name = CASE WHEN e.g %% 25 = 3 THEN 'mak-03'
                                             ELSE 'c' || (e.g %% 25) END
"""


async def populate(conn: Conn, events: int) -> None:
    await conn.execute(
        "INSERT INTO soldiers (persona_id, platform, current_name) "
        "SELECT CASE WHEN g = 1 THEN 949078968767 ELSE 1000000000 + g END, "
        "CASE WHEN g = 1 THEN 'xboxone' ELSE 'pc' END, 'P' || g "
        "FROM generate_series(1, %(n)s) g", {"n": SOLDIERS})
    await conn.execute(
        "INSERT INTO collectors (collector_uuid, collector_name, hostname, lane, egress_key) "
        "SELECT gen_random_uuid(), CASE WHEN g = 3 THEN 'mak-03' ELSE 'c' || g END, "
        "'host-' || g, 'background', CASE WHEN g = 3 THEN 'mak-03-public' ELSE 'eg-' || g END "
        "FROM generate_series(0, 24) g")
    await conn.execute("SELECT bf4ps_ensure_event_partitions("
                       "(now() - make_interval(days => %(d)s))::date, 4)", {"d": DAYS + 1})
    for lo in range(0, events, CHUNK):
        await conn.execute(FILL, {"days": DAYS, "total": events, "soldiers": SOLDIERS,  # type: ignore[arg-type]
                                  "lo": lo, "hi": min(lo + CHUNK, events) - 1})
    await conn.execute("VACUUM ANALYZE")


def named() -> list[tuple[str, dict[str, Any]]]:
    return [
        ("events_search (newest first, no filter)", {}),
        ("events_search (collector mak-03)", {"collector": "mak-03"}),
        ("events_search (persona)", {"persona_id": 949078968767, "platform": "xboxone"}),
        ("events_search (type failed, since 24 h)", {"event_type": "failed", "since": "24h"}),
        ("circuit_window", {"lane": "background", "resource": "weapons", "window_seconds": 600,
                            "who": 7, "egress_key": "eg-1", "signature": "server"}),
        ("failures_by_class", {"window_seconds": 3600}),
        ("throughput", {"window_seconds": 3600}),
        ("refresh_lag", {"window_seconds": 86400}),
        ("forecast_costs", {"window_seconds": 86400}),
        ("interactive_measured_durations", {"limit": 200, "window_seconds": 86400}),
        ("web_recent_throttles", {"limit": 50, "window_seconds": 86400}),
        ("web_metrics_last_event", {"lag_seconds": 10}),
        ("web_metrics_events", {"after": "CURSOR", "upto": "LAST", "bounds": BOUNDS_MS}),
        ("web_metrics_throttles", {"after": "CURSOR", "upto": "LAST"}),
        ("web_metrics_failures", {"after": "CURSOR", "upto": "LAST"}),
        ("collections_of", {"soldier_id": 1, "resources": ["weapons"], "limit": 50}),
        ("last_session_of", {"soldier_id": 1}),
        ("parking_streak", {"soldier_id": 1, "resource": "weapons", "classes": ["server"],
                            "n": 5}),
    ]


SEARCH_DEFAULTS = {k: None for k in ("collector", "egress", "event_type", "name", "persona_id",
                                     "platform", "resource", "since", "until")}


async def explain(conn: Conn, sql: str, params: dict[str, Any]) -> tuple[float, list[str]]:
    """The execution time (ms; inf: cancelled by the statement timeout) and the plan."""
    try:
            cur = await conn.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + sql,  # type: ignore[operator]
                                 params)
    except psycopg.errors.QueryCanceled:
        cur = await conn.execute("EXPLAIN (COSTS OFF) " + sql, params)  # type: ignore[operator]
        return float("inf"), [str(next(iter(r.values()))) for r in await cur.fetchall()]
    lines = [str(next(iter(r.values()))) for r in await cur.fetchall()]
    took = next(float(m.group(1)) for line in lines
                if (m := re.search(r"Execution Time: ([\d.]+) ms", line)))
    return took, lines


def indexes_of(lines: list[str]) -> str:
    found: list[str] = []
    for line in lines:
        if "Seq Scan" in line and re.search(r"rows=0(\.0+)? ", line):
            continue  # an empty partition (the months ahead, the default)
        for m in re.finditer(r"(?:Index(?: Only)? Scan(?: Backward)? using|Bitmap Index Scan on)"
                             r" (\S+)|Seq Scan on (\S+)", line):
            name = m.group(1) or f"seq:{m.group(2)}"
            name = re.sub(r"collection_events_\d{6}_", "", name)
            if name not in found:
                found.append(name)
    return ", ".join(found)


async def measure(url: str, show: bool, timeout: float) -> None:
    async with connection(url) as conn:
        await conn.execute(f"SET statement_timeout = '{int(timeout * 1000)}ms'")  # type: ignore[arg-type]
        cur = await conn.execute("SELECT max(event_id) AS m FROM collection_events")
        row = await cur.fetchone()
        last = int(row["m"]) if row else 0
        cases: list[tuple[str, str, dict[str, Any]]] = [
            (f"docs #{i + 1}: " + " ".join(sql.split())[:60], sql, {})
            for i, sql in enumerate(doc_queries())]
        for label, params in named():
            name = label.split(" ")[0]
            params = {**(SEARCH_DEFAULTS if name == "events_search" else {}), **params}
            if params.get("since") == "24h":
                params["since"] = await scalar_now(conn, "now() - interval '24 hours'")
            if name == "events_search":
                params["limit"] = 200
            params = {k: last - 5000 if v == "CURSOR" else last if v == "LAST" else v
                      for k, v in params.items()}
            cases.append((label, q(name), params))
        for label, sql, params in cases:
            await explain(conn, sql, params)  # warm
            took, lines = await explain(conn, sql, params)
            print(f"{took:9.1f} ms  {label}\n             reads: {indexes_of(lines)}")
            if show:
                print("\n".join("             | " + line for line in lines))


async def scalar_now(conn: Conn, expr: str) -> Any:
    cur = await conn.execute(f"SELECT {expr} AS v")  # type: ignore[arg-type]
    row = await cur.fetchone()
    assert row is not None
    return row["v"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--plans", action="store_true", help="print each plan whole")
    ap.add_argument("--reuse", action="store_true", help="the database of an earlier run")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per query")
    args = ap.parse_args()
    print(f"machine: {machine()}")
    if args.reuse:
        url = with_dbname(server_url(), "bench_event_plans")
    else:
        url = fresh_database("bench_event_plans")
        t0 = time.perf_counter()
        asyncio.run(_populate(url, args.events))
        print(f"{args.events:,} events, {SOLDIERS:,} soldiers, 25 collectors over {DAYS} days: "
              f"populated in {time.perf_counter() - t0:.0f} s")
    asyncio.run(measure(url, args.plans, args.timeout))
    print(f"machine after: {machine()}")


async def _populate(url: str, events: int) -> None:
    async with connection(url) as conn:
        await populate(conn, events)


if __name__ == "__main__":
    main()
