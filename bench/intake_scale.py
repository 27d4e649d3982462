"""BF4SW intake at full scale: fill a simulated BF4SW with 190,000 soldiers, import them all
into a fresh BF4PS database (discovery until caught up), then time the first reconciliation
(the last 24 h, ~25,000 soldiers) and an incremental one after a burst of sightings.

Run: ``PYTHONPATH=src python bench/intake_scale.py [--soldiers N] [--batch-size B]``.
Uses the embedded server (or BF4PS_BENCH_DATABASE_URL). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time

from bench.common import fresh_database, machine
from bf4ps.db.connect import connection
from bf4ps.policy import Policy
from bf4ps.scheduler.intake import IntakeReport, sync_once
from bf4ps.scheduler.intake_source import source_connection
from bf4ps.sim.bf4sw import population
from bf4ps.sim.bf4sw.live import Live, name_book


def line(label: str, seconds: float, report: IntakeReport | None = None) -> None:
    extra = ""
    if report is not None:
        extra = (f"  aliases {report.aliases_read:>7}, soldiers +{report.soldiers_new}"
                 f" / {report.soldiers_updated} updated, jobs {report.jobs_created} created"
                 f" {dict(sorted(report.created_by_class.items()))}, {report.jobs_promoted}"
                 f" promoted, {report.marked_due} due")
        if seconds > 0 and report.identities:
            extra += f"  ({report.identities / seconds:,.0f} soldiers/s)"
    print(f"{label:<34} {seconds:7.2f} s{extra}")


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
    async with connection(ps_url) as ps, source_connection(sw_url) as src:
        t = time.perf_counter()
        report = await sync_once(ps, src, policy, batch_size, reconcile_every=None)
        line(f"discovery (batch {batch_size})", time.perf_counter() - t, report)
        t = time.perf_counter()
        report = await sync_once(ps, src, policy, batch_size, reconcile_every=0)
        line("first reconciliation (24 h)", time.perf_counter() - t, report)
        async with connection(sw_url) as sw:
            live = Live(sw, await name_book(sw, random.Random(1)), random.Random(2), soldiers,
                        rate=1.0)
            await live.tick(300.0 * 12)  # an hour of BF4SW activity at once
            print(f"{'one hour of activity':<34} {live.counts.sightings} sightings, "
                  f"{live.counts.new_soldiers} new, {live.counts.renames} renames")
        t = time.perf_counter()
        report = await sync_once(ps, src, policy, batch_size, reconcile_every=0)
        line("incremental sync + reconciliation", time.perf_counter() - t, report)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--soldiers", type=int, default=190_000)
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    urls = (fresh_database("bf4ps_bench_intake"),
            fresh_database("bf4sw_bench_intake", migrated=False))
    asyncio.run(main(*urls, args.soldiers, args.batch_size, args.seed))
