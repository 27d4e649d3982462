"""The chaos run: the whole system on one machine while processes die, the database restarts and
a collector turns zombie; then the invariants (tests/chaos/checks.py).

Setup: a private embedded PostgreSQL (restartable), the BF4PS database migrated, a simulated BF4SW
on the same server with live activity (`bf4ps simulate bf4sw --live`), the Battlelog simulator
with a small fault mix, `bf4ps scheduler run`, background collectors two per egress on distinct
loopback addresses, an interactive collector on its own egress, and website-like submissions.
Chaos (tests/chaos/plan.py, deterministic given the seed): kill -9 of background collectors
(restarted with the same name and data directory), kill -9 of the scheduler (restarted),
`pg_ctl restart -m fast`, and zombies (SIGSTOP mid-request past the lease, then SIGCONT). Then a
quiet period, SIGTERM to everyone, and the checks.

    python -m tests.chaos.harness --seconds 1200 --kills 100 [--seed 7] [--keep DIR]
    BF4PS_CHAOS_SECONDS=1200 BF4PS_CHAOS_KILLS=100 python -m pytest tests/chaos -s
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Coroutine
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import psycopg

from bf4ps import policy as policy_mod
from bf4ps.collector.identity import read_uuid
from bf4ps.collector.supervise import EXIT_FAILED
from bf4ps.db import migrate
from bf4ps.db.connect import Conn, connection, ensure_database, with_dbname
from bf4ps.domain import Platform, bf4sw_platform
from bf4ps.interactive.submit import RateLimited, UnknownSoldier, submit
from bf4ps.interactive.target import parse_target
from bf4ps.sim.battlelog.config import SimConfig
from bf4ps.sim.battlelog.server import SimProcess, spawn
from bf4ps.sim.bf4sw import population
from tests import load
from tests.chaos import checks
from tests.chaos.plan import KILL, KILL_SCHEDULER, PG_RESTART, ZOMBIE, Action, PlanSpec, make_plan
from tests.chaos.record import Kill, PgRestart, Record, SchedulerKill, Zombie
from tests.chaos.sampler import Sampler
from tests.chaos.watch import Watch, run_within
from tests.fleet import Fleet, sim_stats
from tests.pgctl import diagnose, private_server, start, stop
from tests.procs import as_remote

DB_DOWN = (psycopg.Error, OSError)
INTERACTIVE = "chaos-web-01"

# Run-time policy for a short run: active soldiers' detailed stats go stale within a minute (so
# soldiers are collected again and again), retries come back within seconds.
POLICY = {
    "freshness_detailed_seconds": "60",
    "interactive_min_age_seconds": "20",
    "backoff_seconds": "[5, 10, 20, 40]",
    "backoff_interactive_seconds": "[2, 5, 10, 20]",
    "backoff_throttle_seconds": "10",
    "working_set_background": "40",
}


@dataclass
class ChaosConfig:
    seconds: float = 90.0
    kills: int = 8
    scheduler_kills: int = 1
    pg_restarts: int = 2
    zombies: int = 1
    seed: int = 20261101
    soldiers: int = 1500
    collectors: int = 8  # background, two per egress
    quiet: float = 20.0
    warmup_successes: int = 10
    speed: float = 10.0
    interval: float = 1.0  # per-egress minimum spacing (the simulator's and the collectors')
    margin: float = 0.3  # BF4PS_EGRESS_SAFETY_MARGIN_SECONDS: jitter of ~12 processes on 2 cores
    lease: float = 8.0
    heartbeat: float = 1.0
    lost_after: float = 4.0
    tick: float = 0.5
    budget: int | None = 30  # fleet budget: requests per budget_window (None: off)
    budget_window: float = 10.0
    submit_every: float = 5.0  # the interactive egress can serve ~0.8 requests/s
    live_rate: float = 600.0
    sample_every: float = 5.0
    workdir: Path | None = None
    verbose: bool = False

    @property
    def egresses(self) -> int:
        return max(1, self.collectors // 2)

    @property
    def zombie_window(self) -> float:
        return self.lease + 30.0

    def names(self) -> list[str]:
        return [f"chaos-{i + 1:02d}" for i in range(self.collectors)]

    def plan(self) -> list[Action]:
        return make_plan(PlanSpec(self.seconds, self.kills, self.scheduler_kills,
                                  self.pg_restarts, self.zombies, self.names(), self.lost_after,
                                  self.zombie_window, self.seed))

    @classmethod
    def scaled(cls, seconds: float, **given: Any) -> ChaosConfig:
        """Defaults for a run of `seconds`: the short form's counts, grown with the length."""
        base: dict[str, Any] = {
            "seconds": seconds,
            "kills": max(8, int(seconds / 11)),
            "scheduler_kills": max(1, int(seconds // 150)),
            "pg_restarts": max(2, int(seconds // 120)),
            "zombies": max(1, int(seconds // 300)),
            "quiet": 20.0 if seconds <= 120 else 30.0,
        }
        base.update({k: v for k, v in given.items() if v is not None})
        return cls(**base)

    @classmethod
    def from_env(cls, **given: Any) -> ChaosConfig:
        env = os.environ
        seconds = float(env.get("BF4PS_CHAOS_SECONDS", "90"))

        def opt(name: str, kind: type) -> Any:
            raw = env.get(f"BF4PS_CHAOS_{name}")
            return kind(raw) if raw not in (None, "") else None

        return cls.scaled(seconds, kills=opt("KILLS", int), seed=opt("SEED", int),
                          scheduler_kills=opt("SCHEDULER_KILLS", int),
                          pg_restarts=opt("PG_RESTARTS", int), zombies=opt("ZOMBIES", int),
                          quiet=opt("QUIET", float), soldiers=opt("SOLDIERS", int), **given)


@dataclass
class Report:
    config: ChaosConfig
    plan: list[Action]
    record: Record
    outcome: checks.Outcome
    workdir: Path
    wall_seconds: float = 0.0
    figures: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.outcome.ok

    def text(self) -> str:
        r, c = self.record, self.config
        lines = [
            f"chaos run: seed {c.seed}, {c.seconds:.0f} s of chaos + {c.quiet:.0f} s quiet, "
            f"{len(self.plan)} planned actions, wall {self.wall_seconds:.0f} s",
            f"  logs: {self.workdir}",
        ]
        for key, value in self.figures.items():
            lines.append(f"  {key}: {value}")
        for note in r.notes:
            lines.append(f"  note: {note}")
        lines.append("invariants:")
        lines += ["  " + check.line() for check in self.outcome.checks]
        lines.append("RESULT: " + ("all invariants hold" if self.ok else "INVARIANTS BROKEN"))
        return "\n".join(lines)


class Chaos:
    def __init__(self, cfg: ChaosConfig) -> None:
        self.cfg = cfg
        self.plan = cfg.plan()
        self.rec = Record()
        self.sampler = Sampler()
        self.names = cfg.names()
        self.uuids: dict[str, UUID | None] = {}
        self.down: set[str] = set()  # collectors intentionally dead right now
        self.frozen: set[str] = set()
        self.thawed: set[str] = set()  # zombies resumed: they may end with EXIT_FAILED
        self.scheduler_down = False
        self.pg_down = False
        self.stopping = asyncio.Event()
        self.chaos_over = asyncio.Event()
        self.tasks: list[asyncio.Task[Any]] = []
        self.own: dict[str, subprocess.Popen[str]] = {}  # scheduler, bf4sw live
        self.url = ""
        self.sw_url = ""
        self.fleet: Fleet | None = None
        self.sim: SimProcess | None = None
        self.personas: list[tuple[int, Platform]] = []
        self.watch = Watch()  # the phase and the steps in flight (tests/chaos/watch.py)
        self.pgdata: Path | None = None

    # ------------------------------------------------------------ process plumbing

    def say(self, text: str) -> None:
        if self.cfg.verbose:
            t = time.time() - self.rec.started if self.rec.started else 0.0
            print(f"[chaos t+{t:7.1f}] {text}", flush=True)

    @property
    def data(self) -> Path:
        assert self.fleet is not None
        return self.fleet.data_dir

    def _spawn_own(self, name: str, *args: str) -> subprocess.Popen[str]:
        assert self.fleet is not None
        with open(self.data / f"{name}.log", "a") as log:
            proc = subprocess.Popen([sys.executable, "-m", "bf4ps.cli.main", *args],
                                    env=self.fleet.env(), stdout=log, stderr=subprocess.STDOUT,
                                    text=True)
        self.own[name] = proc
        return proc

    def _start_scheduler(self) -> None:
        self._spawn_own("scheduler", "scheduler", "run")

    def _start_bf4sw(self) -> None:
        self._spawn_own("bf4sw-live", "simulate", "bf4sw", "--soldiers", str(self.cfg.soldiers),
                        "--live", "--rate", str(self.cfg.live_rate), "--seed",
                        str(self.cfg.seed))

    def _source_of(self, name: str) -> str:
        if name == INTERACTIVE:
            return "127.0.0.60"
        return f"127.0.0.{40 + self.names.index(name) % self.cfg.egresses}"

    def _egress_of(self, name: str) -> str:
        if name == INTERACTIVE:
            return "chaos-eg-web"
        return f"chaos-eg-{self.names.index(name) % self.cfg.egresses + 1}"

    def _start_collector(self, name: str) -> None:
        assert self.fleet is not None
        lane = "interactive" if name == INTERACTIVE else "background"
        self.fleet.start(name, self._egress_of(name), self._source_of(name), lane)

    def _tail(self, name: str, n: int = 600) -> str:
        path = self.data / f"{name}.log"
        return path.read_text(errors="replace")[-n:] if path.exists() else ""

    def _task(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro)
        self.tasks.append(task)
        return task

    async def _sleep(self, seconds: float) -> bool:
        """Sleep unless the run is stopping; False when it is."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), max(0.0, seconds))
        return not self.stopping.is_set()

    # ------------------------------------------------------------ database helpers

    async def _count(self, sql: str, params: dict[str, Any] | None = None) -> int:
        async with connection(self.url) as conn:
            cur = await conn.execute(sql, params or {})  # type: ignore[arg-type]
            row = await cur.fetchone()
        value = next(iter(row.values())) if row else 0
        return int(value or 0)

    async def _wait_for(self, sql: str, params: dict[str, Any] | None = None, *,
                        timeout: float, poll: float = 0.25) -> bool:
        """Poll until the query's value is truthy, through database outages."""
        deadline = load.deadline(timeout)
        while not deadline.expired():
            try:
                if await self._count(sql, params):
                    return True
            except DB_DOWN:
                pass
            await asyncio.sleep(poll)
        return False

    # ------------------------------------------------------------ setup

    async def _prepare(self, server: str, workdir: Path) -> None:
        cfg = self.cfg
        await ensure_database(server, "bf4ps")
        await ensure_database(server, "bf4sw")
        self.url, self.sw_url = with_dbname(server, "bf4ps"), with_dbname(server, "bf4sw")
        await migrate.upgrade(self.url)
        async with connection(self.sw_url) as conn:
            await population.fill(conn, cfg.soldiers, cfg.seed)
        async with connection(self.url) as conn:
            for key, raw in POLICY.items():
                await policy_mod.set_value(conn, key, raw, by="chaos")
        rows = population.generate(cfg.soldiers, cfg.seed, datetime.now(UTC))
        known = {(r.persona_id, p) for r in rows if (p := bf4sw_platform(r.platform)) is not None}
        self.personas = sorted(known, key=lambda x: (x[0], x[1].value))
        self.sim = spawn(SimConfig(
            port=0, speed=cfg.speed, min_interval=cfg.interval, fleet_budget=cfg.budget,
            fleet_window=cfg.budget_window, fault_5xx=0.01, fault_missing_general=0.03,
            fault_html=0.005, fault_timeout=0.005, search_check_sum="required", seed=cfg.seed))
        as_remote(self.sim.process.pid)
        data = workdir / "data"
        data.mkdir(parents=True, exist_ok=True)
        env = {
            "BF4PS_BF4SW_DATABASE_URL": self.sw_url,
            "BF4PS_HEARTBEAT_SECONDS": f"{cfg.heartbeat}", "BF4PS_LEASE_SECONDS": f"{cfg.lease}",
            "BF4PS_HEARTBEAT_LOST_AFTER_SECONDS": f"{cfg.lost_after}",
            "BF4PS_IDLE_POLL_SECONDS": "0.3", "BF4PS_CLAIM_HORIZON_SECONDS": "0.5",
            "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": f"{cfg.interval}",
            "BF4PS_EGRESS_SAFETY_MARGIN_SECONDS": f"{cfg.margin}",
            "BF4PS_SCHEDULER_TICK_SECONDS": f"{cfg.tick}", "BF4PS_BF4SW_SYNC_SECONDS": "3",
            "BF4PS_SWEEP_SECONDS": "5", "BF4PS_LOG_LEVEL": "INFO",
        }
        if cfg.budget is not None:
            env |= {"BF4PS_FLEET_BUDGET_REQUESTS": str(cfg.budget),
                    "BF4PS_FLEET_BUDGET_WINDOW_SECONDS": f"{cfg.budget_window}"}
        self.fleet = Fleet(self.url, self.sim.base_url, data, env)

    async def _launch(self) -> None:
        self._start_scheduler()
        self._start_bf4sw()
        for name in [*self.names, INTERACTIVE]:
            self._start_collector(name)
        deadline = load.deadline(60)
        while not deadline.expired():
            self.uuids = {n: read_uuid(self.data, n) for n in [*self.names, INTERACTIVE]}
            if all(self.uuids.values()):
                break
            await asyncio.sleep(0.3)
        missing = [n for n, u in self.uuids.items() if u is None]
        if missing:
            raise RuntimeError(f"collectors never registered: {missing}: "
                               f"{self._tail(missing[0])}")
        if not await self._wait_for(
                "SELECT count(*) >= %(n)s FROM collection_events WHERE event_type = 'succeeded'",
                {"n": self.cfg.warmup_successes}, timeout=120):
            raise RuntimeError("no work got done during the warm-up: "
                               + self._tail("scheduler") + self._tail(self.names[0]))

    # ------------------------------------------------------------ the actions

    async def _kill(self, a: Action) -> None:
        assert self.fleet is not None
        name = a.target
        proc = self.fleet.procs[name]
        if name in self.down or name in self.frozen or proc.poll() is not None:
            self.rec.notes.append(f"kill of {name} at t+{a.at:.0f} skipped: not running")
            return
        self.down.add(name)
        try:
            with self.watch.step(f"kill -9 of {name} at t+{a.at:.0f} and its restart"):
                await self._kill_and_restart(a, name, proc)
        finally:
            self.down.discard(name)

    async def _kill_and_restart(self, a: Action, name: str, proc: subprocess.Popen[str]) -> None:
        if a.mid_job:
            await self._until_holding(name)
        kill = Kill(name, self.uuids.get(name), time.time())
        proc.send_signal(signal.SIGKILL)
        await asyncio.to_thread(proc.wait)
        self.rec.kills.append(kill)
        self.say(f"kill -9 {name} (down {a.down_for:.1f} s)")
        await asyncio.sleep(a.down_for)
        self._start_collector(name)
        kill.restarted_at = time.time()

    async def _until_holding(self, name: str, timeout: float = 3.0) -> None:
        """Wait (a little) until the collector holds a job, claimed or with its request in
        flight, so that the kill leaves a lease to recover."""
        deadline = time.monotonic() + timeout
        with contextlib.suppress(*DB_DOWN):
            async with connection(self.url) as conn:
                while time.monotonic() < deadline:
                    cur = await conn.execute("SELECT 1 FROM collection_jobs WHERE "
                                             "collector_uuid = %s", [self.uuids.get(name)])
                    if await cur.fetchone() is not None:
                        return
                    await asyncio.sleep(0.02)

    async def _kill_scheduler(self, a: Action) -> None:
        proc = self.own["scheduler"]
        self.scheduler_down = True
        try:
            k = SchedulerKill(time.time())
            proc.send_signal(signal.SIGKILL)
            await asyncio.to_thread(proc.wait)
            self.rec.scheduler_kills.append(k)
            self.say(f"kill -9 scheduler (down {a.down_for:.1f} s)")
            await asyncio.sleep(a.down_for)
            self._start_scheduler()
            k.restarted_at = time.time()
        finally:
            self.scheduler_down = False

    async def _pg_restart(self, pgdata: Path) -> None:
        waited = 0.0
        while self.frozen and waited < 60:  # never under a zombie: see plan.py
            await asyncio.sleep(0.5)
            waited += 0.5
        if waited:
            self.rec.notes.append(f"a PostgreSQL restart waited {waited:.1f} s for a zombie")
        r = PgRestart(time.time())
        self.rec.pg_restarts.append(r)
        n, at = len(self.rec.pg_restarts), r.began - (self.rec.started or r.began)
        self.pg_down = True
        self.say("pg_ctl restart -m fast")
        stuck, times = None, []
        try:
            began = time.monotonic()
            with self.watch.step(f"PostgreSQL restart {n} (t+{at:.0f}): pg_ctl stop -m fast"):
                options, stuck = await asyncio.to_thread(stop, pgdata)
            times.append(time.monotonic() - began)
            with self.watch.step(f"PostgreSQL restart {n} (t+{at:.0f}): pg_ctl start"):
                await asyncio.to_thread(start, pgdata, options)
            times.append(time.monotonic() - began - times[0])
        finally:
            r.ended = time.time()
            self.pg_down = False
            self.rec.notes.append(self._restart_note(n, at, times, stuck))
        self.say(f"PostgreSQL back after {r.ended - r.began:.1f} s")

    @staticmethod
    def _restart_note(n: int, at: float, times: list[float], stuck: str | None) -> str:
        """How a restart went: each part's time; a fast shutdown made immediate (a crash and
        recovery) keeps what held it (the server's processes and its log's tail)."""
        parts = [f"stop {times[0]:.1f} s" if times else "stop did not end",
                 f"start {times[1]:.1f} s" if len(times) > 1 else "start did not end"]
        how = f"made immediate: {stuck}" if stuck else "fast"
        return f"PostgreSQL restart {n} at t+{at:.0f}: {', '.join(parts)}, shutdown {how}"

    async def _zombie(self, a: Action) -> None:
        with self.watch.step(f"zombie {a.target} (planned at t+{a.at:.0f})"):
            await self._zombie_run(a)

    async def _zombie_run(self, a: Action) -> None:
        assert self.fleet is not None
        name = a.target
        z = Zombie(name, self.uuids.get(name), time.time())
        self.rec.zombies.append(z)
        self.frozen.add(name)
        pid: int | None = None
        try:
            pid = await self._freeze(z)
            if pid is None:
                return
            self.say(f"zombie {name}: frozen on job {z.job_id} ({z.resource})")
            if not await self._wait_for(
                    "SELECT count(*) FROM collection_events WHERE event_type = 'lease_expired' "
                    "AND lease_token = %(t)s", {"t": z.lease_token},
                    timeout=self.cfg.lease + 20):
                z.error = "its lease was not reclaimed while it was frozen"
                return
            z.reclaimed_while_frozen = True
            # let the reclaiming collector commit newer statistics first, if it gets to it
            await self._wait_for(
                "SELECT count(*) FROM collection_events WHERE job_id = %(j)s AND event_type IN "
                "('succeeded', 'failed') AND lease_token <> %(t)s",
                {"j": z.job_id, "t": z.lease_token}, timeout=6)
        finally:
            if pid is not None:
                self.thawed.add(name)
                os.kill(pid, signal.SIGCONT)
                z.resumed_at = time.time()
            self.frozen.discard(name)
        self.say(f"zombie {name}: resumed after {z.resumed_at - (z.frozen_at or 0):.1f} s")
        if not await self._wait_for(
                "SELECT count(*) FROM collection_events WHERE event_type = "
                "'stale_finalize_rejected' AND lease_token = %(t)s AND collector_name = %(n)s",
                {"t": z.lease_token, "n": name}, timeout=40):
            z.error = "no stale_finalize_rejected after SIGCONT: " + self._tail(name, 1500)

    async def _freeze(self, z: Zombie) -> int | None:
        """SIGSTOP the collector while its request is on the wire (the simulator has seen it
        arrive) and no transaction is open; the pid (still stopped), or None (z.error says why).

        Not earlier: a stop before the request leaves is handled by the socket-level slot check
        (tests/chaos/test_late_send.py), except in its last steps before the socket write (the
        remaining limit in docs/architecture.md), which a random SIGSTOP could still hit."""
        assert self.fleet is not None and self.sim is not None
        ip = self._source_of(z.name)
        deadline = load.deadline(60)  # it may be down or idle a while (kills, pacing)
        async with httpx.AsyncClient(timeout=5) as web:
            while not deadline.expired():
                try:
                    async with connection(self.url) as conn:
                        while not deadline.expired():
                            pid = await self._freeze_once(conn, web, z, ip)
                            if pid is not None:
                                return pid
                except DB_DOWN:
                    await asyncio.sleep(0.5)
        z.error = (f"never caught with a request on the wire and no transaction open "
                   f"({z.freeze_attempts} SIGSTOPs)")
        return None

    async def _freeze_once(self, conn: Conn, web: httpx.AsyncClient, z: Zombie,
                           ip: str) -> int | None:
        assert self.fleet is not None and self.sim is not None
        cur = await conn.execute(
            "SELECT job_id, lease_token, soldier_id, resource, "
            "extract(epoch FROM started_at)::float8 AS started FROM collection_jobs "
            "WHERE collector_uuid = %s AND status = 'running'", [z.uuid])
        row = await cur.fetchone()
        if row is None:
            await asyncio.sleep(0.005)
            return None
        per_ip = (await web.get(self.sim.url("/__sim/stats"))).json()["by_ip"].get(ip, {})
        # its request arrived: the last arrival from its address is right after its slot (the
        # other collector on the egress sends a full interval later)
        if not row["started"] - 0.05 <= per_ip.get("last_at", 0.0) <= row["started"] + 1.0:
            return None
        proc = self.fleet.procs[z.name]
        proc.send_signal(signal.SIGSTOP)
        stopped_at = time.time()
        z.freeze_attempts += 1
        clean = False
        try:
            await asyncio.sleep(0.3)
            clean = await self._frozen_cleanly(conn, row, z.uuid)
        finally:
            if not clean:
                proc.send_signal(signal.SIGCONT)
        if not clean:
            await asyncio.sleep(0.5)
            return None
        z.frozen_at = stopped_at
        z.job_id, z.lease_token = row["job_id"], row["lease_token"]
        z.soldier_id, z.resource = row["soldier_id"], row["resource"]
        return proc.pid

    @staticmethod
    async def _frozen_cleanly(conn: Conn, row: dict[str, Any], uuid: UUID | None) -> bool:
        """Still running the same lease, and neither its job nor its registry row is locked
        (a process stopped inside a transaction would hold them: not the zombie we want)."""
        try:
            async with conn.transaction():
                cur = await conn.execute(
                    "SELECT job_id FROM collection_jobs WHERE job_id = %s AND lease_token = %s "
                    "AND status = 'running' FOR UPDATE NOWAIT",
                    [row["job_id"], row["lease_token"]])
                if await cur.fetchone() is None:
                    return False
                await conn.execute("SELECT 1 FROM collectors WHERE collector_uuid = %s "
                                   "FOR UPDATE NOWAIT", [uuid])
                raise _Rollback
        except _Rollback:
            return True
        except psycopg.errors.LockNotAvailable:
            return False

    # ------------------------------------------------------------ background activity

    async def _supervise(self) -> None:
        assert self.fleet is not None
        while await self._sleep(0.5):
            for name in [*self.names, INTERACTIVE]:
                proc = self.fleet.procs.get(name)
                if name in self.down or name in self.frozen or proc is None:
                    continue
                if proc.poll() is not None and name in self.thawed and (
                        proc.returncode == EXIT_FAILED):
                    # a zombie that found its lease gone ends after its fenced finalize, as
                    # supervision has it (docs/architecture.md "Supervision"); restart it
                    self.thawed.discard(name)
                    self.rec.notes.append(f"zombie {name} exited {EXIT_FAILED} after its "
                                          "fenced finalize (supervised) and was restarted")
                    self._start_collector(name)
                elif proc.poll() is not None:
                    self.rec.unexpected_exits.append(
                        f"{name} exited {proc.returncode} at t+{time.time() - self.rec.started:.0f}"
                        f" s: {self._tail(name)!r}")
                    self._start_collector(name)
            live = self.own["bf4sw-live"]
            if live.poll() is not None:  # its single connection dies with every restart
                self.rec.bf4sw_restarts += 1
                if not await self._sleep(1.0):
                    break
                self._start_bf4sw()
            sched = self.own["scheduler"]
            if not self.scheduler_down and sched.poll() is not None:
                self.rec.unexpected_exits.append(
                    f"scheduler exited {sched.returncode}: {self._tail('scheduler')!r}")
                self._start_scheduler()

    async def _submit_loop(self) -> None:
        rng = random.Random(self.cfg.seed + 7)
        while not self.chaos_over.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.chaos_over.wait(),
                                       self.cfg.submit_every * rng.uniform(0.5, 1.5))
            if self.chaos_over.is_set():
                return
            key = f"chaos-client-{rng.randrange(8)}"
            if rng.random() < 0.65:
                persona, platform = rng.choice(self.personas)
                kind, args = "persona", {"persona_id": persona, "platform": platform}
            else:
                name = f"Chaos{rng.randrange(10**6):06d}"
                kind = "name"
                args = {"name": name, "platform": rng.choice(["pc", "ps4", "xboxone"])}
            try:
                async with connection(self.url) as conn:
                    pol = await policy_mod.load(conn)
                    sub = await submit(conn, parse_target(**args), client_key=key, policy=pol)
                self.rec.submissions[f"{kind}: {sub.status}"] += 1
            except RateLimited:
                self.rec.submissions[f"{kind}: rate limited"] += 1
            except UnknownSoldier:
                self.rec.submissions[f"{kind}: unknown soldier"] += 1
            except DB_DOWN:
                self.rec.submissions[f"{kind}: database unavailable"] += 1

    async def _sample_loop(self) -> None:
        while await self._sleep(self.cfg.sample_every):
            await self._sample()

    async def _sample(self) -> None:
        try:
            async with connection(self.url) as conn:
                await self.sampler.sample(conn)
        except DB_DOWN:
            pass

    # ------------------------------------------------------------ the run

    async def _chaos(self, pgdata: Path) -> None:
        start = time.monotonic()
        self.rec.started = time.time()
        actions: list[asyncio.Task[Any]] = []
        for a in self.plan:
            await asyncio.sleep(max(0.0, start + a.at - time.monotonic()))
            if a.kind == KILL:
                actions.append(asyncio.create_task(self._kill(a)))
            elif a.kind == KILL_SCHEDULER:
                actions.append(asyncio.create_task(self._kill_scheduler(a)))
            elif a.kind == PG_RESTART:
                actions.append(asyncio.create_task(self._pg_restart(pgdata)))
            elif a.kind == ZOMBIE:
                actions.append(asyncio.create_task(self._zombie(a)))
        await asyncio.sleep(max(0.0, start + self.cfg.seconds - time.monotonic()))
        await asyncio.gather(*actions)
        self.rec.chaos_ended = time.time()
        self.chaos_over.set()

    async def _stop_all(self) -> None:
        assert self.fleet is not None and self.sim is not None
        codes = await asyncio.to_thread(self.fleet.stop_all, 60)
        for name in ("scheduler", "bf4sw-live"):
            proc = self.own[name]
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    codes[name] = await asyncio.to_thread(proc.wait, 30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    codes[name] = -9
            elif name == "scheduler":
                codes[name] = proc.returncode
        self.rec.exit_codes = codes
        self.rec.stopped = time.time()
        self.rec.sim = sim_stats(self.sim)

    async def _explain_violations(self) -> None:
        """For each per-IP violation the simulator kept: the egress's ledger slots around it, and
        how long after its slot the previous request really arrived (a request leaves at most
        margin/2 after its slot; anything later was sent after the on-time check)."""
        sim: dict[str, Any] = self.rec.sim
        recent = [v for v in sim.get("violations", {}).get("recent", [])
                  if v.get("rule") == "interval"]
        egress_of = {self._source_of(n): n for n in [*self.names, INTERACTIVE]}
        who = {u: n for n, u in self.uuids.items()}
        async with connection(self.url) as conn:
            for v in recent[:5]:
                name = egress_of.get(v["ip"])
                if name is None:
                    continue
                egress = self._egress_of(name)
                cur = await conn.execute(
                    "SELECT extract(epoch FROM slot_at)::float8 AS slot, collector_uuid "
                    "FROM request_ledger WHERE egress_key = %s AND slot_at BETWEEN "
                    "to_timestamp(%s) AND to_timestamp(%s) ORDER BY slot_at",
                    [egress, v["at"] - 4, v["at"] + 0.5])
                slots = [(r["slot"], who.get(r["collector_uuid"], "?"))
                         for r in await cur.fetchall()]
                prev = v["at"] - (self.cfg.interval - v["early_by_seconds"])
                before = [t for t, _ in slots if t <= prev]
                late = f"{prev - before[-1]:.3f} s" if before else "?"
                shown = ", ".join(f"{t - v['at']:+.2f} s {n}" for t, n in slots)
                self.rec.notes.append(
                    f"violation at {v['ip']} ({egress}) t+{v['at'] - self.rec.started:.1f} s, "
                    f"early by {v['early_by_seconds']:.3f} s: the previous request arrived "
                    f"{late} after the latest slot before it (allowed: {self.cfg.margin / 2:.2f}"
                    f" s); slots relative to the violating arrival: {shown}")

    def _kill_leftovers(self) -> None:
        fleet = self.fleet.procs.values() if self.fleet is not None else ()
        for proc in [*self.own.values(), *fleet]:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGCONT)
                proc.kill()
                proc.wait()
        if self.sim is not None:
            self.sim.stop()

    async def run(self, workdir: Path) -> Report:
        began = time.monotonic()
        try:
            with private_server() as (server, pgdata):
                self.pgdata = pgdata
                try:
                    self.watch.enter("setup: the database, the simulators")
                    await self._prepare(server, workdir)
                    self.watch.enter("launch: the fleet's warm-up")
                    await self._launch()
                    self._task(self._supervise())
                    self._task(self._sample_loop())
                    submitter = self._task(self._submit_loop())
                    self.watch.enter("chaos: the plan's faults")
                    await self._chaos(pgdata)
                    await submitter
                    self.say(f"quiet for {self.cfg.quiet:.0f} s")
                    self.watch.enter("quiet period")
                    await asyncio.sleep(self.cfg.quiet)
                    self.stopping.set()
                    self.watch.enter("stop: the loops, the fleet, the scheduler")
                    await asyncio.gather(*self.tasks)
                    await self._sample()
                    self.rec.samples = self.sampler.samples
                    self.rec.sample_errors = self.sampler.problems
                    await self._stop_all()
                    await self._explain_violations()
                    self.watch.enter("checks: the invariants")
                    limits = checks.Limits(self.cfg.lease, self.cfg.tick, self.cfg.lost_after,
                                           self.cfg.interval, self.cfg.margin,
                                           self.cfg.budget_window)
                    async with connection(self.url) as conn:
                        outcome = await checks.evaluate(conn, self.rec, limits, self.cfg.budget)
                finally:
                    self.stopping.set()
                    for task in self.tasks:
                        task.cancel()
                    await asyncio.gather(*self.tasks, return_exceptions=True)
                    self._kill_leftovers()
        finally:
            if self.fleet is not None:
                with contextlib.suppress(ValueError):
                    from tests import fleet as fleet_mod
                    fleet_mod.LIVE.remove(self.fleet)
        report = Report(self.cfg, self.plan, self.rec, outcome, workdir,
                        time.monotonic() - began)
        report.figures = self._figures(outcome)
        return report

    def _figures(self, outcome: checks.Outcome) -> dict[str, Any]:
        r = self.rec
        sim: dict[str, Any] = r.sim  # type: ignore[assignment]
        down = [round(p.ended - p.began, 1) for p in r.pg_restarts if p.ended]
        return {
            "collector kills (kill -9)": len(r.kills),
            "collectors killed long enough to be marked lost": sum(
                1 for k in r.kills if (k.restarted_at or 0) - k.at > self.cfg.lost_after),
            "scheduler kills": len(r.scheduler_kills),
            "PostgreSQL restarts (downtime s)": f"{len(r.pg_restarts)} {down}",
            "zombies": ", ".join(
                f"{z.name} on job {z.job_id} ({z.resource}) frozen "
                f"{(z.resumed_at or 0) - (z.frozen_at or 0):.1f} s after {z.freeze_attempts} "
                f"SIGSTOP(s)" if z.frozen_at else f"{z.name}: {z.error}" for z in r.zombies),
            "requests served (simulator)": sim.get("requests_total"),
            "outcomes at the wire": {k: v for k, v in sim.get("by_outcome", {}).items() if v},
            "requests per address": {ip: v.get("count") for ip, v in sim.get("by_ip", {}).items()},
            "rate-limit violations (simulator)": sim.get("violations", {}).get("total"),
            "fleet budget": (f"{self.cfg.budget} per {self.cfg.budget_window:.0f} s, max in a "
                             f"window {sim.get('fleet', {}).get('max_in_window')}, violations "
                             f"{sim.get('fleet', {}).get('violations')}"
                             if self.cfg.budget else "off"),
            **outcome.figures,
            "interactive submissions": dict(sorted(r.submissions.items())),
            "bf4sw live restarts": r.bf4sw_restarts,
            "stats samples": r.samples,
        }


OVERHEAD_SECONDS = 300.0  # setup, warm-up, stop and checks on a quiet machine


class _Rollback(Exception):
    pass


def deadline_seconds(cfg: ChaosConfig) -> float:
    """The tier's own deadline for one run: setup and warm-up, the chaos, the quiet period, the
    stop and the checks, scaled by the load (the test's own timeout is longer: past this one the
    run fails with the watch's report, never with a bare timeout)."""
    return load.scaled(cfg.seconds + cfg.quiet + OVERHEAD_SECONDS)


async def run_chaos(cfg: ChaosConfig) -> Report:
    keep = cfg.workdir is not None
    workdir = cfg.workdir or Path(tempfile.mkdtemp(prefix="bf4ps-chaos-"))
    chaos, began = Chaos(cfg), time.monotonic()
    deadline = deadline_seconds(cfg)
    done = await run_within(chaos.run(workdir), deadline, chaos.watch,
                            lambda: diagnose(chaos.pgdata) if chaos.pgdata else "")
    if isinstance(done, Report):
        report = done
    else:  # past the deadline: what was running and the stuck step, as a failed check
        overdue = checks.Outcome([checks.Check("the run ends within its deadline", False, done)])
        report = Report(cfg, chaos.plan, chaos.rec, overdue, workdir, time.monotonic() - began)
    if not keep and report.ok:
        shutil.rmtree(workdir, ignore_errors=True)
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.chaos.harness", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=90.0, help="length of the chaos phase")
    ap.add_argument("--kills", type=int, help="collector kills (default: seconds / 11, ≥ 8)")
    ap.add_argument("--scheduler-kills", type=int)
    ap.add_argument("--pg-restarts", type=int)
    ap.add_argument("--zombies", type=int)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--soldiers", type=int)
    ap.add_argument("--quiet", type=float, help="seconds without chaos before the stop")
    ap.add_argument("--no-budget", action="store_true", help="run without a fleet budget")
    ap.add_argument("--keep", type=Path, help="working directory (logs); kept afterwards")
    ap.add_argument("--plan", action="store_true", help="print the plan and exit")
    ap.add_argument("--json", action="store_true", help="also print the figures as JSON")
    ap.add_argument("-v", "--verbose", action="store_true", help="narrate the actions")
    args = ap.parse_args(argv)
    cfg = ChaosConfig.scaled(args.seconds, kills=args.kills, scheduler_kills=args.scheduler_kills,
                             pg_restarts=args.pg_restarts, zombies=args.zombies, seed=args.seed,
                             soldiers=args.soldiers, quiet=args.quiet, workdir=args.keep,
                             verbose=args.verbose)
    if args.no_budget:
        cfg = replace(cfg, budget=None)
    if args.plan:
        for action in cfg.plan():
            print(action.describe())
        return 0
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    report = asyncio.run(run_chaos(cfg))
    print(report.text(), flush=True)
    if args.json:
        conf = {f.name: getattr(cfg, f.name) for f in fields(cfg) if f.name != "workdir"}
        print(json.dumps({"config": conf, "figures": report.figures,
                          "checks": [asdict(c) for c in report.outcome.checks],
                          "ok": report.ok}, default=str, indent=2))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
