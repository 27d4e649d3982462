"""What the website's load costs in CPU: web_load's mix of endpoints, one request at a time over
HTTP against the same 1M-soldier database (seed it with ``python -m bench.web_load`` first), with
the CPU time of the uvicorn workers, of the benchmark's PostgreSQL server (its postmaster and
its processes, not other servers on the machine) and of this client measured around each
endpoint's requests. Prints CPU milliseconds per request by part, and what share of the
machine's cores web_load's open-loop rate asks for: queueing, and so the p99, grows steeply as
that share nears one. Prints figures, asserts nothing.

Run: ``python -m bench.web_cpu [--requests 100] [--rate 100] [--warm 200]``
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Iterable

import psutil
import psycopg

from bench import web_load as wl
from bench.common import machine, server_url
from bf4ps.db.connect import with_dbname
from bf4ps.web.serve import free_port


def cpu_seconds(procs: Iterable[psutil.Process]) -> float:
    """User + system CPU of the processes (one that ended meanwhile counts nothing)."""
    total = 0.0
    for proc in procs:
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def tree_cpu(root: psutil.Process) -> float:
    return cpu_seconds((root, *root.children(recursive=True)))


def postmaster_of(url: str) -> psutil.Process:
    """The benchmark's own PostgreSQL server (its postmaster): other servers on the machine
    (other work's) are not counted."""
    with psycopg.connect(url) as conn:  # the backend is asked while it lives
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        parent = psutil.Process(int(row[0])).parent()
    assert parent is not None
    return parent


def postgres_cpu(postmaster: psutil.Process) -> float:
    return tree_cpu(postmaster)


def mix(n: int, every: int, count: int) -> list[tuple[str, list[str], tuple[str, str] | None]]:
    """web_load's endpoints (wl.plans), `count` requests of each at most."""
    return [(name, paths[:count], auth) for name, paths, auth, _ in wl.plans(n, every, count)]


async def measure(base: str, server_pid: int, postmaster: psutil.Process,
                  args: argparse.Namespace) -> tuple[dict[str, float], int]:
    """Each endpoint's requests one at a time with web_load's client; the CPU seconds of each
    part over all of them, and how many requests that was."""
    me, server = psutil.Process(), psutil.Process(server_pid)
    totals = {"server": 0.0, "postgres": 0.0, "client": 0.0}
    done = 0
    every = max(1, args.soldiers // args.sample)
    await wl.drive(base, wl.soldier_paths(args.soldiers, every, 20, True), 1, None)  # warm up
    endpoints = mix(args.soldiers, every, args.requests)
    if args.warm:  # every pooled connection past its queries' planning (prepared, generic)
        for _, paths, auth in endpoints:
            await wl.drive(base, (paths * (args.warm // len(paths) + 1))[:args.warm], 16, auth)
    for name, paths, auth in endpoints:
        before = (tree_cpu(server), postgres_cpu(postmaster), sum(me.cpu_times()[:2]))
        sample, _ = await wl.drive(base, paths, 1, auth)
        if sample.errors:
            raise SystemExit(f"{name}: {sample.errors} requests failed ({sample.statuses})")
        after = (tree_cpu(server), postgres_cpu(postmaster), sum(me.cpu_times()[:2]))
        used = [(b - a) * 1000 / len(paths) for a, b in zip(before, after, strict=True)]
        for key, ms in zip(totals, used, strict=True):
            totals[key] += ms * len(paths)
        done += len(paths)
        print(f"{name:38s} server {used[0]:6.2f}  postgres {used[1]:6.2f}  "
              f"client {used[2]:6.2f} ms CPU per request", flush=True)
    return totals, done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--soldiers", type=int, default=1_000_000)
    ap.add_argument("--sample", type=int, default=10_000)
    ap.add_argument("--requests", type=int, default=100, help="per endpoint")
    ap.add_argument("--rate", type=float, default=100.0, help="web_load's open-loop rate")
    ap.add_argument("--warm", type=int, default=0,
                    help="requests of each endpoint (16 at a time) before measuring: the "
                         "server's 16 connections prepare and plan their queries in the first "
                         "~10 uses each, which a short run otherwise measures (200: warm)")
    args = ap.parse_args()
    print(f"machine: {machine()}", flush=True)
    url = with_dbname(server_url(wl.SERVER_TUNING), wl.DB)
    if wl.seeded_count(url) != args.soldiers:
        raise SystemExit(f"seed {args.soldiers:,} soldiers first: python -m bench.web_load")
    port = free_port()
    server = wl.start_server(url, port, 2)
    try:
        totals, done = asyncio.run(measure(f"http://127.0.0.1:{port}", server.pid,
                                           postmaster_of(url), args))
    finally:
        server.terminate()
        server.wait(30)
    per = {key: value / done for key, value in totals.items()}
    share = sum(per.values()) * args.rate / 1000 / psutil.cpu_count()
    print("mix: " + ", ".join(f"{k} {v:.2f}" for k, v in per.items())
          + f" ms CPU per request; at {args.rate:.0f} requests/s that is {share:.0%} of "
          f"{psutil.cpu_count()} cores", flush=True)


if __name__ == "__main__":
    main()
