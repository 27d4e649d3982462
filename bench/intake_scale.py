"""BF4SW intake at full scale: fill a simulated BF4SW with 190,000 soldiers, import them all
into a fresh BF4PS database (discovery until caught up), then time the first reconciliation
(the last 24 h, ~25,000 soldiers) and an incremental one after a burst of sightings.

Each phase also reports its cost on BF4SW's database: the statements the intake ran there, their
total and longest time, and the table rows BF4SW read for them (pg_stat_user_tables: sequential
plus index fetches). The reconciliations run twice: with BF4SW's last_seen index (the one
docs/operations.md asks for) and without it.

Run: ``PYTHONPATH=src python bench/intake_scale.py [--soldiers N] [--batch-size B]``.
Uses the embedded server (or BF4PS_BENCH_DATABASE_URL). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench.common import fresh_database, machine
from bf4ps.db.connect import Conn, connection
from bf4ps.policy import Policy
from bf4ps.scheduler.intake import IntakeReport, sync_once
from bf4ps.scheduler.intake_source import source_connection
from bf4ps.sim.bf4sw import population
from bf4ps.sim.bf4sw.live import Live, name_book


class SourceCost:
    """The intake's statements on BF4SW's connection, timed at the client, and the rows
    BF4SW's table gave up for them."""

    def __init__(self, src: Conn, stats: Conn) -> None:
        self.stats, self.calls, self.seconds, self.longest = stats, 0, 0.0, 0.0
        execute: Callable[..., Awaitable[Any]] = src.execute

        async def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return await execute(*args, **kwargs)
            finally:
                took = time.perf_counter() - t
                self.calls, self.seconds = self.calls + 1, self.seconds + took
                self.longest = max(self.longest, took)

        src.execute = timed  # type: ignore[method-assign]
        self.src = src

    async def rows_read(self) -> int:
        await self.src.execute("SELECT pg_stat_force_next_flush()")
        await self.src.execute("SELECT 1")  # the flush happens at the end of a statement
        await self.stats.execute("SELECT pg_stat_clear_snapshot()")
        cur = await self.stats.execute(
            "SELECT COALESCE(seq_tup_read, 0) + COALESCE(idx_tup_fetch, 0) AS n "
            "FROM pg_stat_user_tables WHERE relname = 'bf4_player_aliases'")
        row = await cur.fetchone()
        return int(row["n"]) if row else 0

    async def phase(self, label: str, run: Callable[[], Awaitable[IntakeReport]]) -> None:
        before, calls, seconds, self.longest = await self.rows_read(), self.calls, \
            self.seconds, 0.0
        t = time.perf_counter()
        report = await run()
        line(label, time.perf_counter() - t, report)
        calls, seconds = self.calls - calls, self.seconds - seconds
        rows = await self.rows_read() - before
        print(f"{'':<50}   on BF4SW: {calls} statements, {seconds:.2f} s in all, longest "
              f"{self.longest * 1000:.0f} ms; {rows:,} rows read")


def line(label: str, seconds: float, report: IntakeReport | None = None) -> None:
    extra = ""
    if report is not None:
        extra = (f"  aliases {report.aliases_read:>7}, soldiers +{report.soldiers_new}"
                 f" / {report.soldiers_updated} updated, jobs {report.jobs_created} created"
                 f" {dict(sorted(report.created_by_class.items()))}, {report.jobs_promoted}"
                 f" promoted, {report.marked_due} due")
        if seconds > 0 and report.identities:
            extra += f"  ({report.identities / seconds:,.0f} soldiers/s)"
    print(f"{label:<50} {seconds:7.2f} s{extra}")


async def main(ps_url: str, sw_url: str, soldiers: int, batch_size: int, seed: int) -> None:
    policy = Policy()
    print(machine())
    async with connection(sw_url) as sw:
        t = time.perf_counter()
        rows = population.generate(soldiers, seed, await population.db_now(sw))
        line(f"generate {soldiers:,} soldiers ({len(rows):,} aliases)", time.perf_counter() - t)
        await population.ensure_table(sw)
        t = time.perf_counter()
        await population.load(sw, rows)
        line("COPY into BF4SW", time.perf_counter() - t)
    async with connection(ps_url) as ps, source_connection(sw_url) as src, \
            connection(sw_url) as stats:
        cost = SourceCost(src, stats)
        await cost.phase(f"discovery (batch {batch_size})", lambda: sync_once(
            ps, src, policy, batch_size, reconcile_every=None))
        for index in (True, False):
            if not index:
                async with connection(sw_url) as sw:
                    await sw.execute("DROP INDEX ix_bf4_player_aliases_last_seen")
                await ps.execute("DELETE FROM intake_state WHERE source_name = 'bf4sw_reconcile'")
            label = "with" if index else "WITHOUT"
            await cost.phase(f"first reconciliation (24 h), {label} index", lambda: sync_once(
                ps, src, policy, batch_size, reconcile_every=0))
            async with connection(sw_url) as sw:
                live = Live(sw, await name_book(sw, random.Random(1)), random.Random(2),
                            soldiers, rate=1.0)
                await live.tick(300.0 * 12)  # an hour of BF4SW activity at once
                print(f"{'one hour of activity':<50} {live.counts.sightings} sightings, "
                      f"{live.counts.new_soldiers} new, {live.counts.renames} renames")
            await cost.phase(f"incremental sync + reconciliation, {label} index",
                             lambda: sync_once(ps, src, policy, batch_size, reconcile_every=0))

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--soldiers", type=int, default=190_000)
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    urls = (fresh_database("bf4ps_bench_intake"),
            fresh_database("bf4sw_bench_intake", migrated=False))
    asyncio.run(main(*urls, args.soldiers, args.batch_size, args.seed))
