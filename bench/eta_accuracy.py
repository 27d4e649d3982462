"""ETA accuracy of interactive requests, end to end: the Battlelog simulator, one real
interactive collector process, and a stream of submissions (what the website's submit does).
Each request's estimate made at submission (interactive_requests.eta_at) is compared with when
its first Battlelog request was really sent (first_request_at, set by the queue engine), and its
finish estimate (the submission's done_at) with when it was done (finished_at).

Prints the distribution of the error, the share of requests within +-20 % of their wait (the
bar: 80 %), the same with a 1 s floor (a sub-second wait cannot be predicted closer than the
idle collector's poll phase), and the submission -> first request delay of requests that found
the lane idle, beside the gate interval (the bar: <= one interval plus the request in flight).
Prints figures, asserts nothing.

Run: ``python -m bench.eta_accuracy [--requests 40] [--mean-gap 6] [--interval 1.0]
      [--speed 8] [--burst 6]``
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from bench.common import machine
from bench.fleetrun import Collectors, database, start_sim
from bf4ps.db.connect import Conn, connection
from bf4ps.interactive.submit import Limits, submit
from bf4ps.interactive.target import parse_target
from bf4ps.policy import Policy
from bf4ps.settings import SendTimings
from bf4ps.views import request_status
from bf4ps.views.request_status import SubmissionView

BASE = 1_700_000_000


@dataclass
class Row:
    position: int
    eta_s: float  # estimate: eta_at - created_at
    wait_s: float  # actual: first_request_at - created_at
    resources: int
    done_eta_s: float | None = None  # estimate: the submission's done_at - created_at
    done_s: float | None = None  # actual: finished_at - created_at

    @property
    def error_s(self) -> float:
        return self.wait_s - self.eta_s

    def within(self, share: float, floor: float = 0.0) -> bool:
        return abs(self.error_s) <= max(share * self.wait_s, floor)

    @property
    def done_error_s(self) -> float | None:
        if self.done_s is None or self.done_eta_s is None:
            return None
        return self.done_s - self.done_eta_s


async def seed(url: str, n: int) -> None:
    async with connection(url) as conn:
        await conn.execute(
            "INSERT INTO soldiers (persona_id, platform, current_name, first_seen_at, "
            "last_seen_at) SELECT %(base)s + g, 'pc', 'Eta' || g, now() - interval '30 days', "
            "now() - interval '1 day' FROM generate_series(1, %(n)s) g", {"base": BASE, "n": n})
        await conn.execute(
            "INSERT INTO collection_state (soldier_id, resource) SELECT soldier_id, r "
            "FROM soldiers, unnest(ARRAY['detailed','profile','weapons','vehicles']) r")


async def wait_collector(conn: Conn, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        cur = await conn.execute("SELECT count(*) AS n FROM collectors WHERE lane = "
                                 "'interactive' AND health = 'healthy'")
        row = await cur.fetchone()
        if row and row["n"]:
            return
        await asyncio.sleep(0.2)
    raise RuntimeError("the interactive collector did not start")


async def stream(url: str, n: int, mean_gap: float, burst: int,
                 gate: SendTimings) -> dict[UUID, SubmissionView]:
    """Submissions with exponential gaps, and one burst of `burst` at once in the middle;
    returns each request's submission (its queue position and estimates)."""
    rng = random.Random(11)
    policy = Policy()
    subs: dict[UUID, SubmissionView] = {}
    async with connection(url) as conn:
        await wait_collector(conn)
        for i in range(n):
            sub = await submit(conn, parse_target(platform="pc", persona_id=BASE + 1 + i),
                               client_key=f"bench{i}", policy=policy, limits=Limits(1000, 60),
                               gate=gate)
            subs[sub.request_id] = await request_status.submission(conn, sub, gate)
            in_burst = n // 2 <= i < n // 2 + burst - 1
            if not in_burst:
                await asyncio.sleep(rng.expovariate(1 / mean_gap))
    return subs


async def wait_done(url: str, timeout: float) -> None:
    async with connection(url) as conn:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            cur = await conn.execute("SELECT count(*) AS n FROM interactive_requests "
                                     "WHERE status IN ('queued', 'collecting')")
            row = await cur.fetchone()
            if row and not row["n"]:
                return
            await asyncio.sleep(1)


async def rows(url: str, subs: dict[UUID, SubmissionView]) -> list[Row]:
    async with connection(url) as conn:
        cur = await conn.execute(
            "SELECT request_id, created_at, eta_at, first_request_at, finished_at, "
            "cardinality(resources) AS k FROM interactive_requests WHERE eta_at IS NOT NULL "
            "AND first_request_at IS NOT NULL ORDER BY created_at")
        found: list[dict[str, Any]] = await cur.fetchall()
    out = []
    for r in found:
        sub, created = subs.get(r["request_id"]), r["created_at"]
        done_at = sub.estimated_done_at if sub else None
        out.append(Row(
            sub.position or 0 if sub else -1, (r["eta_at"] - created).total_seconds(),
            (r["first_request_at"] - created).total_seconds(), int(r["k"]),
            (done_at - created).total_seconds() if done_at else None,
            (r["finished_at"] - created).total_seconds() if r["finished_at"] else None))
    return out


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def summary(label: str, values: list[float]) -> str:
    if not values:
        return f"{label}: none"
    return (f"{label}: p10 {pct(values, 10):+.2f}  p50 {pct(values, 50):+.2f}  "
            f"p90 {pct(values, 90):+.2f}  min {min(values):+.2f}  max {max(values):+.2f}")


def report(found: list[Row], interval: float) -> None:
    n = len(found)
    print(f"requests compared: {n}")
    if not n:
        return
    print(summary("error, s (actual - estimate; + = later than said)",
                  [r.error_s for r in found]))
    print(summary("actual wait, s", [r.wait_s for r in found]))
    print(summary("relative error (error / wait)",
                  [r.error_s / r.wait_s for r in found if r.wait_s > 0]))
    strict = sum(r.within(0.2) for r in found)
    floor = sum(r.within(0.2, 1.0) for r in found)
    print(f"within +-20 % of the wait: {strict}/{n} = {100 * strict / n:.0f} % (bar: 80 %)")
    print(f"within +-20 % or +-1 s:    {floor}/{n} = {100 * floor / n:.0f} %")
    queued = [r for r in found if r.wait_s > 3 * interval]
    if queued:
        q = sum(r.within(0.2) for r in queued)
        print(f"  requests that waited > 3 intervals: {q}/{len(queued)} within +-20 % "
              f"({100 * q / len(queued):.0f} %)")
    idle = [r for r in found if r.position == 0]
    if idle:
        delays = [r.wait_s for r in idle]
        print(f"submission -> first request, nothing ahead ({len(idle)} requests): "
              f"p50 {pct(delays, 50):.2f} s, p90 {pct(delays, 90):.2f} s, max {max(delays):.2f} s "
              f"(gate interval {interval:.2f} s; bar: <= interval + request in flight)")
    finished = [r for r in found if r.done_error_s is not None and r.done_s]
    if finished:
        errors = [r.done_error_s or 0.0 for r in finished]
        ok = sum(abs(e) <= 0.2 * (r.done_s or 0.0) for e, r in zip(errors, finished, strict=True))
        print(summary("all collected: error, s (actual - estimate)", errors))
        print(f"all collected within +-20 % of the time to done: {ok}/{len(finished)} = "
              f"{100 * ok / len(finished):.0f} % (no bar: the page's second figure)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=40)
    ap.add_argument("--mean-gap", type=float, default=6.0, help="seconds between submissions")
    ap.add_argument("--burst", type=int, default=6, help="submissions at once, mid-stream")
    ap.add_argument("--interval", type=float, default=1.0, help="interactive gate interval")
    ap.add_argument("--speed", type=float, default=8.0, help="simulator speed (latency / x)")
    ap.add_argument("--idle-poll", type=float, default=1.0, help="collector idle poll, s")
    ap.add_argument("--connect-lead", type=float, default=None,
                    help="collector connect lead, s (default: production's 1 s on a 5 s "
                         "interval, scaled to --interval like the rest of this faster world)")
    args = ap.parse_args()
    lead = args.interval / 5 if args.connect_lead is None else args.connect_lead
    print(f"machine: {machine()}")
    url = database("bf4ps_bench_eta")
    asyncio.run(seed(url, args.requests))
    sim = start_sim(speed=args.speed, min_interval=args.interval)
    margin = 0.05
    env = {"BF4PS_EGRESS_MIN_INTERVAL_SECONDS": str(args.interval),
           "BF4PS_EGRESS_SAFETY_MARGIN_SECONDS": str(margin),
           "BF4PS_IDLE_POLL_SECONDS": str(args.idle_poll), "BF4PS_HEARTBEAT_SECONDS": "2",
           "BF4PS_BATTLELOG_CONNECT_LEAD_SECONDS": str(lead)}
    fleet = Collectors(url, sim.base_url, env)
    gate = SendTimings(seed_interval=args.interval, margin=margin, idle_poll=args.idle_poll,
                        connect_lead=lead)
    t0 = time.monotonic()
    try:
        fleet.start("eta-interactive-01", "eta-egress", "127.0.0.40", "interactive")
        subs = asyncio.run(stream(url, args.requests, args.mean_gap, args.burst, gate))
        asyncio.run(wait_done(url, timeout=600))
    finally:
        codes = fleet.stop()
        sim.stop()
    print(f"ran {time.monotonic() - t0:.0f} s; collector exit {codes}; interval "
          f"{args.interval} s (+{margin} s margin), connect lead {lead:.2f} s, simulator "
          f"speed {args.speed}, "
          f"{args.requests} submissions, mean gap {args.mean_gap} s, burst {args.burst}")
    found = asyncio.run(rows(url, subs))
    report(found, args.interval + margin)
    print("per request (position: estimate s / actual s): " + "  ".join(
        f"{r.position}:{r.eta_s:.1f}/{r.wait_s:.1f}" for r in found))
    print(f"mean |error| {statistics.fmean(abs(r.error_s) for r in found):.2f} s"
          if found else "")


if __name__ == "__main__":
    main()
