"""Fenced cycles per second (8 workers) of the engine, at 10k and 1M soldiers, against two
others on the same server: `bare1` (bench/queue_floor.py: one fenced durable commit per job and
no audit, the queue-cycle study's unaudited floor) and pgqueuer at batch 10. Each round runs
bare1, the engine and pgqueuer b10 with the engine in the middle, the order reversed every other
round (with --checkpoint a CHECKPOINT before each run); the ratios engine/bare1 and
engine/pgqueuer b10 are taken inside each round and the medians of the rounds printed on lines
that start with `ratio`. Beside them (information; --no-extras leaves them out) the bare floor of
three durable transactions per job and pgqueuer at batch 1. Then the per-cycle meter
(bench/queue_meter.py): round trips, commits, WAL bytes, event rows and client/server CPU for
the bench's cycle and for the product's.

The bench's cycle has no gate: the slot is open at once, so a claim starts its job and each
fenced success claims and starts the next in the same call (queue_succeed, migration 0014).

usage: python -m bench.queue_cycle [--jobs 10000] [--runs 6] [--scales 10000,1000000]
       [--meter-cycles 500] [--checkpoint] [--no-extras]
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


FRESH_UP_TO = 100_000  # soldiers: a database seeded anew for each engine run up to this scale


def _engine_run(url: str, scale: int, jobs: int, run: int) -> float:
    """One engine run, like bare1's and pgqueuer's on a database of its own (seeded anew, not
    timed) up to FRESH_UP_TO soldiers; a larger scale reuses the one seeded at the start, whose
    event log, dead rows and collectors grow from run to run (seeding it takes minutes)."""
    if scale <= FRESH_UP_TO:
        url = fresh_database(f"bench_queue_{scale}_{run}")
        asyncio.run(seed(url, scale, jobs))
    return asyncio.run(ours(url, scale, min(jobs, scale)))


def _engines(urls: dict[int, str], jobs: int, run: int = 0) -> dict[str, Callable[[], float]]:
    return {f"bf4ps_{scale}": (lambda u=url, s=scale: _engine_run(u, s, jobs, run))
            for scale, url in urls.items()}


def _bare(jobs: int, run: int, *, one_commit: bool) -> float:
    name = f"bench_bare{1 if one_commit else 3}_{run}"
    return asyncio.run(bare_rate(fresh_database(name, migrated=False), jobs,
                                 one_commit=one_commit))


def _timed(name: str, contender: Callable[[], float], out: dict[str, float]) -> None:
    if CHECKPOINTS[0]:
        checkpoint()
    out[name] = contender()


def _run_once(urls: dict[int, str], jobs: int, run: int, extras: bool) -> dict[str, float]:
    """One round: bare1, the engine (each scale) and pgqueuer batch 10, the engine in the
    middle so it runs next to each of the others, the order reversed every other round (so
    each of them runs before the engine in half the rounds and after it in the other half).
    Ratios are taken inside the round. With `extras`, then the bare three-commit floor and
    pgqueuer batch 1 (information only)."""
    out: dict[str, float] = {}
    order: list[tuple[str, Callable[[], float]]] = [
        ("bare1", lambda: _bare(jobs, run, one_commit=True)),
        *_engines(urls, jobs, run).items(),
        ("pgq10", lambda: _pgq(jobs, 10, str(run))[""])]
    for name, contender in order if run % 2 == 0 else reversed(order):
        _timed(name, contender, out)
    for name in _engines(urls, jobs):
        out[f"{name}/bare1"] = out[name] / out["bare1"]
        out[f"{name}/pgq10"] = out[name] / out["pgq10"]
    out["bare1/pgq10"] = out["bare1"] / out["pgq10"]
    if extras:
        _timed("bare", lambda: _bare(jobs, run, one_commit=False), out)
        _timed("pgq1", lambda: _pgq(jobs, 1, str(run))[""], out)
    return out


TARGETS = {"bare1": 0.40, "pgq10": 0.5}  # issue 32: engine ≥ 0.40× bare1, ≥ 0.5× pgqueuer b10
LABELS = {"bf4ps": "bf4ps fenced cycles/s", "bare1": "bare1 fenced cycles/s (1 durable "
          "commit per job, no audit/state)", "bare": "bare fenced cycles/s (3 durable "
          "commits per job, no audit/state)", "pgq10": "pgqueuer jobs/s, batch 10 "
          "(completions committed)", "pgq1": "pgqueuer jobs/s, batch  1 (completions "
          "committed)"}


def _print_rates(rounds: list[dict[str, float]], names: list[str]) -> None:
    for name in names:
        if name not in rounds[0]:
            continue
        label = (f"{LABELS['bf4ps']} at {int(name[6:]):>9,} soldiers" if name.startswith(
            "bf4ps_") else LABELS[name])
        runs = ", ".join(f"{r[name]:.0f}" for r in rounds)
        who = "one queue manager" if name.startswith("pgq") else f"{WORKERS} workers"
        print(f"{label}, {who}: {median([r[name] for r in rounds]):8.0f}  "
              f"(runs: {runs})")


def _print_ratios(rounds: list[dict[str, float]], engines: list[str]) -> None:
    n = len(rounds)
    for name in engines:
        for other in ("bare1", "pgq10"):
            key = f"{name}/{other}"
            pairs = ", ".join(f"{r[key]:.2f}" for r in rounds)
            print(f"ratio {key}, median of {n} alternating pairs: "
                  f"{statistics.median(r[key] for r in rounds):.2f} (target ≥ "
                  f"{TARGETS[other]:.2f})  (pairs: {pairs})")
    pairs = ", ".join(f"{r['bare1/pgq10']:.2f}" for r in rounds)
    print(f"ratio bare1/pgq10, median of {n} pairs: "
          f"{statistics.median(r['bare1/pgq10'] for r in rounds):.2f} (information)  "
          f"(pairs: {pairs})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=6,
                    help="rounds; each gives one pair per ratio (≥ 6 for the issue's medians)")
    ap.add_argument("--scales", default="10000,1000000")
    ap.add_argument("--meter-cycles", type=int, default=500)
    ap.add_argument("--checkpoint", action="store_true",
                    help="a CHECKPOINT before every run: full-page images then fall on every "
                         "page each run touches first (at 1M soldiers, nearly every one)")
    ap.add_argument("--no-extras", action="store_true",
                    help="leave out the bare three-commit floor and pgqueuer batch 1")
    args = ap.parse_args()
    CHECKPOINTS[0] = args.checkpoint
    print(f"machine: {machine()}")
    urls: dict[int, str] = {}
    for scale in (int(s) for s in args.scales.split(",")):
        urls[scale] = fresh_database(f"bench_queue_{scale}")
        t0 = time.perf_counter()
        asyncio.run(seed(urls[scale], scale, args.jobs))
        print(f"seeded {scale:,} soldiers in {time.perf_counter() - t0:.1f} s")
    rounds = [_run_once(urls, args.jobs, run, not args.no_extras) for run in range(args.runs)]
    print(f"machine after the runs: {machine()}")
    engines = list(_engines(urls, args.jobs))
    _print_rates(rounds, [*engines, "bare1", "pgq10", "bare", "pgq1"])
    _print_ratios(rounds, engines)
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
