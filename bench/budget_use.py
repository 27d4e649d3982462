"""Budget use at the wire: per-egress pacing and the fleet budget, counted by the simulator.

A: 8 collectors, 4 sharing one egress and 4 on their own (5 egresses), pacing binding
   (5 s per egress, production's value): achieved / allowed rate per egress.
B: the same fleet on a 1 s pacing, with a fleet budget tighter than the egresses allow:
   achieved / budget rate, and the fullest rolling window.
Both: rate-limit violations the simulator saw (target 0) and achieved ≥ 98 % of the binding
limit.  usage: python -m bench.budget_use [--seconds 150]
"""

from __future__ import annotations

import argparse
import math
import time

from bench.common import machine
from bench.fleetrun import Collectors, database, run, seed, sim_stats, start_sim


def fleet(c: Collectors) -> None:
    for i in range(4):
        c.start(f"shared-{i}", "egress-a", "127.0.0.2")
    for i in range(4):
        c.start(f"own-{i}", f"egress-{i}", f"127.0.0.{3 + i}")


def per_ip_ratio(stats: dict, interval: float) -> dict[str, float]:  # type: ignore[type-arg]
    out = {}
    for ip, per in stats["by_ip"].items():
        span = per["last_at"] - per["first_at"]
        if per["count"] > 1 and span > 0:
            out[ip] = (per["count"] - 1) / span * interval
    return out


def scenario_a(seconds: float) -> None:
    url = database("bench_budget_a")
    run(seed(url, 5000))
    sim = start_sim(speed=1.0, min_interval=5.0)
    c = Collectors(url, sim.base_url, {"BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "5",
                                       "BF4PS_EGRESS_SAFETY_MARGIN_SECONDS": "0.05"})
    fleet(c)
    time.sleep(seconds)
    codes = c.stop()
    stats = sim_stats(sim)
    sim.stop()
    ratios = per_ip_ratio(stats, 5.0)
    print(f"A  per-egress pacing 5 s, {seconds:.0f} s, exit codes {sorted(set(codes))}")
    for ip, r in sorted(ratios.items()):
        print(f"   {ip}: {stats['by_ip'][ip]['count']:4d} requests, achieved/allowed {r:.3f}, "
              f"min spacing {stats['by_ip'][ip]['min_spacing_seconds']:.3f} s")
    print(f"   median achieved/allowed {sorted(ratios.values())[len(ratios) // 2]:.3f} "
          f"(target ≥ 0.98); violations {stats['violations']['total']} (target 0)")


def scenario_b(seconds: float) -> None:
    n, w = 60, 30.0
    url = database("bench_budget_b")
    run(seed(url, 5000))
    sim = start_sim(speed=5.0, min_interval=1.0, fleet_budget=n, fleet_window=w)
    c = Collectors(url, sim.base_url, {
        "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "1", "BF4PS_EGRESS_SAFETY_MARGIN_SECONDS": "0.05",
        "BF4PS_FLEET_BUDGET_REQUESTS": str(n), "BF4PS_FLEET_BUDGET_WINDOW_SECONDS": str(w)})
    fleet(c)
    time.sleep(seconds)
    codes = c.stop()
    stats = sim_stats(sim)
    sim.stop()
    first = min(p["first_at"] for p in stats["by_ip"].values())
    last = max(p["last_at"] for p in stats["by_ip"].values())
    total = stats["requests_total"]
    # the most any sender could have sent over this span under "N per rolling W"
    allowed = n * math.ceil((last - first) / w)
    ratio = total / allowed
    print(f"B  fleet budget {n} per {w:.0f} s (egresses could do {5 * w:.0f}), {seconds:.0f} s, "
          f"exit codes {sorted(set(codes))}")
    print(f"   {total} requests, achieved/budget {ratio:.3f} (target ≥ 0.98), fullest window "
          f"{stats['fleet']['max_in_window']} of {n}; fleet violations "
          f"{stats['fleet']['violations']}, per-IP violations {stats['violations']['total']} "
          "(targets 0)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=150)
    args = ap.parse_args()
    print(f"machine: {machine()}")
    scenario_a(args.seconds)
    scenario_b(args.seconds)


if __name__ == "__main__":
    main()
