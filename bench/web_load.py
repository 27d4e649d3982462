"""Website latency at scale: 1,000,000 soldiers seeded in SQL (bench/web_seed.py: detailed stats
for all, older history for a tenth, weapons and vehicles for a sample; for the 100,000 most
active ten collections of every resource with their intervals, events, play sessions, profiles
and flags, spread over the time the documented fleet budget needs for them (1,296 requests an
hour: 129 days at 1M); this week's gains boards built as the scheduler builds them), the app
served by uvicorn in a subprocess, and concurrent clients on soldier pages (any soldier, with
weapons, and active soldiers: progress, last session, rank, medals, charts), the soldier API
(overview, weapons, history, progress, last session), this week's gains boards per platform and
per weapon and vehicle (page and API), the home page (recently collected, playing now, four
leaderboards), the leaderboards' pages, paged name search, the operator console (with its flags
card), the flags API and the operator status API, and the community-compatible endpoints
(bench/community_paths.py: gametools' and bf4stats' formats, docs/api.md). Prints
p50/p95/p99 per endpoint (targets: public pages p99 <= 50 ms, status/ops <= 200 ms).
Prints figures, asserts nothing.

Latencies are measured by the client (aiohttp, its own process) and include its overhead; both
processes share the machine's cores.

Two load shapes: an open loop (Poisson arrivals at --rate over all endpoints, latency from
each request's scheduled time) and a closed loop (--concurrency clients back to back: the
saturation throughput, where latency is mostly queueing).

Run: ``python -m bench.web_load [--soldiers 1000000] [--sample 10000] [--requests 3000]
      [--concurrency 16] [--workers 2] [--rate 100] [--seconds 30] [--reuse] [--open-only]
      [--seed-only]``
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import random
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field

import aiohttp
import httpx
import psycopg

from bench.common import fresh_database, machine, server_url
from bench.community_paths import community_plans
from bench.web_seed import BASE_PERSONA, active_offset, seed
from bf4ps.db import migrate
from bf4ps.db.connect import with_dbname
from bf4ps.settings import child_env
from bf4ps.web.serve import free_port

DB = "bf4ps_bench_web"
OPS = ("bench", "bench-pass")
# The server as production would run it: PostgreSQL's default 128 MB of shared buffers holds
# a seventieth of this 9 GB database, and this machine's page cache is reclaimed by its host
# within minutes, so random soldiers would be read from the virtual disk. 2 GB holds every
# soldier's headline rows and the most active soldiers' pages are read from the page cache.
SERVER_TUNING = {"shared_buffers": "2GB"}


def fold_coverage(url: str) -> None:
    """Fold the coverage deltas the seed's updates appended into the counters, as the
    scheduler does every tick: a running fleet never has 20,000 of them unfolded, and the
    operator pages would otherwise sum them on every request. Then vacuumed, as autovacuum
    keeps the table of a running fleet (a few rows between two ticks): the fold leaves the
    seed's ~370,000 deltas dead in 3,000 pages, which every coverage read scanned (17 ms at 1M)
    until autovacuum came by."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT bf4ps_coverage_fold()")
        conn.execute("VACUUM ANALYZE coverage_deltas")


def seeded_count(url: str) -> int:
    try:
        with psycopg.connect(url) as conn:
            row = conn.execute("SELECT count(*) FROM soldiers").fetchone()
            return int(row[0]) if row else 0
    except psycopg.Error:
        return 0


@dataclass
class Sample:
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    statuses: dict[int, int] = field(default_factory=dict)


def session(base: str, connections: int, auth: tuple[str, str] | None) -> aiohttp.ClientSession:
    """The load's HTTP client: aiohttp, whose CPU per request is about half httpx's here
    (the client shares the server's two cores, so its cost is part of what is measured)."""
    basic = base64.b64encode(":".join(auth).encode()).decode() if auth else None
    return aiohttp.ClientSession(
        base_url=base, connector=aiohttp.TCPConnector(limit=connections),
        headers={"Authorization": f"Basic {basic}"} if basic else None,
        timeout=aiohttp.ClientTimeout(total=30))


async def fetch(client: aiohttp.ClientSession, path: str) -> int:
    """One GET, its body read; its status, or 0 when it failed on the wire."""
    try:
        async with client.get(path, allow_redirects=False) as r:
            await r.read()
            return r.status
    except (aiohttp.ClientError, TimeoutError):
        return 0


async def drive(base: str, paths: list[str], concurrency: int,
                auth: tuple[str, str] | None) -> tuple[Sample, float]:
    out = Sample()
    queue: asyncio.Queue[str] = asyncio.Queue()
    for p in paths:
        queue.put_nowait(p)
    async with session(base, concurrency, auth) as client:
        async def worker() -> None:
            while not queue.empty():
                path = queue.get_nowait()
                t0 = time.perf_counter()
                status = await fetch(client, path)
                out.statuses[status] = out.statuses.get(status, 0) + 1
                if not 0 < status < 400:
                    out.errors += 1
                out.latencies.append((time.perf_counter() - t0) * 1000)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return out, time.perf_counter() - started


async def open_loop(base: str, mix: list[tuple[str, list[str], tuple[str, str] | None]],
                    rate: float, seconds: float) -> dict[str, Sample]:
    """Poisson arrivals at `rate` per second over the endpoints of `mix` (round robin); each
    latency counts from the request's scheduled time, so a stalled server cannot hide queueing
    (no coordinated omission)."""
    out = {name: Sample() for name, _, _ in mix}
    rng = random.Random(7)
    clients = {auth: session(base, 128, auth) for auth in {auth for _, _, auth in mix}}

    async def one(name: str, path: str, client: aiohttp.ClientSession, due: float) -> None:
        if not 0 < await fetch(client, path) < 400:
            out[name].errors += 1
        out[name].latencies.append((time.perf_counter() - due) * 1000)

    tasks = []
    start = time.perf_counter()
    due = start
    i = 0
    while due - start < seconds:
        due += rng.expovariate(rate)
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        name, paths, auth = mix[i % len(mix)]
        tasks.append(asyncio.create_task(one(name, paths[(i // len(mix)) % len(paths)],
                                             clients[auth], due)))
        i += 1
    await asyncio.gather(*tasks)
    for c in clients.values():
        await c.close()
    return out


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def report(name: str, s: Sample, elapsed: float, target: float | None) -> None:
    lat = s.latencies
    if not lat:
        print(f"{name:38} no samples", flush=True)
        return
    p99 = pct(lat, 99)
    print(f"{name:38} n={len(lat):5}  rps={len(lat) / elapsed:7.1f}  p50={pct(lat, 50):7.1f}  "
          f"p95={pct(lat, 95):7.1f}  p99={p99:7.1f}  max={max(lat):7.1f} ms  "
          f"mean={statistics.fmean(lat):6.1f}  errors={s.errors}"
          + (f"  target p99<={target:.0f} ms: {'met' if p99 <= target else 'MISSED'}"
             if target is not None else ""), flush=True)


def start_server(url: str, port: int, workers: int) -> subprocess.Popen[bytes]:
    env = child_env({"BF4PS_DATABASE_URL": url, "BF4PS_OPS_USERNAME": OPS[0],
                     "BF4PS_OPS_PASSWORD": OPS[1], "BF4PS_SECRET_KEY": "bench",
                     "BF4PS_DB_POOL_MAX": "8", "BF4PS_LOG_LEVEL": "WARNING"})
    args = [sys.executable, "-m", "uvicorn", "--factory", "bf4ps.web.app:app_from_env",
            "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers),
            "--log-level", "warning", "--no-access-log"]
    proc = subprocess.Popen(args, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("the web server did not start")


def board_paths(count: int) -> list[str]:
    rng = random.Random(count)
    return [f"/leaderboards?platform={rng.choice(['pc', 'ps4', 'xboxone', 'ps3'])}"
            f"&by={rng.choice(['spm', 'kd', 'skill', 'kills'])}&page={rng.randint(1, 40)}"
            for _ in range(count)]


def week_paths(count: int, prefix: str = "") -> list[str]:
    """This week's gains boards: soldiers' kill and score rates, and the weapon and vehicle
    boards (half of them the default item, the one with most soldiers; half a given one)."""
    rng = random.Random(count + len(prefix))
    out = []
    for _ in range(count):
        by = rng.choice(["kpm", "spm", "weapon", "vehicle"])
        item = ""
        if by in ("weapon", "vehicle") and rng.random() < 0.5:
            item = f"&item={rng.randint(1, 136 if by == 'weapon' else 53)}"
        out.append(f"{prefix}/leaderboards/week?platform={rng.choice(['pc', 'ps4', 'xboxone'])}"
                   f"&by={by}{item}&page={rng.randint(1, 40)}")
    return out


def active_paths(n: int, count: int, prefix: str = "", suffix: str = "") -> list[str]:
    """Soldiers of the most active tenth (ten collections and nine intervals each)."""
    rng = random.Random(count + 3 + len(suffix))
    out = []
    for _ in range(count):
        g = active_offset(rng, n)
        plat = "pc" if g % 100 < 65 else ("ps4" if g % 100 < 82 else "xboxone")
        out.append(f"{prefix}/soldiers/{plat}/{BASE_PERSONA + g}{suffix}")
    return out


def search_paths(n: int, count: int) -> list[str]:
    """Name prefixes from very common ("bench1": 111,111 matches at 1M) to single soldiers,
    a random page of each."""
    rng = random.Random(count + 1)
    out = []
    for _ in range(count):
        g = str(rng.randrange(1, n + 1))
        prefix = "bench" + g[: rng.randint(1, len(g))]
        out.append(f"/?q={prefix}&page={rng.randint(1, 5)}")
    return out


def soldier_paths(n: int, every: int, count: int, sampled: bool, prefix: str = "",
                  suffix: str = "") -> list[str]:
    rng = random.Random(count + every + len(prefix) + len(suffix) + sampled)
    out = []
    for _ in range(count):
        g = (rng.randrange(n // every) * every + 1) if sampled else rng.randrange(1, n + 1)
        g = min(g, n)
        plat = "pc" if g % 100 < 65 else ("ps4" if g % 100 < 82 else "xboxone")
        out.append(f"{prefix}/soldiers/{plat}/{BASE_PERSONA + g}{suffix}")
    return out


Plan = tuple[str, list[str], tuple[str, str] | None, float]


def plans(n: int, every: int, requests: int) -> list[Plan]:
    """The endpoints of the load: (name, paths, operator credentials or None, p99 target ms).
    bench/web_cpu.py measures the same mix."""
    return [
        ("soldier page (with weapons)", soldier_paths(n, every, requests, True), None, 50.0),
        ("soldier page (any soldier)", soldier_paths(n, every, requests, False), None, 50.0),
        ("soldier page (active: 10 collections)", active_paths(n, requests), None, 50.0),
        ("GET /api/soldiers/{p}/{id}", soldier_paths(n, every, requests, False, "/api"),
         None, 50.0),
        ("GET /api/soldiers/.../progress", active_paths(n, requests // 2, "/api",
                                                        "/progress"), None, 50.0),
        ("GET /api/soldiers/.../last-session", active_paths(n, requests // 2, "/api",
                                                            "/last-session"), None, 50.0),
        ("GET /api/soldiers/.../history", active_paths(n, requests // 2, "/api", "/history"),
         None, 50.0),
        ("this week's gains boards (page)", week_paths(max(200, requests // 3)), None, 50.0),
        ("GET /api/leaderboards/week", [p.replace("/leaderboards", "/api/leaderboards")
                                        for p in week_paths(max(200, requests // 6))],
         None, 50.0),
        ("GET /api/soldiers/.../weapons", soldier_paths(n, every, requests // 2, True, "/api",
                                                        "/weapons"), None, 50.0),
        ("home page (discovery, 4 boards)", ["/", "/?platform=ps4", "/?platform=xboxone"]
         * max(100, requests // 30), None, 50.0),
        ("leaderboards (any board, page)", board_paths(max(200, requests // 3)), None,
         50.0),
        ("search (prefix, page)", search_paths(n, max(200, requests // 3)), None, 50.0),
        ("GET /ops", ["/ops"] * max(200, requests // 10), OPS, 200.0),
        ("GET /api/ops/status", ["/api/ops/status"] * max(200, requests // 10), OPS, 200.0),
        ("GET /api/ops/flags", ["/api/ops/flags", "/api/ops/flags?all=true"]
         * max(100, requests // 20), OPS, 200.0),
        *community_plans(n, every, requests),
    ]


async def run_load(base: str, n: int, every: int, requests: int, concurrency: int,
                   rate: float, seconds: float, open_only: bool = False) -> None:
    mix = plans(n, every, requests)
    for _, paths, auth, _ in mix:  # warm up: every page, the pools grown, the caches read
        await drive(base, paths[:64], 16, auth)
    print(f"-- open loop: {rate:.0f} requests/s (Poisson) for {seconds:.0f} s, mixed "
          "endpoints", flush=True)
    results = await open_loop(base, [(name, paths, auth) for name, paths, auth, _ in mix],
                              rate, seconds)
    for name, _, _, target in mix:
        report(name, results[name], seconds, target)
    if open_only:
        return
    print(f"-- closed loop: {concurrency} clients back to back (saturation)", flush=True)
    for name, paths, auth, _ in mix:
        sample, elapsed = await drive(base, paths, concurrency, auth)
        report(name, sample, elapsed, None)
    print("-- one client (service time)", flush=True)
    for name, paths, auth, _ in mix:
        sample, elapsed = await drive(base, paths[: len(paths) // 4], 1, auth)
        report(name, sample, elapsed, None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--soldiers", type=int, default=1_000_000)
    ap.add_argument("--sample", type=int, default=10_000, help="soldiers with weapons/vehicles")
    ap.add_argument("--requests", type=int, default=3000, help="per soldier endpoint")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2, help="uvicorn worker processes")
    ap.add_argument("--rate", type=float, default=100.0, help="open-loop requests per second")
    ap.add_argument("--seconds", type=float, default=30.0, help="open-loop duration")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse an already seeded database (migrated to this schema)")
    ap.add_argument("--open-only", action="store_true", help="skip the closed-loop runs")
    ap.add_argument("--seed-only", action="store_true",
                    help="seed (or reuse) the database and stop: the load can then run alone "
                         "with --reuse")
    args = ap.parse_args()
    print(f"machine: {machine()}", flush=True)
    url = with_dbname(server_url(SERVER_TUNING), DB)
    if not (args.reuse and seeded_count(url) == args.soldiers):
        url = fresh_database(DB)
        asyncio.run(seed(url, args.soldiers, args.sample))
    else:  # seeded by an earlier run: brought to this tree's schema first
        asyncio.run(migrate.upgrade(url))
    fold_coverage(url)
    if args.seed_only:
        return
    every = max(1, args.soldiers // args.sample)
    port = free_port()
    proc = start_server(url, port, args.workers)
    try:
        print(f"uvicorn workers={args.workers}, concurrency={args.concurrency}", flush=True)
        asyncio.run(run_load(f"http://127.0.0.1:{port}", args.soldiers, every, args.requests,
                             args.concurrency, args.rate, args.seconds, args.open_only))
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
