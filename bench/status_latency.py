"""Status and console cost at scale, one request at a time: the web_load database (1,000,000
soldiers; seeded here if it is not there yet) with six hours of fleet-history records (one a
minute, written by the scheduler's own recorder), the app under uvicorn, and one client
timing /ops, /api/ops/status, /api/ops/history and /metrics back to back (target: status/ops
p99 <= 200 ms). Also times the backlog-age probe alone and shows its plan's buffers (a handful
of index pages, however many soldiers). Serial on purpose: on a loaded shared machine an
open loop measures the queue, not the request. Prints figures, asserts nothing.

Run: ``python -m bench.status_latency [--soldiers 1000000] [--requests 100]``
"""

from __future__ import annotations

import argparse
import asyncio
import time

import httpx

from bench.common import fresh_database, machine, server_url
from bench.web_load import DB, OPS, seed, seeded_count, start_server
from bf4ps.db.connect import connection, with_dbname
from bf4ps.db.queries import q
from bf4ps.scheduler import history
from bf4ps.web.serve import free_port

PATHS = ("/ops", "/api/ops/status", "/api/ops/history", "/metrics")


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


async def records(url: str, n: int = 360) -> None:
    """n records, then spread one a minute back from now."""
    async with connection(url) as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM fleet_history")
        row = await cur.fetchone()
        if row and row["n"] >= n:
            return
        for _ in range(n):
            await history.record(conn, 60)
        await conn.execute(
            "UPDATE fleet_history h SET recorded_at = now() - make_interval(mins => o.k) "
            "FROM (SELECT recorded_at, row_number() OVER (ORDER BY recorded_at DESC) AS k "
            "FROM fleet_history) o WHERE o.recorded_at = h.recorded_at")


async def probe(url: str, n: int) -> None:
    async with connection(url) as conn:
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            await (await conn.execute(q("backlog_oldest"))).fetchall()
            times.append(time.perf_counter() - t0)
        cur = await conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + q("backlog_oldest"))
        plan = [str(r["QUERY PLAN"]) for r in await cur.fetchall()]
    buffers = next((line.strip() for line in plan if "Buffers" in line), "")
    print(f"backlog-age probe: p50 {1000 * pct(times, 50):.2f} ms, p99 "
          f"{1000 * pct(times, 99):.2f} ms ({buffers})")


def endpoints(base: str, n: int) -> None:
    with httpx.Client(base_url=base, auth=OPS, timeout=60) as c:
        for path in PATHS:
            c.get(path)  # warm
            times = []
            for _ in range(n):
                t0 = time.perf_counter()
                r = c.get(path)
                times.append(time.perf_counter() - t0)
                if r.status_code != 200:
                    print(f"{path}: HTTP {r.status_code}")
            target = "  target p99<=200 ms" if path in ("/ops", "/api/ops/status") else ""
            print(f"{path:18} n={n} p50 {1000 * pct(times, 50):6.1f} ms  p95 "
                  f"{1000 * pct(times, 95):6.1f} ms  p99 {1000 * pct(times, 99):6.1f} ms{target}")


def wait_up(base: str) -> None:
    for _ in range(200):
        try:
            if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError("the web server did not start")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--soldiers", type=int, default=1_000_000)
    ap.add_argument("--sample", type=int, default=10_000)
    ap.add_argument("--requests", type=int, default=100)
    args = ap.parse_args()
    print(f"machine: {machine()}", flush=True)
    url = with_dbname(server_url(), DB)
    if seeded_count(url) != args.soldiers:
        url = fresh_database(DB)
        asyncio.run(seed(url, args.soldiers, args.sample))
    asyncio.run(records(url))
    asyncio.run(probe(url, args.requests))
    port = free_port()
    proc = start_server(url, port, 1)
    try:
        wait_up(f"http://127.0.0.1:{port}")
        endpoints(f"http://127.0.0.1:{port}", args.requests)
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
