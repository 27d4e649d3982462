"""Forecast accuracy, end to end: a fleet (a real scheduler and collector processes) on the
Battlelog simulator, speeded up (short gate intervals, simulator latency divided by --speed),
runs a population's `detailed` bootstrap to completion. When coverage passes 10 %, 25 % and
50 % the forecast (the same code as `bf4ps forecast`, measured over the run so far) predicts
the completion time; each prediction is compared with the actual completion (error relative to
the time that was still to go when it was made, and to the whole run). Then, in steady state
(every soldier active, detailed refreshed every --freshness seconds), the forecast's demand is
compared with the request rate the simulator counts over one freshness period after the
bootstrap (every soldier is refreshed exactly once in it when the bootstrap took less than one
period). Bars: +-15 % each. Prints figures, asserts nothing.

Run: ``python -m bench.forecast_accuracy [--soldiers 600] [--collectors 3] [--interval 0.25]
      [--freshness 240] [--speed 10]``
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from bench.common import machine
from bench.fleetrun import Collectors, database, sim_stats, start_sim
from bf4ps.db.connect import connection
from bf4ps.sim.battlelog.server import SimProcess
from bf4ps.views import forecast_inputs
from bf4ps.views.forecast import Forecast, forecast

MARKS = (0.10, 0.25, 0.50)


@dataclass
class Taken:
    mark: float
    at: float  # monotonic
    wall: datetime
    predicted: datetime | None


async def seed(url: str, n: int, freshness: float) -> None:
    """n active soldiers (seen now, first seen a month ago: none new), detailed only."""
    async with connection(url) as conn:
        await conn.execute(
            "INSERT INTO soldiers (persona_id, platform, current_name, first_seen_at, "
            "last_seen_at) SELECT 1600000000 + g, 'pc', 'F' || g, now() - interval '30 days', "
            "now() FROM generate_series(1, %(n)s) g", {"n": n})
        await conn.execute(
            "INSERT INTO collection_state (soldier_id, resource, activity_class, activity_at) "
            "SELECT soldier_id, 'detailed', 'active', last_seen_at FROM soldiers")
        for key, value in (("freshness_detailed_seconds", str(freshness)),
                           ("backoff_seconds", "[10, 20, 40, 80]"),
                           ("working_set_background", "40")):
            await conn.execute("INSERT INTO scheduler_policy (key, value) VALUES (%s, %s)",
                               [key, value])


async def coverage(url: str) -> tuple[int, int]:
    async with connection(url) as conn:
        cur = await conn.execute(
            "SELECT coalesce(sum(n) FILTER (WHERE status = 'never_attempted'), 0) AS left, "
            "coalesce(sum(n), 0) AS total FROM coverage_totals WHERE resource = 'detailed'")
        row = await cur.fetchone()
        assert row is not None
        return int(row["left"]), int(row["total"])


async def take(url: str, window: float) -> Forecast:
    async with connection(url) as conn:
        return forecast(await forecast_inputs.load(conn, window))


def scheduler(env: dict[str, str], log_path: str) -> subprocess.Popen[bytes]:
    log = open(log_path, "wb")  # noqa: SIM115 - lives with the process
    return subprocess.Popen([sys.executable, "-m", "bf4ps.cli.main", "scheduler", "run"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)


async def bootstrap(url: str, start: float, timeout: float) -> tuple[list[Taken], float]:
    taken: list[Taken] = []
    marks = list(MARKS)
    while time.monotonic() - start < timeout:
        left, total = await coverage(url)
        done = 1 - left / total
        if marks and done >= marks[0]:
            fc = await take(url, max(60.0, time.monotonic() - start))
            taken.append(Taken(marks.pop(0), time.monotonic(), datetime.now(UTC),
                               fc.bootstrap[0].at))
        if left == 0:
            return taken, time.monotonic()
        await asyncio.sleep(0.5)
    raise RuntimeError("the bootstrap did not complete in time")


def report_bootstrap(taken: list[Taken], start: float, done: float, wall_done: datetime) -> None:
    print(f"bootstrap completed in {done - start:.1f} s")
    for t in taken:
        if t.predicted is None:
            print(f"  at {100 * t.mark:.0f} %: no completion predicted")
            continue
        error = (t.predicted - wall_done).total_seconds()
        to_go = done - t.at
        print(f"  at {100 * t.mark:.0f} % ({t.at - start:.1f} s in): predicted "
              f"{t.predicted:%H:%M:%S}, actual {wall_done:%H:%M:%S}: error {error:+.1f} s = "
              f"{100 * error / to_go:+.1f} % of the time still to go, "
              f"{100 * error / (done - start):+.1f} % of the run (bar: +-15 %)")


async def steady(url: str, sim: SimProcess, freshness: float, start: float) -> None:
    """The forecast's detailed demand beside the simulator's own count (what crossed the
    wire) over one freshness period."""
    fc = await take(url, max(60.0, time.monotonic() - start))
    predicted = sum(d.requests_per_hour for d in fc.demand if d.resource == "detailed")
    cost = fc.inputs.costs["detailed"]
    print(f"steady-state forecast: {predicted:,.0f} requests/h for detailed "
          f"({fc.inputs.population.active.value:.0f} active soldiers every {freshness:.0f} s, "
          f"{cost.requests_per_attempt.value:.3f} requests/attempt, "
          f"{100 * cost.success_share.value:.1f} % succeed)")
    first = int(sim_stats(sim)["requests_total"])
    t0 = time.monotonic()
    await asyncio.sleep(freshness)
    sent = int(sim_stats(sim)["requests_total"]) - first
    measured = sent * 3600 / (time.monotonic() - t0)
    print(f"measured at the simulator over {time.monotonic() - t0:.0f} s: {sent} requests = "
          f"{measured:,.0f} requests/h; forecast error {100 * (predicted / measured - 1):+.1f} % "
          f"(bar: +-15 %)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--soldiers", type=int, default=600)
    ap.add_argument("--collectors", type=int, default=3)
    ap.add_argument("--interval", type=float, default=0.25, help="gate interval, seconds")
    ap.add_argument("--freshness", type=float, default=240.0, help="detailed refresh, s")
    ap.add_argument("--speed", type=float, default=10.0, help="simulator speed (latency / x)")
    ap.add_argument("--faults", type=float, default=0.02, help="missing generalStats share")
    args = ap.parse_args()
    print(f"machine: {machine()}")
    url = database("bf4ps_bench_forecast")
    asyncio.run(seed(url, args.soldiers, args.freshness))
    sim = start_sim(speed=args.speed, min_interval=args.interval,
                    fault_missing_general=args.faults)
    fleet = Collectors(url, sim.base_url, {
        "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": str(args.interval),
        "BF4PS_EGRESS_SAFETY_MARGIN_SECONDS": "0.05", "BF4PS_HEARTBEAT_SECONDS": "1",
        "BF4PS_IDLE_POLL_SECONDS": "0.3", "BF4PS_CLAIM_HORIZON_SECONDS": "0.5",
        "BF4PS_SCHEDULER_TICK_SECONDS": "0.5", "BF4PS_SWEEP_SECONDS": "2",
        "BF4PS_HISTORY_RECORD_SECONDS": "5", "BF4PS_BF4SW_SYNC_SECONDS": "86400"})
    sched = scheduler(fleet.env, str(fleet.dir / "scheduler.log"))
    try:
        start = time.monotonic()
        for i in range(args.collectors):
            fleet.start(f"fc-{i}", f"fc-egress-{i}", f"127.0.0.{20 + i}")
        taken, done = asyncio.run(bootstrap(url, start, timeout=1800))
        report_bootstrap(taken, start, done, datetime.now(UTC))
        if done - start > args.freshness:
            print(f"  note: the bootstrap took longer than --freshness ({args.freshness:.0f} s): "
                  "refreshes overlapped it; the steady-state window is not one clean period")
        asyncio.run(steady(url, sim, args.freshness, start))
        stats = sim_stats(sim)
        print(f"simulator: {stats['requests_total']} requests, violations "
              f"{stats['violations']['total']}")
    finally:
        fleet.stop()
        sched.terminate()
        sched.wait(60)
        sim.stop()


if __name__ == "__main__":
    main()
