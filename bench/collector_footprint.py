"""A collector's footprint on a BF4SW host: RSS and CPU while working, CPU while idle.

Working: one collector with plenty of weapons/vehicles/detailed work against the simulator at
realistic latency (weapons ≈ 586 KB, ≈ 1.3 s) and 5 s pacing. Idle: the same process with no
work. Targets: RSS < 80 MB while working; idle CPU near 0 %.
usage: python -m bench.collector_footprint [--seconds 60]
"""

from __future__ import annotations

import argparse
import time

import psutil

from bench.common import machine
from bench.fleetrun import Collectors, database, run, seed, sim_stats, start_sim
from bf4ps.db.connect import connection


def sample(proc: psutil.Process, seconds: float) -> tuple[float, float]:
    """(CPU % over the period, max RSS MB seen)."""
    cpu0 = proc.cpu_times()
    t0 = time.monotonic()
    rss = 0.0
    while time.monotonic() - t0 < seconds:
        rss = max(rss, proc.memory_info().rss / 2**20)
        time.sleep(0.5)
    cpu1 = proc.cpu_times()
    used = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    return 100 * used / (time.monotonic() - t0), rss


async def clear(url: str) -> None:
    async with connection(url) as conn:
        await conn.execute("DELETE FROM collection_jobs WHERE status = 'pending'")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=60)
    args = ap.parse_args()
    print(f"machine: {machine()}")
    url = database("bench_footprint")
    run(seed(url, 200, resources=("weapons", "vehicles", "detailed")))
    sim = start_sim(speed=1.0, min_interval=5.0)
    c = Collectors(url, sim.base_url, {"BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "5"})
    pid = c.start("footprint-01", "egress-f", "127.0.0.40")
    proc = psutil.Process(pid)
    time.sleep(5)
    cpu, rss = sample(proc, args.seconds)
    done = sim_stats(sim)["requests_total"]
    print(f"working: {done} requests served, CPU {cpu:.1f} % of one core, max RSS {rss:.1f} MB "
          "(target < 80 MB)")
    run(clear(url))
    time.sleep(8)  # the job in flight finishes
    cpu, rss = sample(proc, args.seconds / 2)
    print(f"idle:    CPU {cpu:.2f} % of one core, RSS {rss:.1f} MB (target: near 0 %)")
    c.stop()
    sim.stop()


if __name__ == "__main__":
    main()
