"""Fenced cycles per second (8 workers) at 10k and 1M soldiers, each contender paired with a
pgqueuer batch-10 run of its own on the same server (directly before or after it, the order
flipping every round; with --checkpoint a CHECKPOINT before each run), the ratio taken inside
each pair and the median of the pairs reported; beside them pgqueuer at batch 1 and the bare
floor of three durable transactions per job (bench/queue_floor.py). Then the per-cycle meter
(bench/queue_meter.py): round trips, commits, WAL bytes, event rows and client/server CPU for
the bench's cycle and for the product's.

The bench's cycle has no gate: the slot is open at once, so a claim starts its job and each
fenced success claims and starts the next in the same call (queue_succeed, migration 0014).

usage: python bench/queue_cycle.py [--jobs 10000] [--runs 3] [--scales 10000,1000000]
       [--meter-cycles 500] [--checkpoint]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from tempfile import mkdtemp
from typing import Any

import psycopg

from bench import queue_meter
from bench.common import fresh_database, machine, median, server_url
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
    """One collector: claim (started at once: no gate), then each fenced success claims and
    starts the next job in the same call, until the queue is empty."""
    done = 0
    then = finalize.NextClaim(me.lane, 60, start=True)
    async with connection(url) as conn:
        job = await qclaim.claim(conn, me, 60, start=True)
        while job is not None:
            out = await finalize.succeed(conn, me, job, finalize.Attempt(200, 1), policy,
                                         then=then)
            done += out.committed
            job = out.next_job
    return done


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


def checkpoint() -> None:
    with psycopg.connect(server_url(), autocommit=True) as conn:
        conn.execute("CHECKPOINT")


CHECKPOINTS = [False]  # --checkpoint


def _pgq(jobs: int, batch: int, tag: str) -> dict[str, float]:
    url = fresh_database(f"bench_pgq_{batch}_{tag}", migrated=False)
    if CHECKPOINTS[0]:
        checkpoint()
    return asyncio.run(pgqueuer_rate(url, jobs, batch))


def _contenders(urls: dict[int, str], jobs: int, run: int) -> dict[str, Callable[[], float]]:
    out: dict[str, Callable[[], float]] = {}
    for scale, url in urls.items():
        out[f"bf4ps_{scale}"] = (lambda u=url, s=scale: asyncio.run(ours(u, s, min(jobs, s))))
    out["bare"] = lambda: asyncio.run(bare_rate(
        fresh_database(f"bench_bare_{run}", migrated=False), jobs))
    return out


def _run_once(urls: dict[int, str], jobs: int, run: int) -> dict[str, float]:
    """One round: every contender next to a pgqueuer batch-10 run of its own, the order of the
    two flipping with the round and the contender; the pair's ratio is what counts."""
    out: dict[str, float] = {}
    for i, (name, contender) in enumerate(_contenders(urls, jobs, run).items()):
        first = (run + i) % 2 == 0
        if not first:
            pgq = _pgq(jobs, 10, f"{run}_{i}")
        if CHECKPOINTS[0]:
            checkpoint()
        rate = contender()
        if first:
            pgq = _pgq(jobs, 10, f"{run}_{i}")
        out[name] = rate
        out[f"{name}_pgq10"] = pgq[""]
        out[f"{name}_ratio"] = rate / pgq[""]
        out[f"{name}_ratio_e2e"] = rate / pgq["_e2e"]
    b1 = _pgq(jobs, 1, str(run))
    out["pgqueuer_b1"] = b1[""]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scales", default="10000,1000000")
    ap.add_argument("--meter-cycles", type=int, default=500)
    ap.add_argument("--checkpoint", action="store_true",
                    help="a CHECKPOINT before every run: full-page images then fall on every "
                         "page each run touches first (at 1M soldiers, nearly every one)")
    args = ap.parse_args()
    CHECKPOINTS[0] = args.checkpoint
    print(f"machine: {machine()}")
    urls: dict[int, str] = {}
    for scale in (int(s) for s in args.scales.split(",")):
        urls[scale] = fresh_database(f"bench_queue_{scale}")
        t0 = time.perf_counter()
        asyncio.run(seed(urls[scale], scale, args.jobs))
        print(f"seeded {scale:,} soldiers in {time.perf_counter() - t0:.1f} s")
    rounds = [_run_once(urls, args.jobs, run) for run in range(args.runs)]
    print(f"machine after the runs: {machine()}")

    def runs(key: str, fmt: str = "{:.0f}") -> str:
        return ", ".join(fmt.format(r[key]) for r in rounds)

    names = list(_contenders(urls, args.jobs, 0))
    for name in names:
        label = (f"bf4ps fenced cycles/s at {int(name[6:]):>9,} soldiers" if name != "bare"
                 else "bare fenced cycles/s (3 durable statements, no audit/state)")
        print(f"{label}, {WORKERS} workers: {median([r[name] for r in rounds]):8.0f}  "
              f"(runs: {runs(name)}; its pgqueuer b10 runs: {runs(name + '_pgq10')})")
    pgq10 = [r[f"{n}_pgq10"] for r in rounds for n in names]
    print(f"pgqueuer jobs/s, batch 10: {median(pgq10):8.0f}  (completions committed; median of "
          f"every paired run)")
    print(f"pgqueuer jobs/s, batch  1: {median([r['pgqueuer_b1'] for r in rounds]):8.0f}  "
          f"(completions committed; runs: {runs('pgqueuer_b1')})")
    for name in names:
        ratios = [r[f"{name}_ratio"] for r in rounds]
        target = " (target ≥ 0.9)" if name.startswith("bf4ps") else ""
        print(f"ratio {name} / its pgqueuer batch 10, median of {len(ratios)} pairs: "
              f"{statistics.median(ratios):.2f}{target}  (pairs: {runs(name + '_ratio', '{:.2f}')}"
              f"; against pgqueuer end to end with its shutdown: "
              f"{statistics.median(r[name + '_ratio_e2e'] for r in rounds):.2f})")
    scales = list(urls)
    if len(scales) > 1:
        big, small = (median([r[f"bf4ps_{s}"] for r in rounds]) for s in (scales[-1], scales[0]))
        print(f"ratio bf4ps {scales[-1]:,}/{scales[0]:,}: {big / small:.2f} "
              "(target ≥ 0.67, i.e. within 1.5×)")
    if args.meter_cycles:
        queue_meter.report(queue_meter.run(scales[0], args.meter_cycles), args.meter_cycles,
                           scales[0])


if __name__ == "__main__":
    main()
