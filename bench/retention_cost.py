"""Event retention at scale: dropping whole monthly partitions vs batched DELETEs of the same
rows. Prints the time each takes and the dead tuples the DELETE leaves for vacuum.
usage: python -m bench.retention_cost [--events 10000000]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from datetime import UTC, datetime

from bench.common import fresh_database, machine
from bf4ps.db.connect import Conn, connection
from bf4ps.scheduler import retention


async def fill(conn: Conn, events: int) -> None:
    """`events` rows spread evenly over the last 240 days."""
    await conn.execute("SELECT bf4ps_ensure_event_partitions((now() - interval '9 months')"
                       "::date, 10)")
    await conn.execute(
        "INSERT INTO collection_events (occurred_at, event_type, soldier_id, persona_id, "
        "platform, resource, collector_name, duration_ms) SELECT now() - (g::float8 / "
        "%(e)s) * interval '240 days', 'succeeded', g %% 100000, 1000000000 + g %% 100000, "
        "'pc', 'detailed', 'c' || (g %% 8), 700 FROM generate_series(1, %(e)s) g",
        {"e": events})
    await conn.execute("VACUUM ANALYZE collection_events")


async def dead_tuples(conn: Conn) -> int:
    await conn.execute("SELECT pg_stat_force_next_flush()")
    cur = await conn.execute("SELECT coalesce(sum(n_dead_tup), 0) AS n FROM pg_stat_user_tables "
                             "WHERE relname LIKE 'collection_events%%'")
    row = await cur.fetchone()
    return int(row["n"]) if row else 0


async def by_partitions(url: str, days: float) -> tuple[float, int, int, int]:
    async with connection(url) as conn:
        t0 = time.perf_counter()
        report = await retention.run(conn, days)
        took = time.perf_counter() - t0
        return took, len(report.dropped_partitions), report.deleted_rows, await dead_tuples(conn)


async def by_delete(url: str, days: float) -> tuple[float, int, int]:
    cutoff = datetime.now(UTC).timestamp() - days * 86400
    async with connection(url) as conn:
        t0 = time.perf_counter()
        deleted = 0
        while True:
            cur = await conn.execute(
                "DELETE FROM collection_events WHERE (event_id, occurred_at) IN (SELECT "
                "event_id, occurred_at FROM collection_events WHERE occurred_at < "
                "to_timestamp(%s) LIMIT 5000)", [cutoff])
            deleted += cur.rowcount
            if cur.rowcount < 5000:
                break
        return time.perf_counter() - t0, deleted, await dead_tuples(conn)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--days", type=float, default=180)
    args = ap.parse_args()
    print(f"machine: {machine()}")
    urls = []
    for name in ("bench_retention_drop", "bench_retention_delete"):
        url = fresh_database(name)
        t0 = time.perf_counter()
        asyncio.run(_fill(url, args.events))
        print(f"{name}: {args.events:,} events over 240 days in {time.perf_counter() - t0:.0f} s")
        urls.append(url)
    took, parts, rows, dead = asyncio.run(by_partitions(urls[0], args.days))
    print(f"partition drop + boundary batches: {took:6.2f} s ({parts} partitions dropped, "
          f"{rows:,} rows deleted in batches, {dead:,} dead tuples left)")
    took, rows, dead = asyncio.run(by_delete(urls[1], args.days))
    print(f"batched DELETE only:               {took:6.2f} s ({rows:,} rows, {dead:,} dead "
          "tuples left for vacuum)")


async def _fill(url: str, events: int) -> None:
    async with connection(url) as conn:
        await fill(conn, events)


if __name__ == "__main__":
    main()
