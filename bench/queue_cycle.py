"""Fenced claim→start→finalize cycles per second (8 workers) at 10k and 1M soldiers, against
pgqueuer's own queue manager at batch size 1 and 10 on the same server in the same run, and
beside them the bare floor of three durable transactions per job (bench/queue_floor.py).

usage: python bench/queue_cycle.py [--jobs 10000] [--runs 3] [--scales 10000,1000000]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from datetime import timedelta
from pathlib import Path
from tempfile import mkdtemp
from typing import Any

from bench.common import fresh_database, machine, median
from bench.queue_floor import bare_rate
from bf4ps.collector.identity import Wanted, register
from bf4ps.db.connect import connection
from bf4ps.domain import Lane
from bf4ps.policy import Policy
from bf4ps.queue import claim as qclaim
from bf4ps.queue import finalize
from bf4ps.queue.jobs import CollectorRef

WORKERS = 8


async def seed(url: str, soldiers: int, jobs: int) -> None:
    async with connection(url) as conn:
        await conn.execute(
            "INSERT INTO soldiers (persona_id, platform, current_name) "
            "SELECT g, 'pc', 'S' || g FROM generate_series(1, %s) g", [soldiers])
        await conn.execute(
            "INSERT INTO collection_state (soldier_id, resource) SELECT soldier_id, r "
            "FROM soldiers, unnest(ARRAY['detailed','profile','weapons','vehicles']) r")
        await conn.execute("VACUUM ANALYZE")


async def add_jobs(url: str, soldiers: int, jobs: int) -> None:
    async with connection(url) as conn:
        await conn.execute(
            "INSERT INTO collection_jobs (soldier_id, resource, lane, priority_class, rank, "
            "reason) SELECT soldier_id, 'detailed', 'background', 'bootstrap', now(), "
            "'bootstrap' FROM soldiers WHERE soldier_id %% %s = 0 ORDER BY soldier_id "
            "LIMIT %s", [max(1, soldiers // jobs), jobs])
        await conn.execute("ANALYZE collection_jobs")


async def worker(url: str, me: CollectorRef, policy: Policy) -> int:
    done = 0
    async with connection(url) as conn:
        while True:
            job = await qclaim.claim(conn, me, 60)
            if job is None:
                return done
            await qclaim.start(conn, me, job, 60, job.claimed_at)  # one statement, as collectors do
            out = await finalize.succeed(conn, me, job, finalize.Attempt(200, 1), policy)
            done += out.committed


DATA_DIR = Path(mkdtemp(prefix="bf4ps-bench-ids-"))  # same identities in every run


async def ours(url: str, soldiers: int, jobs: int) -> float:
    await add_jobs(url, soldiers, jobs)
    data_dir = DATA_DIR
    async with connection(url) as conn:
        refs = [await register(conn, data_dir, Wanted(f"bench-{i}", "bench", Lane.BACKGROUND,
                                                      f"eg-{i}", None, "bench"))
                for i in range(WORKERS)]
    t0 = time.perf_counter()
    counts = await asyncio.gather(*(worker(url, r, Policy()) for r in refs))
    elapsed = time.perf_counter() - t0
    assert sum(counts) == jobs, (sum(counts), jobs)
    return jobs / elapsed


async def pgqueuer_rate(url: str, jobs: int, batch: int) -> dict[str, float]:
    """pgqueuer's jobs/s three ways: to the moment its last job's completion was committed (the
    job left its queue table: what a fenced bf4ps cycle counts, and the figure the ratios use);
    to the moment its last handler returned (completions are still in its ack buffer then); and
    to the moment its queue manager returned (its drain-mode shutdown waits on buffer and
    heartbeat timers, about 4 s here whatever the job count)."""
    import psycopg
    from pgqueuer import PsycopgDriver, QueueManager
    from pgqueuer.queries import Queries
    from pgqueuer.types import QueueExecutionMode

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        queries = Queries(PsycopgDriver(conn))
        await queries.install()
        for start in range(0, jobs, 1000):
            n = min(1000, jobs - start)
            await queries.enqueue(["noop"] * n, [None] * n, [0] * n)
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        queries = Queries(PsycopgDriver(conn))
        qm = QueueManager(queries)
        handled, acked = [0, 0.0], [0, 0.0]
        log_jobs = queries.log_jobs

        async def counted_log_jobs(items: Any) -> None:
            await log_jobs(items)  # autocommit: committed when it returns
            acked[0] += len(items)
            acked[1] = time.perf_counter()

        queries.log_jobs = counted_log_jobs  # type: ignore[method-assign,assignment]

        @qm.entrypoint("noop")
        async def noop(job: object) -> None:
            handled[0] += 1
            handled[1] = time.perf_counter()

        t0 = time.perf_counter()
        await qm.run(batch_size=batch, mode=QueueExecutionMode.drain,
                     dequeue_timeout=timedelta(seconds=1))
        end = time.perf_counter()
        assert handled[0] == jobs and acked[0] == jobs, (handled, acked)
        return {"": jobs / (acked[1] - t0), "_handled": jobs / (handled[1] - t0),
                "_e2e": jobs / (end - t0)}


def _run_once(urls: dict[int, str], jobs: int, run: int) -> dict[str, float]:
    """One round: every contender back to back, so machine load hits them alike."""
    out = {f"bf4ps_{scale}": asyncio.run(ours(url, scale, min(jobs, scale)))
           for scale, url in urls.items()}
    for batch in (1, 10):
        url = fresh_database(f"bench_pgq_{batch}_{run}", migrated=False)
        for suffix, rate in asyncio.run(pgqueuer_rate(url, jobs, batch)).items():
            out[f"pgqueuer{suffix}_b{batch}"] = rate
    out["bare"] = asyncio.run(bare_rate(fresh_database(f"bench_bare_{run}", migrated=False), jobs))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scales", default="10000,1000000")
    args = ap.parse_args()
    print(f"machine: {machine()}")
    urls: dict[int, str] = {}
    for scale in (int(s) for s in args.scales.split(",")):
        urls[scale] = fresh_database(f"bench_queue_{scale}")
        t0 = time.perf_counter()
        asyncio.run(seed(urls[scale], scale, args.jobs))
        print(f"seeded {scale:,} soldiers in {time.perf_counter() - t0:.1f} s")
    rounds = [_run_once(urls, args.jobs, run) for run in range(args.runs)]
    results = {k: median([r[k] for r in rounds]) for k in rounds[0]}
    for key, value in results.items():
        runs = ", ".join(f"{r[key]:.0f}" for r in rounds)
        if key.startswith("bf4ps_"):
            print(f"bf4ps fenced cycles/s at {int(key[6:]):>9,} soldiers, {WORKERS} workers: "
                  f"{value:8.0f}  (runs: {runs})")
        elif key.startswith("pgqueuer_b"):
            batch = key[10:]
            print(f"pgqueuer jobs/s, batch {int(batch):>2}:                      {value:8.0f}  "
                  f"(completions committed; runs: {runs}; to its last handler return: "
                  f"{results[f'pgqueuer_handled_b{batch}']:.0f}; end to end with its "
                  f"shutdown: {results[f'pgqueuer_e2e_b{batch}']:.0f})")
        elif key == "bare":
            print(f"bare fenced cycles/s (3 durable statements, no audit/state): {value:6.0f}  "
                  f"(runs: {runs}; bench/queue_floor.py)")
    scales = list(urls)
    small = results[f"bf4ps_{scales[0]}"]
    if len(scales) > 1:
        print(f"ratio bf4ps {scales[-1]:,}/{scales[0]:,}: "
              f"{results[f'bf4ps_{scales[-1]}'] / small:.2f} (target ≥ 0.67, i.e. within 1.5×)")
    print(f"ratio bf4ps/pgqueuer batch 10: {small / results['pgqueuer_b10']:.2f} (target ≥ 1.0; "
          f"end to end: {small / results['pgqueuer_e2e_b10']:.2f})")
    print(f"ratio bf4ps/pgqueuer batch 1:  {small / results['pgqueuer_b1']:.2f} "
          f"(end to end: {small / results['pgqueuer_e2e_b1']:.2f})")
    print(f"ratio bare/pgqueuer batch 10:  {results['bare'] / results['pgqueuer_b10']:.2f} "
          f"(the floor of three durable transactions per job); "
          f"bf4ps/bare: {small / results['bare']:.2f} (the audit and state writes)")


if __name__ == "__main__":
    main()
