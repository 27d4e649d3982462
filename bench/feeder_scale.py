"""Feeder replenish (1,000 jobs) and one claim at 10k, 100k and 1M soldiers, the largest with
10M events in the log. Target: 1M within 1.5× of 10k.
usage: python -m bench.feeder_scale [--scales 10000,100000,1000000] [--events 10000000]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from bench.common import fresh_database, machine, median
from bf4ps.collector.identity import Wanted, register
from bf4ps.db.connect import Conn, connection
from bf4ps.domain import Lane
from bf4ps.policy import Policy
from bf4ps.queue import claim as qclaim
from bf4ps.scheduler import activity, feeder


async def populate(conn: Conn, n: int, events: int) -> None:
    """n soldiers shaped like BF4SW's (13 % seen within 24 h, 26 % within 7 days), every
    resource never attempted; `events` rows of history in the event log."""
    await conn.execute(
        "INSERT INTO soldiers (persona_id, platform, current_name, first_seen_at, last_seen_at) "
        "SELECT 1000000000 + g, 'pc', 'P' || g, now() - interval '400 days', "
        "now() - CASE WHEN g %% 100 < 13 THEN interval '2 hours' "
        "             WHEN g %% 100 < 39 THEN interval '3 days' ELSE interval '40 days' END "
        "FROM generate_series(1, %(n)s) g", {"n": n})
    await conn.execute(
        "INSERT INTO collection_state (soldier_id, resource, eligible_since, activity_at, "
        "activity_class) SELECT s.soldier_id, r, now() - interval '30 days' + s.soldier_id * "
        "interval '1 ms', s.last_seen_at, CASE WHEN s.last_seen_at > now() - interval '1 day' "
        "THEN 'active' WHEN s.last_seen_at > now() - interval '7 days' THEN 'recent' "
        "ELSE 'bootstrap' END FROM soldiers s, "
        "unnest(ARRAY['detailed','profile','weapons','vehicles']) r")
    if events:
        await conn.execute(
            "INSERT INTO collection_events (occurred_at, event_type, soldier_id, persona_id, "
            "platform, resource, collector_name) SELECT now() - (g %% 5000000) * "
            "interval '1 s', 'succeeded', 1 + g %% %(n)s, 1000000000 + g %% %(n)s, 'pc', "
            "'detailed', 'c' || (g %% 8) FROM generate_series(1, %(e)s) g",
            {"n": n, "e": events})
    await conn.execute("VACUUM ANALYZE")


async def measure(url: str, runs: int) -> tuple[float, float]:
    pol = Policy(working_set_background=1000)
    feeds, claims = [], []
    async with connection(url) as conn:
        me = await register(conn, Path(tempfile.mkdtemp()), Wanted(
            "scale-01", "bench", Lane.BACKGROUND, "eg", None, "bench"))
        for _ in range(runs):
            await conn.execute("DELETE FROM collection_jobs")
            t0 = time.perf_counter()
            report = await feeder.replenish(conn, pol)
            feeds.append(time.perf_counter() - t0)
            assert report.total == 1000, report
            t0 = time.perf_counter()
            assert await qclaim.claim(conn, me, 60) is not None
            claims.append(time.perf_counter() - t0)
            await activity.decay(conn, pol)
    return median(feeds), median(claims)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scales", default="10000,100000,1000000")
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    print(f"machine: {machine()}")
    scales = [int(s) for s in args.scales.split(",")]
    results = {}
    for n in scales:
        url = fresh_database(f"bench_feeder_{n}")
        t0 = time.perf_counter()
        events = args.events if n == max(scales) else 0
        asyncio.run(_populate(url, n, events))
        print(f"{n:>9,} soldiers ({events:,} events) populated in "
              f"{time.perf_counter() - t0:.0f} s")
        feed, claim = asyncio.run(measure(url, args.runs))
        results[n] = (feed, claim)
        print(f"{n:>9,} soldiers: replenish 1,000 jobs {feed * 1000:7.1f} ms, "
              f"claim {claim * 1000:6.2f} ms (medians of {args.runs})")
    small, large = results[scales[0]], results[scales[-1]]
    print(f"ratio {scales[-1]:,}/{scales[0]:,}: replenish {large[0] / small[0]:.2f}, "
          f"claim {large[1] / small[1]:.2f} (target ≤ 1.5)")


async def _populate(url: str, n: int, events: int) -> None:
    async with connection(url) as conn:
        await populate(conn, n, events)


if __name__ == "__main__":
    main()
