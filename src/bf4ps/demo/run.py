"""The demo: an embedded PostgreSQL, a simulated BF4SW (with live activity), the Battlelog
simulator, the scheduler, N background collectors on distinct loopback egresses, the
interactive collector and the website; progress on the terminal; a clean stop."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import signal
import socket
import time
from dataclasses import dataclass
from typing import Any

from bf4ps.db import embedded, migrate
from bf4ps.db.connect import connection, ensure_database, with_dbname
from bf4ps.demo import figures
from bf4ps.demo.procs import Children
from bf4ps.demo.show import Progress
from bf4ps.settings import Settings, child_env
from bf4ps.sim.battlelog.config import SimConfig
from bf4ps.sim.battlelog.server import spawn
from bf4ps.sim.bf4sw import population


@dataclass(frozen=True)
class DemoOptions:
    soldiers: int = 3000
    collectors: int = 4
    duration: float | None = None
    port: int = 8080
    speed: float = 5.0
    json: bool = False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _fresh(server: str, name: str) -> str:
    """Drop and recreate a demo database (every demo starts from nothing)."""
    import psycopg
    from psycopg import sql

    async with await psycopg.AsyncConnection.connect(server, autocommit=True) as conn:
        await conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))
    await ensure_database(server, name)
    return with_dbname(server, name)


class Demo:
    def __init__(self, settings: Settings, opts: DemoOptions) -> None:
        self.settings = settings
        self.opts = opts
        self.base = settings.data_dir / "demo"
        self.interval = 5.0 / opts.speed
        self.margin = max(0.05, 0.3 * self.interval)
        self.port = opts.port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.password = secrets.token_urlsafe(12)
        self.stop = asyncio.Event()

    async def run(self) -> dict[str, Any]:
        server = embedded.start(self.base / "pgdata")
        try:
            return await self._run(server)
        finally:
            embedded.stop(self.base / "pgdata")

    async def _run(self, server: str) -> dict[str, Any]:
        show = Progress(self.opts.json)
        show.say("preparing the embedded PostgreSQL and a simulated BF4SW "
                 f"({self.opts.soldiers} soldiers)")
        db, sw = await _fresh(server, "bf4ps"), await _fresh(server, "bf4sw")
        await migrate.upgrade(db)
        async with connection(sw) as conn:
            await population.fill(conn, self.opts.soldiers, seed=7)
        sim = spawn(SimConfig(port=0, speed=self.opts.speed, min_interval=self.interval,
                              penalty=60 / self.opts.speed))
        children = Children(self.base / "logs", self._env(db, sw, sim.base_url))
        children.adopt("battlelog-simulator", sim.process)
        try:
            self._start(children)
            show.started(self.url, self.password, self.base / "logs", db)
            return await self._watch(db, sim.base_url, children, show)
        finally:
            codes = children.stop()
            show.say(f"stopped {len(codes)} processes")

    def _env(self, db: str, sw: str, sim_url: str) -> dict[str, str]:
        return child_env({
            "BF4PS_DATABASE_URL": db, "BF4PS_BF4SW_DATABASE_URL": sw,
            "BF4PS_DATA_DIR": str(self.base), "BF4PS_BATTLELOG_BASE_URL": sim_url,
            "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": f"{self.interval}",
            # a wide jitter margin: the whole fleet shares one small machine here
            "BF4PS_EGRESS_SAFETY_MARGIN_SECONDS": f"{self.margin}",
            "BF4PS_HEARTBEAT_SECONDS": "5", "BF4PS_LEASE_SECONDS": "60",
            "BF4PS_SCHEDULER_TICK_SECONDS": "1", "BF4PS_BF4SW_SYNC_SECONDS": "10",
            "BF4PS_SWEEP_SECONDS": "10", "BF4PS_HISTORY_RECORD_SECONDS": "10",
            "BF4PS_OPS_USERNAME": "ops",
            "BF4PS_OPS_PASSWORD": self.password, "BF4PS_WEB_HOST": "127.0.0.1",
            "BF4PS_WEB_PORT": str(self.port), "BF4PS_LOG_LEVEL": "INFO",
        })

    def _start(self, c: Children) -> None:
        c.start("scheduler", "scheduler", "run")
        c.start("bf4sw-live", "simulate", "bf4sw", "--live", "--rate", "60",
                "--soldiers", str(self.opts.soldiers), "--seed", "7")
        for i in range(self.opts.collectors):
            c.start(f"collector-{i + 1:02d}", "collector", "run", "--name", f"demo-{i + 1:02d}",
                    "--egress", f"demo-egress-{i + 1:02d}", "--source-address",
                    f"127.0.0.{10 + i}", "--hostname", "demo")
        c.start("collector-interactive", "collector", "run", "--name", "web-interactive-01",
                "--lane", "interactive", "--egress", "demo-interactive",
                "--source-address", "127.0.0.9", "--hostname", "demo")
        c.start("web", "web", "run")

    async def _watch(self, db: str, sim_url: str, children: Children,
                     show: Progress) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.stop.set)
        began = time.monotonic()
        async with connection(db) as conn:
            await asyncio.sleep(2)
            first = await figures.snapshot(conn, sim_url, 60)
            last = first
            while not self.stop.is_set():
                if self.opts.duration and time.monotonic() - began >= self.opts.duration:
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stop.wait(), 2.0)
                last = await figures.snapshot(conn, sim_url, 60)
                show.update(last, time.monotonic() - began, children.dead())
        return figures.summary(first, last, seconds=time.monotonic() - began,
                               egresses=self.opts.collectors + 1,
                               interval=self.interval + self.margin,
                               url=self.url)


def run_demo(settings: Settings, opts: DemoOptions) -> dict[str, Any]:
    return asyncio.run(Demo(settings, opts).run())
