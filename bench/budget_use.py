"""Budget use at the wire: per-egress pacing and the fleet budget, counted by the simulator.

A: 8 collectors, 4 sharing one egress and 4 on their own (5 egresses), pacing binding
   (5 s per egress, production's value): achieved / allowed rate per egress.
B: the same fleet on a 1 s pacing, with a fleet budget tighter than the egresses allow:
   achieved / budget rate, and the fullest rolling window.
A and B: rate-limit violations the simulator saw (target 0) and achieved ≥ 98 % of the binding
limit (fair weather: every simulator fault off).
C: scenario A in Battlelog's real weather (its measured fault mix: 5 % of detailed answers
   without generalStats, 0.2 % 5xx, 0.2 % timeouts): ≥ 97 % of the allowed rate on every
   egress, 0 violations; the egress cool-downs it caused, by signal.
usage: python -m bench.budget_use [--seconds 150] [--scenarios ABC]
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

from bench.common import machine
from bench.fleetrun import Collectors, database, run, seed, sim_stats, start_sim
from bf4ps.db.connect import connection

WEATHER = {"fault_missing_general": 0.05, "fault_5xx": 0.002, "fault_timeout": 0.002}


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


def scenario_a(seconds: float, weather: dict[str, float] | None = None) -> None:
    name = "C" if weather else "A"
    url = database(f"bench_budget_{name.lower()}")
    run(seed(url, 5000))
    sim = start_sim(speed=1.0, min_interval=5.0, **(weather or {}))
    c = Collectors(url, sim.base_url, {"BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "5",
                                       "BF4PS_EGRESS_SAFETY_MARGIN_SECONDS": "0.05"})
    fleet(c)
    time.sleep(seconds)
    codes = c.stop()
    stats = sim_stats(sim)
    sim.stop()
    ratios = per_ip_ratio(stats, 5.0)
    print(f"{name}  per-egress pacing 5 s, {seconds:.0f} s, exit codes {sorted(set(codes))}"
          + (f", faults {weather}" if weather else ""))
    for ip, r in sorted(ratios.items()):
        print(f"   {ip}: {stats['by_ip'][ip]['count']:4d} requests, achieved/allowed {r:.3f}, "
              f"min spacing {stats['by_ip'][ip]['min_spacing_seconds']:.3f} s")
    median = sorted(ratios.values())[len(ratios) // 2]
    violations = stats["violations"]["total"]
    if not weather:
        print(f"   median achieved/allowed {median:.3f} (target ≥ 0.98); violations "
              f"{violations} (target 0)")
    else:
        print(f"   lowest egress achieved/allowed {min(ratios.values()):.3f} (target ≥ 0.97 "
              f"each), median {median:.3f}; violations {violations} (target 0)")
        faults = {k: v for k, v in stats["by_outcome"].items() if v and k != "ok"}
        print(f"   answers by fault: {faults}")
        print(f"   cool-downs by signal: {run(cooldowns(url))}")


async def cooldowns(url: str) -> dict[str, Any]:
    """The egress cool-downs of the run by event and signal (gates/throttle.py, outage.py)."""
    async with connection(url) as conn:
        cur = await conn.execute(
            "SELECT event_type || ':' || COALESCE(details->>'signal', '?') AS k, count(*) AS n, "
            "round(sum(COALESCE((details->>'seconds')::numeric, 0)), 1) AS s "
            "FROM collection_events WHERE event_type IN ('egress_throttled', 'egress_cooled') "
            "GROUP BY 1 ORDER BY 1")
        return {row["k"]: f"{row['n']} ({row['s']} s)" for row in await cur.fetchall()}


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
    ap.add_argument("--scenarios", default="ABC")
    args = ap.parse_args()
    print(f"machine: {machine()}")
    if "A" in args.scenarios:
        scenario_a(args.seconds)
    if "B" in args.scenarios:
        scenario_b(args.seconds)
    if "C" in args.scenarios:
        scenario_a(args.seconds, WEATHER)


if __name__ == "__main__":
    main()
