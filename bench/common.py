"""Shared by the benchmarks: a scratch database (embedded server by default, or the server of
BF4PS_BENCH_DATABASE_URL), machine facts, and median helpers."""

from __future__ import annotations

import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import psutil
import psycopg
from psycopg import sql

from bf4ps.db import embedded, migrate
from bf4ps.db.connect import with_dbname


def _pgdata() -> Path:
    base = Path(os.environ.get("BF4PS_BENCH_DIR", Path(tempfile.gettempdir()) / "bf4ps-bench"))
    base.mkdir(parents=True, exist_ok=True)
    base.chmod(0o755)
    return base / "pgdata"


def server_url(tuning: dict[str, str] | None = None) -> str:
    """The benchmarks' server. `tuning`: server settings a benchmark needs (set with ALTER
    SYSTEM on the embedded server, which is restarted when one needs it; an external server
    is used as it is configured)."""
    external = os.environ.get("BF4PS_BENCH_DATABASE_URL")
    if external:
        return external
    url = embedded.start(_pgdata())
    if tuning and _tune(url, tuning):
        embedded.stop(_pgdata())
        url = embedded.start(_pgdata())
    return url


def _tune(url: str, tuning: dict[str, str]) -> bool:
    """Whether a restart is needed for the settings to take effect."""
    with psycopg.connect(url, autocommit=True) as conn:
        for name, value in tuning.items():
            conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(
                sql.Identifier(name), sql.Literal(value)))
        conn.execute("SELECT pg_reload_conf()")
        pending = conn.execute("SELECT count(*) FROM pg_settings WHERE pending_restart")
        row = pending.fetchone()
        return bool(row and row[0])


def fresh_database(name: str, *, migrated: bool = True) -> str:
    admin = server_url()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = with_dbname(admin, name)
    if migrated:
        import asyncio

        asyncio.run(migrate.upgrade(url))
    return url


def cpu_speed() -> float:
    """Seconds one core takes for 3,000,000 Python additions (best of 3): how fast this machine
    is today, so that figures of runs on different days (a shared VM's cores are not always as
    fast) can be compared."""
    best = float("inf")
    for _ in range(3):
        start, total = time.perf_counter(), 0
        for i in range(3_000_000):
            total += i
        best = min(best, time.perf_counter() - start)
    return best


def machine() -> str:
    load = os.getloadavg()
    return (f"{platform.machine()} {psutil.cpu_count()} cores, "
            f"{psutil.virtual_memory().total / 2**30:.0f} GiB, Python {platform.python_version()}, "
            f"load {load[0]:.1f}/{load[1]:.1f}, 3M Python additions in {cpu_speed():.2f} s")


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")
