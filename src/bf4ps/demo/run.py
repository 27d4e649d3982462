"""The demo: an embedded PostgreSQL, a simulated BF4SW (with live activity), the Battlelog
simulator, the scheduler, N background collectors on distinct loopback egresses, the
interactive collector and the website; progress on the terminal; a clean stop."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import secrets
import signal
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import psycopg

from bf4ps.db import embedded, migrate
from bf4ps.db.connect import Conn, connection, ensure_database, with_dbname
from bf4ps.demo import figures, timescale
from bf4ps.demo.procs import Children
from bf4ps.demo.show import Progress
from bf4ps.settings import Settings, child_env
from bf4ps.sim.battlelog.config import SimConfig
from bf4ps.sim.battlelog.server import spawn
from bf4ps.sim.bf4sw import population
from bf4ps.waiting import sleep_unless_stopped

# The simulator's fault rates as measured on the real Battlelog (reference/battlelog.md §4):
# 1.6-8.4 % of detailed answers lacked generalStats (14/900, 38/450 first attempts), and about
# 0.4 % of requests failed with a server error or timed out.
REAL_FAULTS = {"fault_missing_general": 0.05, "fault_5xx": 0.002, "fault_timeout": 0.002}
BUDGET_SHARE = 0.9  # the demo's fleet budget: 90 % of what the background egresses could send
BUDGET_WINDOW = 60.0  # seconds; short, so budget use shows within a demo's minute
INTERACTIVE_IP = "127.0.0.9"


class DemoError(RuntimeError):
    """The demo cannot start (or its website stopped): one line for the user."""


@dataclass(frozen=True)
class DemoOptions:
    soldiers: int = 3000
    collectors: int = 4
    duration: float | None = None
    port: int = 8080
    speed: float = timescale.DEFAULT_SPEED
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


def check_port(port: int) -> None:
    """Refuse a website port another program listens on, before anything starts."""
    if port == 0:
        return
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is no conflict
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            raise DemoError(f"port {port} is in use ({exc.strerror}): stop what listens "
                            "there or pick another with --port (0: any free port)") from None


@contextlib.contextmanager
def exclusive(base: Path) -> Iterator[None]:
    """Hold the data directory's demo lock for the whole run: a second demo on the same
    directory would reset the first one's database."""
    base.mkdir(parents=True, exist_ok=True)
    with open(base / "demo.lock", "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            pid = lock.read().strip() or "?"
            raise DemoError(f"another demo (pid {pid}) is running on {base}: stop it first, "
                            "or give this one its own BF4PS_DATA_DIR") from None
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        yield


def bf4ps_command() -> str:
    """How to run bf4ps from a new shell: the console script beside this Python (a venv's bin
    is not on a new shell's PATH), else the module."""
    script = Path(sys.executable).parent / "bf4ps"
    return str(script) if script.exists() else f"{sys.executable} -m bf4ps.cli.main"


class Demo:
    def __init__(self, settings: Settings, opts: DemoOptions) -> None:
        self.settings = settings
        self.opts = opts
        self.base = settings.data_dir / "demo"
        self.interval = timescale.PACE_SECONDS
        self.anchor = time.time()  # the play schedule starts with the demo
        self.margin = max(0.05, 0.3 * self.interval)
        self.port = opts.port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.password = secrets.token_urlsafe(12)
        self.stop = asyncio.Event()
        self.progress: figures.Progress | None = None
        self.began = time.monotonic()
        self.since = datetime.now(UTC)
        per_egress = 1.0 / (self.interval + self.margin)
        self.budget = max(1, round(BUDGET_SHARE * opts.collectors * per_egress * BUDGET_WINDOW))
        ips = {f"127.0.0.{10 + i}": f"demo-egress-{i + 1:02d}" for i in range(opts.collectors)}
        self.capacity = figures.Capacity({**ips, INTERACTIVE_IP: "demo-interactive"},
                                         self.interval + self.margin,
                                         figures.FleetBudget(self.budget, BUDGET_WINDOW))

    async def run(self) -> figures.Summary:
        check_port(self.opts.port)
        with exclusive(self.base):
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):  # Ctrl-C: stop, then the summary
                loop.add_signal_handler(sig, self.stop.set)
            server = embedded.start(self.base / "pgdata")
            try:
                return await self._run(server)
            finally:
                embedded.stop(self.base / "pgdata")

    async def _run(self, server: str) -> figures.Summary:
        show = Progress(self.opts.json)
        show.say("preparing the embedded PostgreSQL and a simulated BF4SW "
                 f"({self.opts.soldiers} soldiers)")
        db, sw = await _fresh(server, "bf4ps"), await _fresh(server, "bf4sw")
        await migrate.upgrade(db)
        async with connection(db) as conn:
            await timescale.apply(conn, self.opts.speed)
        async with connection(sw) as conn:
            await population.fill(conn, self.opts.soldiers, seed=7)
        if self.stop.is_set():
            return self._summary(None, None, None)
        sim = spawn(SimConfig(
            port=0, speed=self.opts.speed, min_interval=self.interval,
            penalty=60 / 5, fleet_budget=self.budget, fleet_window=BUDGET_WINDOW,
            session_players=timescale.session_players(self.opts.soldiers),
            play_anchor=self.anchor,
            fault_missing_general=REAL_FAULTS["fault_missing_general"],
            fault_5xx=REAL_FAULTS["fault_5xx"], fault_timeout=REAL_FAULTS["fault_timeout"]))
        children = Children(self.base / "logs", self._env(db, sw, sim.base_url))
        children.adopt("battlelog-simulator", sim.process)
        try:
            self._start(children)
            show.say(f"Battlelog faults as measured ({_faults_text()}); fleet budget "
                     f"{self.budget} requests per {BUDGET_WINDOW:.0f} s")
            show.started(self.url, self.password, self.base / "logs", db, bf4ps_command(),
                         timescale.forecast_record_seconds(self.opts.speed))
            return await self._watch(db, sim.base_url, children, show)
        finally:
            codes = children.stop()
            show.say(f"stopped {len(codes)} processes")

    def _env(self, db: str, sw: str, sim_url: str) -> dict[str, str]:
        return child_env({
            "BF4PS_DATABASE_URL": db, "BF4PS_BF4SW_DATABASE_URL": sw,
            "BF4PS_DATA_DIR": str(self.base), "BF4PS_BATTLELOG_BASE_URL": sim_url,
            "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": f"{self.interval}",
            # one machine, one clock: a skew bound well below the pacing interval
            "BF4PS_CLOCK_SKEW_LIMIT_SECONDS": f"{self.interval / 2:g}",
            "BF4PS_FORECAST_RECORD_SECONDS":
                f"{timescale.forecast_record_seconds(self.opts.speed):g}",
            # a wide jitter margin: the whole fleet shares one small machine here
            "BF4PS_EGRESS_SAFETY_MARGIN_SECONDS": f"{self.margin}",
            "BF4PS_HEARTBEAT_SECONDS": "5", "BF4PS_LEASE_SECONDS": "60",
            "BF4PS_SCHEDULER_TICK_SECONDS": "1",
            "BF4PS_BF4SW_SYNC_SECONDS": f"{timescale.sync_seconds(self.opts.speed):g}",
            "BF4PS_SWEEP_SECONDS": "10", "BF4PS_HISTORY_RECORD_SECONDS": "10",
            "BF4PS_OPS_USERNAME": "ops",
            "BF4PS_OPS_PASSWORD": self.password, "BF4PS_WEB_HOST": "127.0.0.1",
            "BF4PS_WEB_PORT": str(self.port), "BF4PS_LOG_LEVEL": "INFO",
            "BF4PS_FLEET_BUDGET_REQUESTS": str(self.budget),
            "BF4PS_FLEET_BUDGET_WINDOW_SECONDS": f"{BUDGET_WINDOW}",
        })

    def _start(self, c: Children) -> None:
        c.start("scheduler", "scheduler", "run")
        c.start("bf4sw-live", "simulate", "bf4sw", "--live", "--rate", f"{self.opts.speed}",
                "--soldiers", str(self.opts.soldiers), "--seed", "7", "--session-players",
                f"{timescale.session_players(self.opts.soldiers)}",
                "--play-anchor", f"{self.anchor}",
                "--activity", f"{timescale.ACTIVITY}")
        for i in range(self.opts.collectors):
            c.start(f"collector-{i + 1:02d}", "collector", "run", "--name", f"demo-{i + 1:02d}",
                    "--egress", f"demo-egress-{i + 1:02d}", "--source-address",
                    f"127.0.0.{10 + i}", "--hostname", "demo")
        c.start("collector-interactive", "collector", "run", "--name", "web-interactive-01",
                "--lane", "interactive", "--egress", "demo-interactive",
                "--source-address", "127.0.0.9", "--hostname", "demo")
        c.start("web", "web", "run")

    async def _watch(self, db: str, sim_url: str, children: Children,
                     show: Progress) -> figures.Summary:
        first = last = happened = None
        self.began, self.since = time.monotonic(), datetime.now(UTC)
        async with connection(db) as conn:
            await sleep_unless_stopped(self.stop, 2.0)
            while not self.stop.is_set():
                if self.opts.duration and time.monotonic() - self.began >= self.opts.duration:
                    break
                if "web" in children.dead():
                    raise DemoError(f"the website stopped: see {self.base / 'logs' / 'web.log'}")
                snap = await self._snapshot(conn, sim_url)
                if snap is not None:
                    first, last = first or snap, snap
                    happened = await figures.outcomes(conn, self.since)
                    elapsed = time.monotonic() - self.began
                    budget = figures.budget_use(self.capacity, elapsed, snap.sim)
                    show.update(last, elapsed, children.dead(), happened, budget)
                await sleep_unless_stopped(self.stop, 2.0)
            # the summary's figures are read with the collectors stopped (each finishes its
            # job first), so the simulator's answers and the failures the fleet recorded of
            # them are the same requests: read while collectors still ran, a failure recorded
            # after the simulator's last reading was counted on one side only. They come from
            # the last good readings: after Ctrl-C the simulator (in the terminal's process
            # group) may already be gone
            await asyncio.to_thread(children.stop, prefix="collector-")
            final = await self._final_snapshot(conn, sim_url)
            if final is not None:
                first, last = first or final, final
            with contextlib.suppress(psycopg.Error):
                happened = await figures.outcomes(conn, self.since)
                self.progress = await figures.progress(conn)
        return self._summary(first, last, happened)

    async def _snapshot(self, conn: Conn, sim_url: str) -> figures.Snapshot | None:
        try:
            return await figures.snapshot(conn, sim_url, 60)
        except httpx.HTTPError:
            if self.stop.is_set():
                return None
            raise

    async def _final_snapshot(self, conn: Conn, sim_url: str) -> figures.Snapshot | None:
        try:
            return await figures.snapshot(conn, sim_url, 60)
        except (httpx.HTTPError, psycopg.Error):
            return None

    def _summary(self, first: figures.Snapshot | None, last: figures.Snapshot | None,
                 happened: figures.Outcomes | None) -> figures.Summary:
        return figures.summary(first, last, seconds=time.monotonic() - self.began,
                               capacity=self.capacity, happened=happened, url=self.url,
                               progress=self.progress)


def _faults_text() -> str:
    return ", ".join(f"{k.removeprefix('fault_').replace('_', ' ')} {100 * v:g} %"
                     for k, v in REAL_FAULTS.items())


def run_demo(settings: Settings, opts: DemoOptions) -> figures.Summary:
    return asyncio.run(Demo(settings, opts).run())
