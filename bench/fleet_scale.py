"""Fleet scale on one primary: N virtual egresses, each with its own egress gate (paced at
--interval, 0.36 s = 10,000 requests an hour) and --loops collector loops, all in a few
processes, running the product's cycle against one database; per cycle the database's CPU, WAL
bytes and commits, and a projection for 8 / 100 / 1,000 egresses.

A loop is a registered collector doing what a collector does per request, with the product's
own calls (bench/queue_meter.py's product shape): the count of its claimed job in a slot of its
egress's gate (the connect lead before it, the fleet budget summed: real gates, real budget),
a wait until the slot, the start, and the fenced success that writes a real detailed-stats
payload and claims the next job on the server. The Battlelog answer is instant: the captured
answer (a real capture, tests/captures.py), parsed once, stands for it — the database sees the same
writes as behind a real request. The loops share a small pool per process (a connection is
held only for a statement), so hundreds of loops need a few dozen sessions.

Figures over the measured window (after a warm-up): cycles (fenced successes), the server's CPU
(postmaster and all its children, psutil), pg_stat_wal's WAL bytes, the database's commits.
The largest N one database core sustains at the product's rate is 1 core / (DB CPU per cycle ×
cycles/s per egress); beside it, whether this run's N was sustained (cycles/s ≥ 90 % of the most
the gates and the connect lead allow: a loop's next slot is at least the connect lead away).

usage: python -m bench.fleet_scale [--egresses 40] [--loops 3] [--procs 2] [--seconds 30]
       [--warmup 10] [--interval 0.36] [--no-budget] [--ledger-hour] [--budget-binds] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from bench import queue_meter
from bench.common import fresh_database, machine
from bf4ps.battlelog.parse_detailed import parse_detailed
from bf4ps.collector.identity import Wanted, register
from bf4ps.db.connect import Conn, connection, open_pool, with_dbname
from bf4ps.domain import Lane, Resource
from bf4ps.gates import admission
from bf4ps.policy import Policy
from bf4ps.queue import claim as qclaim
from bf4ps.queue import finalize
from bf4ps.queue.jobs import ClaimedJob, CollectorRef
from bf4ps.settings import SendTimings
from bf4ps.stats.store import writer_for

POOL_PER_PROC = 12
EGRESSES_PROJECTED = (8, 100, 1000)


def gate(interval: float) -> SendTimings:
    return SendTimings(seed_interval=interval, margin=0.0, lease_seconds=60)


# an hour of the fleet's requests, as the ledger holds them in steady state (--ledger-hour)
LEDGER_HOUR = (
    "INSERT INTO request_ledger (slot_at, counted_at, egress_key, budget_class, resource) "
    "SELECT t, t, 'eg-' || (1 + g %% %(egresses)s), 'bootstrap', 'detailed' "
    "FROM generate_series(1, %(rows)s) g, "
    "LATERAL (SELECT now() - make_interval(secs => 3600.0 * g / %(rows)s)) s(t)")


async def seed(url: str, egresses: int, interval: float, jobs: int, *, budget: bool,
               ledger_rows: int, binds: bool = False) -> None:
    from bench import queue_cycle

    await queue_cycle.seed(url, jobs, jobs)
    await queue_cycle.add_jobs(url, jobs, jobs)
    async with connection(url) as conn:
        await conn.execute(
            "INSERT INTO egress_gates (egress_key, min_interval_seconds) SELECT 'eg-' || g, "
            "%s FROM generate_series(1, %s) g ON CONFLICT (egress_key) DO NOTHING",
            [interval, egresses])
        if budget:  # a budget that never binds: admission still counts the window's requests;
            # one that binds (--budget-binds) is the hour's ledger less one request an egress:
            # the window is full from the start and every admission also finds the k-th
            # newest counted slot, its slot a fraction of a second later than the gate's
            await conn.execute("UPDATE fleet_budget SET requests = %s, window_seconds = 3600",
                               [ledger_rows - egresses if binds else 1_000_000_000])
        if ledger_rows:
            await conn.execute(LEDGER_HOUR, {"egresses": egresses, "rows": ledger_rows})
            await conn.execute("VACUUM ANALYZE request_ledger")


async def register_all(url: str, egresses: int, loops: int) -> list[CollectorRef]:
    data_dir = Path(tempfile.mkdtemp(prefix="bf4ps-fleet-scale-"))
    async with connection(url) as conn:
        return [await register(conn, data_dir, Wanted(f"v{e}-{i}", f"host-{e}",
                                                      Lane.BACKGROUND, f"eg-{e}", None,
                                                      "bench"))
                for e in range(1, egresses + 1) for i in range(loops)]


async def _wait_until(at: datetime) -> None:
    await asyncio.sleep(max(0.0, (at - datetime.now(UTC)).total_seconds()))


async def _admit(pool: AsyncConnectionPool[Conn], me: CollectorRef, cfg: SendTimings,
                 held: ClaimedJob | None, slot: admission.Slot | None
                 ) -> admission.Admitted | admission.Wait:
    if held is not None and slot is not None:  # counted by the success that claimed it
        return admission.Admitted(held, slot)
    async with pool.connection() as conn:
        if held is not None:
            return await admission.count_claimed(conn, me, cfg, held)
        return await admission.admit(conn, me, cfg)


async def loop(pool: AsyncConnectionPool[Conn], me: CollectorRef, cfg: SendTimings,
               parsed: Any, size: int, stop_at: float, done: Any) -> None:
    """One collector: count (or look, claim and count), wait for the slot, start, succeed."""
    held: ClaimedJob | None = None
    slot: admission.Slot | None = None
    policy = Policy()
    then = finalize.NextClaim(me.lane, cfg.lease_seconds,
                              gate=cfg)
    while time.monotonic() < stop_at:
        adm = await _admit(pool, me, cfg, held, slot)
        held = slot = None
        if not isinstance(adm, admission.Admitted):
            await _wait_until(adm.until or datetime.now(UTC))
            await asyncio.sleep(0.05 if adm.until else cfg.idle_poll)
            continue
        await _wait_until(adm.slot_at)
        async with pool.connection() as conn:
            if await qclaim.start(conn, adm.job, cfg.lease_seconds, adm.slot_at) is None:
                continue
            out = await finalize.succeed(
                conn, me, adm.job, finalize.Attempt(200, 1, {"bytes": size}), policy,
                writer_for(Resource.DETAILED, parsed), then=then)
        with done.get_lock():
            done.value += int(out.committed)
        held, slot = out.next_job, admission.counted_next(out)


async def _proc_main(url: str, refs: list[CollectorRef], interval: float, stop_at: float,
                     done: Any) -> None:
    payload = queue_meter.DETAILED.read_bytes()
    parsed = parse_detailed(payload)
    pool = await open_pool(url, max_size=POOL_PER_PROC, min_size=POOL_PER_PROC,
                           check_idle_after=1.0)  # as the website: a busy pool checks none
    try:
        await asyncio.gather(*(loop(pool, me, gate(interval), parsed, len(payload), stop_at,
                                    done) for me in refs))
    finally:
        await pool.close()


def proc_main(url: str, refs: list[CollectorRef], interval: float, wall_stop: float,
              done: Any) -> None:
    stop_at = time.monotonic() + (wall_stop - time.time())
    asyncio.run(_proc_main(url, refs, interval, stop_at, done))


def reading(admin_url: str, dbname: str, backend_pid: int) -> dict[str, float]:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_force_next_flush()")
        row = conn.execute(
            "SELECT xact_commit, (SELECT wal_bytes FROM pg_stat_wal) FROM pg_stat_database "
            "WHERE datname = %s", [dbname]).fetchone()
    assert row is not None
    cpu = queue_meter.cpu_of(queue_meter.server_processes(backend_pid))
    return {"commits": float(row[0]), "wal_bytes": float(row[1]), "server_cpu": cpu,
            "t": time.monotonic()}


def run(egresses: int, loops: int, procs: int, seconds: float, warmup: float,
        interval: float, *, budget: bool = True, ledger_hour: bool = False,
        binds: bool = False) -> dict[str, float]:
    url = fresh_database("bench_fleet_scale")
    dbname = "bench_fleet_scale"
    admin = with_dbname(url, "postgres")
    rate = min(loops / gate(interval).connect_lead, 1 / interval)  # what one egress can do
    jobs = int(egresses * rate * (seconds + warmup) * 1.3) + 1000
    with psycopg.connect(admin, autocommit=True) as conn:
        # as queue_meter: a checkpoint before the seed, so the cycles' first touch of a page
        # needs no full-page image and none falls in the window (production's checkpoints
        # every few minutes add full-page images on top: see bench/RESULTS.md)
        conn.execute("CHECKPOINT")
    ledger_rows = int(egresses / interval * 3600) if ledger_hour else 0
    asyncio.run(seed(url, egresses, interval, jobs, budget=budget, ledger_rows=ledger_rows,
                     binds=binds))
    refs = asyncio.run(register_all(url, egresses, loops))
    with psycopg.connect(admin, autocommit=True) as conn:
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert pid is not None
        backend = int(pid[0])
        ctx = mp.get_context("spawn")
        done = ctx.Value("q", 0)
        wall_stop = time.time() + warmup + seconds + 5
        workers = [ctx.Process(target=proc_main, args=(url, refs[i::procs], interval,
                                                       wall_stop, done))
                   for i in range(procs)]
        for w in workers:
            w.start()
        time.sleep(warmup + 5)  # the processes' start (imports, pools) and the warm-up
        before, n0 = reading(admin, dbname, backend), done.value
        time.sleep(seconds)
        after, n1 = reading(admin, dbname, backend), done.value
        for w in workers:
            w.join(60)
    cycles = n1 - n0
    elapsed = after["t"] - before["t"]
    assert cycles > 0, "no cycle in the window"
    per = {k: (after[k] - before[k]) / cycles for k in ("commits", "wal_bytes", "server_cpu")}
    return {"egresses": egresses, "loops": loops, "budget": float(budget),
            "ledger_rows": ledger_rows, "cycles_per_s": cycles / elapsed,
            "offered_per_s": egresses * rate, "per_egress_per_s": cycles / elapsed / egresses,
            "commits_per_cycle": per["commits"], "wal_bytes_per_cycle": per["wal_bytes"],
            "server_cpu_ms_per_cycle": per["server_cpu"] * 1000,
            "server_cores": (after["server_cpu"] - before["server_cpu"]) / elapsed}


def projection(r: dict[str, float], per_egress: float) -> list[dict[str, float]]:
    """DB cores, WAL a day and commits/s for fleets at `per_egress` cycles/s each."""
    rows = []
    for n in EGRESSES_PROJECTED:
        cps = n * per_egress
        rows.append({"egresses": n, "cycles_per_s": cps,
                     "db_cores": cps * r["server_cpu_ms_per_cycle"] / 1000,
                     "wal_gb_per_day": cps * r["wal_bytes_per_cycle"] * 86400 / 1e9,
                     "commits_per_s": cps * r["commits_per_cycle"]})
    return rows


def report(r: dict[str, float], per_egress: float) -> None:
    sustained = r["cycles_per_s"] >= 0.9 * r["offered_per_s"]
    print(f"fleet budget: {'on' if r['budget'] else 'off'}; ledger rows at the start: "
          f"{r['ledger_rows']:,.0f}")
    print(f"{r['egresses']:.0f} egresses × {r['loops']:.0f} loops: {r['cycles_per_s']:.1f} "
          f"cycles/s of {r['offered_per_s']:.1f} the gates allow "
          f"({'sustained' if sustained else 'NOT sustained'}); the server used "
          f"{r['server_cores']:.2f} cores")
    print(f"per cycle: DB CPU {r['server_cpu_ms_per_cycle']:.2f} ms, WAL "
          f"{r['wal_bytes_per_cycle']:,.0f} B, commits {r['commits_per_cycle']:.2f}")
    per_core = 1000 / (r["server_cpu_ms_per_cycle"] * per_egress)
    print(f"largest N per DB core at {per_egress:.2f} cycles/s per egress: {per_core:.0f} "
          f"egresses ({1000 / r['server_cpu_ms_per_cycle']:.0f} cycles/s)")
    print("projection (egresses, cycles/s, DB cores, WAL GB/day, commits/s):")
    for row in projection(r, per_egress):
        print(f"  {row['egresses']:>5.0f} {row['cycles_per_s']:>8.0f} {row['db_cores']:>7.2f} "
              f"{row['wal_gb_per_day']:>9.0f} {row['commits_per_s']:>9.0f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--egresses", type=int, default=40)
    ap.add_argument("--loops", type=int, default=3, help="collector loops per egress")
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=10.0)
    ap.add_argument("--interval", type=float, default=0.36,
                    help="each egress's gate interval (0.36 s: 10,000 requests an hour)")
    ap.add_argument("--no-budget", action="store_true",
                    help="no fleet budget (admission then counts no window)")
    ap.add_argument("--ledger-hour", action="store_true",
                    help="the request ledger filled first with an hour of the fleet's "
                         "requests at this pacing (egresses / interval × 3600 rows): the "
                         "steady state the budget's window count meets in production")
    ap.add_argument("--budget-binds", action="store_true",
                    help="with --ledger-hour: a fleet budget of the hour's rows less one an "
                         "egress, so the window is full and every admission finds the k-th "
                         "newest counted slot (the budget binding, as in production)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("BF4PS_BENCH_DIR", str(Path(tempfile.gettempdir()) / "bf4ps-fleet"))
    print(f"machine: {machine()}")
    r = run(args.egresses, args.loops, args.procs, args.seconds, args.warmup, args.interval,
            budget=not args.no_budget, ledger_hour=args.ledger_hour,
            binds=args.budget_binds and args.ledger_hour)
    print(f"machine after: {machine()}")
    per_egress = 1 / args.interval  # the product's rate at this pacing (10,000/h at 0.36 s)
    if args.json:
        print(json.dumps({**r, "projection": projection(r, per_egress)}))
    report(r, per_egress)


if __name__ == "__main__":
    main()
