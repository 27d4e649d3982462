"""The collector process: register, heartbeat, and serve one job at a time until told to stop.

SIGTERM/SIGINT: the request in flight finishes and is finalized, then the process exits 0.
Drained, or its clock beyond the skew bound (clock.py): keeps heartbeating, claims nothing.
Disabled or retired: exits. Both reach the loop within one heartbeat period, whatever it waits
for. A side task (the heartbeat) that dies, or a lease the heartbeat finds lost, ends the loop
and the process exits non-zero (supervise.py). The fleet's pacing and budget are the
database's (fleet/seed.py).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from datetime import timedelta
from functools import partial
from typing import Any

from psycopg_pool import AsyncConnectionPool

from bf4ps import __version__
from bf4ps import policy as policy_mod
from bf4ps.battlelog.client import BattlelogClient
from bf4ps.collector.clock import ClockGuard, DbClock
from bf4ps.collector.heartbeat import Heartbeat
from bf4ps.collector.held import Held, Phase
from bf4ps.collector.identity import Wanted, register
from bf4ps.collector.restore_guard import RestoreGuard, receipt_file
from bf4ps.collector.session import BattlelogSession
from bf4ps.collector.session import stopped as session_stopped
from bf4ps.collector.slots import unsent
from bf4ps.collector.supervise import EXIT_FAILED, Failure, supervise
from bf4ps.collector.testhook import PausePoints
from bf4ps.collector.work import Context, run_job
from bf4ps.db import compat, startup
from bf4ps.db.connect import DB_ERRORS, Conn, open_pool, resolve_url
from bf4ps.db.queries import q
from bf4ps.domain import Lane
from bf4ps.events import log as events
from bf4ps.events.log import EventType
from bf4ps.fleet.seed import seed
from bf4ps.gates import admission
from bf4ps.gates.admission import Admitted, Slot, Wait
from bf4ps.queue import claim as qclaim
from bf4ps.queue.finalize import NextClaim
from bf4ps.queue.jobs import ClaimedJob, CollectorRef
from bf4ps.settings import SendTimings, Settings
from bf4ps.waiting import sleep_unless_stopped

log = logging.getLogger(__name__)
Pool = AsyncConnectionPool[Conn]
STOP_TIMEOUT = 5.0  # how long the last database writes of a stopping collector may wait


class Collector:
    def __init__(self, settings: Settings, want: Wanted, *, replace: bool = False) -> None:
        self.settings = settings
        self.want = want
        self.replace = replace
        self.stop = asyncio.Event()
        self.wake = asyncio.Event()  # stop, or the registry's flags changed: waits end early
        self.pause = PausePoints.of(settings)
        self.clock = DbClock()
        self.guard: ClockGuard | None = None
        self.restore = RestoreGuard(receipt_file(settings.data_dir, want.name)
                                    if settings.restore_receipt_file else None)
        self.policy = policy_mod.Policy()  # the last one loaded (a chained claim's budget)

    def request_stop(self) -> None:
        if not self.stop.is_set():
            log.info("stop requested: finishing the request in flight")
        self.stop.set()
        self.wake.set()

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop)
        url = await resolve_url(self.settings, service=True)
        # a database restarting or failing over while this starts is waited out (db/startup.py)
        started = await startup.retrying(lambda: self._start(url), self.stop,
                                         give_up_after=self.settings.db_start_wait_seconds,
                                         what="collector start")
        if started is None:
            log.info("stopped before the database was reachable")
            return 0
        pool, me = started
        try:
            return await self._serve(pool, me)
        finally:
            await pool.close()

    async def _start(self, url: str) -> tuple[AsyncConnectionPool[Conn], CollectorRef]:
        """The schema check, the pool, registration, seeds and the first clock check; the
        pool is closed again when any of them fails."""
        await compat.require(url)
        pool = await open_pool(url, max_size=3, min_size=2)
        try:
            async with pool.connection() as conn:
                me = await register(conn, self.settings.data_dir, self.want,
                                    replace=self.replace)
                await seed(conn, self.settings, me)
                abandoned = await qclaim.expire_abandoned(conn, me)
                self.guard = ClockGuard(self.clock, me, self.settings.clock_skew_limit_seconds,
                                        self.settings.clock_check_seconds)
                sample = await self.guard.check(conn)
        except BaseException:
            await pool.close()
            raise
        log.info("collector %s (%s) started: lane %s, egress %s, clock %+.4f s off the "
                 "database's", me.name, me.collector_uuid, me.lane.value, me.egress_key,
                 sample.offset)
        if abandoned:
            log.info("jobs %s of the previous process: their leases ended now, so they "
                     "are reclaimed at once", abandoned)
        return pool, me

    async def _serve(self, pool: Pool, me: CollectorRef) -> int:
        s = self.settings
        beat = Heartbeat(pool, me, s.heartbeat_seconds, s.lease_seconds,
                         on_change=self.wake.set)
        async with BattlelogClient(s.battlelog_base_url, s.battlelog_user_agent,
                                   s.battlelog_timeout_seconds, self.want.source_address,
                                   connect_lead=s.battlelog_connect_lead_seconds,
                                   answer_timeout=s.battlelog_answer_timeout_seconds) as c:
            logged_in = BattlelogSession(s.battlelog_session_file, c)
            logged_in.load()
            gate = SendTimings.from_settings(s)
            ctx = Context(me, c, gate, beat, s.throttle_cooldown_seconds,
                          s.throttle_cooldown_max_seconds, pool=pool, pause=self.pause,
                          clock=self.clock, chain=partial(self._chain_next, me, beat, gate),
                          session=logged_in)
            # the heartbeat beats until the loop has ended, not until the stop request: the
            # request in flight at a SIGTERM may outlast the lease, and its finalize needs it
            loop_ended = asyncio.Event()
            failure = await supervise(self._loop(pool, ctx),
                                      {"heartbeat": beat.run(loop_ended)}, loop_ended)
        if failure is None and beat.lost is not None:  # the loop stopped after the late job
            failure = Failure("heartbeat", beat.lost)
            log.error("collector failing: %s; the process exits", failure)
        if failure is not None:
            await self._last_check(pool)
            await self._let_go(pool, ctx, ctx.holding.take())
            await self._stopped(pool, me, failure)
            return EXIT_FAILED
        await self._let_go(pool, ctx, ctx.holding.take(), "shutdown")
        await self._stopped(pool, me)
        return 0

    async def _last_check(self, pool: Pool) -> None:
        """A failing process shows the restore guard its mark once more before it exits: a
        lease lost under it may be the first sign of a restore, and what it remembers of the
        database goes with the process (docs/architecture.md "The restore guard")."""
        try:
            async with pool.connection(timeout=STOP_TIMEOUT) as conn:
                await self.restore.hold(conn)
        except DB_ERRORS as exc:
            log.warning("the restore guard's last check failed: %s", exc)

    def _chain_next(self, me: CollectorRef, beat: Heartbeat, gate: SendTimings
                    ) -> NextClaim | None:
        """The next claim a background success makes in its own transaction (the admission's
        look on the server first), when the loop would claim next anyway: not stopping, not
        drained, disabled or retired, heartbeats and the clock fine, no clock check due. The
        interactive lane chains a soldier's resources instead (its next claim needs the
        soldier a look-up finds) and claims on its own."""
        flags = beat.flags
        if (me.lane is Lane.INTERACTIVE or self.stop.is_set() or beat.lost is not None
                or beat.lost_since is not None or not flags.enabled or flags.retired
                or flags.drained or self.guard is None or self.guard.skewed
                or self.clock.due(self.guard.period)):
            return None
        return NextClaim(me.lane, gate.lease_seconds, gate=gate)

    async def _let_go(self, pool: Pool, ctx: Context, held: Held | None,
                      why: str = "collector_failed") -> None:
        """A claimed job not yet sent goes back to the queue (a chained one's counted slot
        stops counting); a running one is left to its lease (its late finalize, if any, is
        fenced)."""
        if held is None:
            return
        job = held.job
        slot = held.slot if held.phase is Phase.CHAINED else None
        try:
            async with pool.connection(timeout=STOP_TIMEOUT) as conn:
                if await self._give_back(conn, ctx, job, slot, why):
                    log.info("job %s given back", job.job_id)
        except DB_ERRORS as exc:
            log.warning("job %s left to its lease: %s", job.job_id, exc)

    @staticmethod
    async def _give_back(conn: Conn, ctx: Context, job: ClaimedJob, slot: Slot | None,
                         why: str) -> bool:
        """A job not sent goes back to the queue, and the slot its success counted for it (if
        any) stops counting."""
        if slot is not None:
            await unsent(conn, ctx.me, job, slot)
        return await qclaim.release(conn, ctx.me, job, why)

    async def _loop(self, pool: Pool, ctx: Context) -> None:
        chain: int | None = None
        drained = False
        while not self.stop.is_set() and ctx.heartbeat.lost is None:
            self.wake.clear()
            flags = ctx.heartbeat.flags
            if not flags.enabled or flags.retired:
                await self._let_go(pool, ctx, ctx.holding.take(), "shutdown")
                log.info("collector %s is %s: exiting", ctx.me.name,
                         "retired" if flags.retired else "disabled")
                return
            if flags.drained or ctx.heartbeat.lost_since is not None:
                await self._let_go(pool, ctx, ctx.holding.take(), "drained" if flags.drained
                                   else "heartbeat_lost")
                if flags.drained and not drained:
                    log.info("collector %s is drained: claiming nothing", ctx.me.name)
                drained = flags.drained
                await self._pause(self.settings.idle_poll_seconds)
                continue
            drained = False
            try:
                if not await self._clock_within(pool):
                    await self._let_go(pool, ctx, ctx.holding.take(), "clock_skew")
                    await self._pause(self.settings.idle_poll_seconds)
                    continue
                chain = await self._step(pool, ctx, chain)
            except DB_ERRORS as exc:
                log.warning("database unavailable (%s); waiting", exc)
                await self._pause(2.0)

    async def _step(self, pool: Pool, ctx: Context, chain: int | None) -> int | None:
        async with pool.connection() as conn:
            held = await self.restore.hold(conn)
            if held is not None:  # after a restore: nothing is sent until the ledger is whole
                chained = ctx.holding.take()
                if chained is not None:
                    await self._give_back(conn, ctx, chained.job, chained.slot, "restore_hold")
                await self.clock.sleep_until(min(held, self.clock.now() + timedelta(
                    seconds=self.settings.idle_poll_seconds)), self.wake)
                return chain
            if await session_stopped(conn, ctx.me, ctx.session):  # dead until renewed
                chained = ctx.holding.take()
                if chained is not None:
                    await self._give_back(conn, ctx, chained.job, chained.slot,
                                          "session_expired")
                await self._pause(self.settings.idle_poll_seconds)
                return chain
            self.policy = await policy_mod.load(conn)
            got: Admitted | Wait
            chained = ctx.holding.take()
            if chained is not None:  # claimed by the last success's own transaction
                got = await admission.admit_held(conn, ctx.me, ctx.gate, chained.job,
                                                 chained.slot, pause=self.pause)
            else:
                got = await admission.admit(conn, ctx.me, ctx.gate, soldier_id=chain,
                                            pause=self.pause)
            if isinstance(got, Wait):
                if chain is not None and got.idle:
                    return None  # the chained soldier is done: back to the queue
                until = got.until or self.clock.now() + timedelta(
                    seconds=self.settings.idle_poll_seconds)
                if got.until is not None:
                    log.debug("gate closed until %s", until.isoformat())
                await self.clock.sleep_until(until, self.wake)
                return chain
            ctx.resolved_soldier = None
            await self.restore.saw(conn, got.slot.request_id)
            await run_job(conn, ctx, got, self.policy, self.stop)
        if ctx.me.lane is not Lane.INTERACTIVE:
            return None
        # an interactive full collection chains the same soldier's other resources
        return ctx.resolved_soldier if got.job.is_lookup else got.job.soldier_id

    async def _clock_within(self, pool: Pool) -> bool:
        """Measure the clock when due; False: beyond the bound, take no slots."""
        assert self.guard is not None
        if not self.clock.due(self.guard.period):
            return not self.guard.skewed
        async with pool.connection() as conn:
            return await self.guard.within(conn)

    async def _pause(self, seconds: float) -> None:
        await sleep_unless_stopped(self.wake, seconds)

    async def _stopped(self, pool: Pool, me: CollectorRef,
                       failure: Failure | None = None) -> None:
        why: dict[str, Any] = ({} if failure is None
                               else {"result": "failed", "error_message": str(failure)})
        try:
            async with pool.connection(timeout=STOP_TIMEOUT) as conn, conn.transaction():
                await conn.execute(q("collector_stopped"), {"collector_uuid": me.collector_uuid})
                await events.record(conn, EventType.COLLECTOR_STOPPED, **me.event_fields(),
                                    lane=me.lane.value, **why)
        except DB_ERRORS as exc:
            log.warning("could not record the stop: %s", exc)


def wanted(name: str, lane: Lane, egress: str, hostname: str,
           source_address: str | None) -> Wanted:
    return Wanted(name, hostname, lane, egress, source_address, __version__)
