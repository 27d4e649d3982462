"""The collector process: register, heartbeat, and serve one job at a time until told to stop.

SIGTERM/SIGINT: the request in flight finishes and is finalized, then the process exits 0.
Drained: keeps heartbeating, claims nothing. Disabled or retired: exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from datetime import UTC, datetime, timedelta

from bf4ps import __version__
from bf4ps import policy as policy_mod
from bf4ps.battlelog.client import BattlelogClient
from bf4ps.collector.heartbeat import DB_ERRORS, Heartbeat
from bf4ps.collector.identity import Wanted, register
from bf4ps.collector.restore_guard import RestoreGuard
from bf4ps.collector.slots import sleep_until
from bf4ps.collector.work import Context, run_job
from bf4ps.db import compat
from bf4ps.db.connect import Conn, open_pool, resolve_url
from bf4ps.db.queries import q
from bf4ps.domain import Lane
from bf4ps.gates import admission
from bf4ps.gates.admission import GateConfig, Wait
from bf4ps.queue import claim as qclaim
from bf4ps.queue import events
from bf4ps.queue.events import EventType
from bf4ps.queue.jobs import CollectorRef
from bf4ps.settings import Settings

log = logging.getLogger(__name__)


def gate_config(settings: Settings) -> GateConfig:
    return GateConfig(
        min_interval=settings.egress_min_interval_seconds,
        window_requests=settings.egress_window_requests,
        window_seconds=settings.egress_window_seconds if settings.egress_window_requests
        else None,
        margin=settings.egress_safety_margin_seconds, horizon=settings.claim_horizon_seconds,
        lease_seconds=settings.lease_seconds,
        connect_lead=settings.battlelog_connect_lead_seconds)


async def configure_gates(conn: Conn, settings: Settings, egress_key: str) -> None:
    cfg = gate_config(settings)
    await conn.execute(q("gate_ensure"), {
        "egress_key": egress_key, "min_interval": cfg.min_interval,
        "window_requests": cfg.window_requests, "window_seconds": cfg.window_seconds})
    if settings.fleet_budget_requests is not None:
        await conn.execute(q("fleet_configure"), {
            "requests": settings.fleet_budget_requests,
            "window_seconds": settings.fleet_budget_window_seconds})


class Collector:
    def __init__(self, settings: Settings, want: Wanted, *, replace: bool = False) -> None:
        self.settings = settings
        self.want = want
        self.replace = replace
        self.stop = asyncio.Event()
        self.guard = RestoreGuard.load(settings.data_dir, want.name)

    def request_stop(self) -> None:
        if not self.stop.is_set():
            log.info("stop requested: finishing the request in flight")
        self.stop.set()

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop)
        url = await resolve_url(self.settings)
        await compat.require(url)
        pool = await open_pool(url, max_size=3, min_size=2)
        try:
            async with pool.connection() as conn:
                me = await register(conn, self.settings.data_dir, self.want,
                                    replace=self.replace)
                await configure_gates(conn, self.settings, me.egress_key)
                abandoned = await qclaim.expire_abandoned(conn, me)
            log.info("collector %s (%s) started: lane %s, egress %s", me.name,
                     me.collector_uuid, me.lane.value, me.egress_key)
            if abandoned:
                log.info("jobs %s of the previous process: their leases ended now, so they "
                         "are reclaimed at once", abandoned)
            return await self._serve(pool, me)
        finally:
            await pool.close()

    async def _serve(self, pool, me: CollectorRef) -> int:  # type: ignore[no-untyped-def]
        s = self.settings
        beat = Heartbeat(pool, me, s.heartbeat_seconds, s.lease_seconds)
        beat_task = asyncio.create_task(beat.run(self.stop))
        async with BattlelogClient(s.battlelog_base_url, s.battlelog_user_agent,
                                   s.battlelog_timeout_seconds, self.want.source_address,
                                   connect_lead=s.battlelog_connect_lead_seconds) as c:
            ctx = Context(me, c, gate_config(s), beat, s.throttle_cooldown_seconds,
                          s.throttle_cooldown_max_seconds)
            await self._loop(pool, ctx)
        self.stop.set()
        await beat_task
        await self._stopped(pool, me)
        return 0

    async def _loop(self, pool, ctx: Context) -> None:  # type: ignore[no-untyped-def]
        chain: int | None = None
        while not self.stop.is_set():
            flags = ctx.heartbeat.flags
            if not flags.enabled or flags.retired:
                log.info("collector %s is %s: exiting", ctx.me.name,
                         "retired" if flags.retired else "disabled")
                return
            if flags.drained or ctx.heartbeat.lost_since is not None:
                await self._pause(self.settings.idle_poll_seconds)
                continue
            try:
                chain = await self._step(pool, ctx, chain)
            except DB_ERRORS as exc:
                log.warning("database unavailable (%s); waiting", exc)
                await self._pause(2.0)

    async def _step(self, pool, ctx: Context, chain: int | None) -> int | None:  # type: ignore[no-untyped-def]
        async with pool.connection() as conn:
            held = await self.guard.hold(conn)
            if held is not None:  # after a restore: nothing is sent until the ledger is whole
                await sleep_until(min(held, datetime.now(UTC) + timedelta(
                    seconds=self.settings.idle_poll_seconds)), self.stop)
                return chain
            policy = await policy_mod.load(conn)
            got = await admission.admit(conn, ctx.me, ctx.gate, policy, soldier_id=chain)
            if not isinstance(got, Wait):
                self.guard.sent(got.slot)
            if isinstance(got, Wait):
                if chain is not None and got.idle:
                    return None  # the chained soldier is done: back to the queue
                until = got.until or datetime.now(UTC) + timedelta(
                    seconds=self.settings.idle_poll_seconds)
                await sleep_until(until, self.stop)
                return chain
            ctx.resolved_soldier = None
            await run_job(conn, ctx, got, policy, self.stop)
        if ctx.me.lane is not Lane.INTERACTIVE:
            return None
        # an interactive full collection chains the same soldier's other resources
        return ctx.resolved_soldier if got.job.is_lookup else got.job.soldier_id

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stop.wait(), seconds)

    async def _stopped(self, pool, me: CollectorRef) -> None:  # type: ignore[no-untyped-def]
        try:
            async with pool.connection(timeout=10) as conn, conn.transaction():
                await conn.execute(q("collector_stopped"), {"collector_uuid": me.collector_uuid})
                await events.record(conn, EventType.COLLECTOR_STOPPED, **me.event_fields(),
                                    lane=me.lane.value)
        except DB_ERRORS as exc:
            log.warning("could not record the stop: %s", exc)


def wanted(name: str, lane: Lane, egress: str, hostname: str,
           source_address: str | None) -> Wanted:
    return Wanted(name, hostname, lane, egress, source_address, __version__)
