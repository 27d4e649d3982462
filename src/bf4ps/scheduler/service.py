"""`bf4ps scheduler run`: one active scheduler at a time (a session advisory lock), any number of
hot standbys that take over when it dies. Every tick: reap expired leases, mark silent collectors
lost, decay activity, mark due work, replenish the working set; now and then BF4SW intake,
retention and partition upkeep. All state lives in PostgreSQL, so a restart at any moment is
safe."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import psycopg

from bf4ps import policy as policy_mod
from bf4ps.capacity.forecast import Forecast
from bf4ps.db.connect import DB_ERRORS, SCHEDULER_LOCK, Conn, connection, resolve_url
from bf4ps.db.queries import all_rows, one, q
from bf4ps.events import log as events
from bf4ps.events.log import EventType
from bf4ps.gates.restore import Marks, current_hold
from bf4ps.queue import figures
from bf4ps.queue.claim import reap_expired
from bf4ps.scheduler import activity, feeder, forecasting, history, progress, retention, sessions
from bf4ps.settings import Settings
from bf4ps.views import forecast_inputs
from bf4ps.waiting import sleep_unless_stopped

log = logging.getLogger(__name__)

FEED_LOG_SECONDS = 60.0


@dataclass
class FeedTally:
    """The feeder's routine work, summed for one log line every `seconds`."""

    seconds: float = FEED_LOG_SECONDS
    jobs: int = 0
    ticks: int = 0
    since: float = field(default_factory=time.monotonic)

    def add(self, jobs: int) -> None:
        self.jobs += jobs
        self.ticks += 1

    def due(self) -> bool:
        return self.jobs > 0 and time.monotonic() - self.since >= self.seconds

    def take(self) -> tuple[int, int, float]:
        now = time.monotonic()
        out = (self.jobs, self.ticks, now - self.since)
        self.jobs, self.ticks, self.since = 0, 0, now
        return out


@dataclass
class Every:
    """Run an action at most every `seconds` (first run at once)."""

    seconds: float
    action: Callable[[], Awaitable[None]]
    last: float = field(default=-1e18)

    async def maybe(self) -> None:
        now = time.monotonic()
        if now - self.last >= self.seconds:
            self.last = now
            try:
                await self.action()
            except psycopg.errors.LockNotAvailable as exc:
                # waited past the lock timeout (a stalled session holds the lock until the
                # session bounds end it): this step runs again next time; leadership stays
                log.warning("scheduler: %s gave up waiting for a lock (%s); retried next time",
                            getattr(self.action, "__name__", "a step"), exc)


class _Locked(NamedTuple):
    ok: bool


class _Silent(NamedTuple):
    collector_name: str


class Scheduler:
    def __init__(self, settings: Settings, *,
                 intake: Callable[[asyncio.Event], Coroutine[Any, Any, None]] | None = None,
                 ) -> None:
        self.settings = settings
        self.stop = asyncio.Event()
        self.intake = intake
        self.identity = f"{socket.gethostname()}:{os.getpid()}"
        self.fed = FeedTally()
        self.progress = progress.ProgressStep()
        self.leading_since = time.monotonic()
        self.checked = False
        # the restore guard's mark (db/schema.sql), kept across database restarts: after a
        # server start the scheduler vouches for the database it knew, or notices a rewind
        self.marks = Marks()

    async def run(self) -> None:
        url = await resolve_url(self.settings)
        while not self.stop.is_set():
            try:
                async with connection(url) as lock_conn:
                    if await self._acquire(lock_conn):
                        await self._lead(url, lock_conn)
            except DB_ERRORS as exc:
                log.warning("scheduler: database unavailable (%s); retrying", exc)
            await self._sleep(self.settings.scheduler_tick_seconds)

    async def _acquire(self, conn: Conn) -> bool:
        said = False
        while not self.stop.is_set():
            row = await one(conn, _Locked, "scheduler_lock_try", {"lock": SCHEDULER_LOCK})
            if row and row.ok:
                return True
            if not said:  # once per stand-by period, not every tick
                log.info("scheduler %s is on standby: another scheduler leads; it takes over "
                         "when that one stops", self.identity)
                said = True
            await self._sleep(self.settings.scheduler_tick_seconds)  # hot standby
        return False

    async def _lead(self, url: str, lock_conn: Conn) -> None:
        log.info("scheduler %s is active", self.identity)
        self.leading_since, self.checked = time.monotonic(), False
        intake_stop = asyncio.Event()
        intake: asyncio.Task[None] | None = None
        if self.intake is not None:
            intake = asyncio.create_task(self.intake(intake_stop))
        try:
            async with connection(url) as conn:
                await events.record(conn, EventType.SCHEDULER_STARTED,
                                    details={"scheduler": self.identity})
                jobs = self._periodic(conn)
                while not self.stop.is_set():
                    await lock_conn.execute(q("scheduler_lock_alive"))  # lost? stop leading
                    for job in jobs:
                        await job.maybe()
                    await self._sleep(self.settings.scheduler_tick_seconds)
                await events.record(conn, EventType.SCHEDULER_STOPPED,
                                    details={"scheduler": self.identity})
        finally:
            intake_stop.set()
            if intake is not None:
                await intake

    def _periodic(self, conn: Conn) -> list[Every]:
        s = self.settings
        return [Every(0, lambda: self.tick(conn)),
                Every(1.0, lambda: self.vouch(conn)),
                Every(s.sweep_seconds, lambda: self.sweeps(conn)),
                Every(s.history_record_seconds,
                      lambda: history.record(conn, s.history_record_seconds)),
                Every(progress.CHECK_SECONDS, lambda: self.progress.run(conn)),
                Every(s.forecast_record_seconds, lambda: self.forecasts(conn)),
                Every(min(s.history_record_seconds, s.capacity_check_after_seconds),
                      lambda: self.first_check(conn)),
                Every(3600, lambda: self.upkeep(conn))]

    async def _forecast(self, conn: Conn, window: float) -> Forecast | None:
        return await forecasting.take(conn, window, forecast_inputs.timings(self.settings))

    async def vouch(self, conn: Conn) -> None:
        """Show the restore guard the scheduler's mark: it vouches for a restarted server that
        is the database the scheduler knew, or makes the guard hold the fleet after a rewind."""
        await current_hold(conn, self.marks)

    async def first_check(self, conn: Conn) -> None:
        """The capacity check, once, when the collectors have served a window since this
        scheduler began to lead (before that the forecast could only assume defaults)."""
        after = self.settings.capacity_check_after_seconds
        if self.checked or time.monotonic() - self.leading_since < after:
            return
        fc = await self._forecast(conn, after)
        if fc is not None and forecasting.served_a_window(fc):
            await history.check_capacity(conn, fc)
            self.checked = True

    async def forecasts(self, conn: Conn) -> None:
        """One forecast record (over the record period) and a backtest of the past ones."""
        period = self.settings.forecast_record_seconds
        if time.monotonic() - self.leading_since < min(period, 60.0):
            return  # the first record once something was measured
        fc = await self._forecast(conn, max(period, 60.0))
        if fc is not None:
            await forecasting.record_and_backtest(conn, fc, period)

    async def tick(self, conn: Conn) -> None:
        policy = await policy_mod.load(conn)
        reaped = await reap_expired(conn)
        await figures.fold_coverage(conn)
        silent = await all_rows(conn, _Silent, "collectors_mark_silent", {
            "silence_seconds": self.settings.heartbeat_lost_after_seconds})
        lost = [r.collector_name for r in silent]
        fed = await feeder.replenish(conn, policy)
        self.fed.add(fed.total)
        if reaped or lost:  # worth a line at once
            log.info("tick: reaped %d, lost %s, fed %d (depth was %d/%d)", reaped, lost or "-",
                     fed.total, fed.depth_before, fed.target)
        elif self.fed.due():  # routine feeding: one line a minute, not one a tick
            log.info("feeder: %d jobs queued in %d ticks over the last %.0f s (depth was "
                     "%d/%d)", *self.fed.take(), fed.depth_before, fed.target)

    async def sweeps(self, conn: Conn) -> None:
        policy = await policy_mod.load(conn)
        decayed = await activity.decay(conn, policy)
        due = await activity.mark_due(conn, self.settings.sweep_seconds)
        rechecked = await activity.recheck_parked(conn, policy)
        long_sessions, profiles = await sessions.sweep(conn, policy)
        if decayed or due or rechecked or long_sessions or profiles:
            log.info("sweeps: %d rows decayed, %d became due, %d parked rechecked, %d long "
                     "sessions refreshed, %d scheduled profiles", decayed, due, rechecked,
                     long_sessions, profiles)

    async def upkeep(self, conn: Conn) -> None:
        policy = await policy_mod.load(conn)
        report = await retention.run(conn, policy.event_retention_days)
        ledger = await retention.prune_ledger(conn, policy.ledger_retention_days)
        created = await retention.ensure_partitions(conn)
        records = await history.prune(conn, policy.history_retention_days)
        records += await forecasting.prune(conn, policy.history_retention_days)
        answers = await retention.prune_archive(conn, policy.archive_retention_days)
        log.info("upkeep: dropped %s, deleted %d events, %d ledger rows, %d history "
                 "records and %d archived answers, %d partitions created",
                 report.dropped_partitions or "-", report.deleted_rows, ledger, records,
                 answers, created)

    async def _sleep(self, seconds: float) -> None:
        await sleep_unless_stopped(self.stop, seconds)

