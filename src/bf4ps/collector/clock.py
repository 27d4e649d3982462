"""Database time on a collector host. Send slots are computed on PostgreSQL's clock
(clock_timestamp()), and a collector times its sends on it too: its own clock plus an offset
measured at start, every `clock_check_seconds` and at once when its wall clock is seen to step
(several round trips, the sample of the shortest: offset = db_time - (t_send + t_recv) / 2,
wrong by at most half that round trip).

Beyond `clock_skew_limit_seconds` a collector takes no send slots (its offset may change by up
to itself before the next check): a log line and a clock_skew event on the transition,
clock_restored when back within. The offset is in the collectors registry (`bf4ps status`, the
console, /metrics). Waits sleep on the event loop's monotonic clock: only the wall clock is
compared with the database's, so a clock stepped during a sleep loses nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one
from bf4ps.events import log as events
from bf4ps.events.log import EventType
from bf4ps.queue.jobs import CollectorRef
from bf4ps.waiting import sleep_unless_stopped

log = logging.getLogger(__name__)

SAMPLES = 5  # round trips per measurement; the shortest is kept
STEP_SECONDS = 0.01  # wall clock against monotonic clock moved by more: measure again at once


@dataclass(frozen=True)
class Sample:
    offset: float  # database time minus host time, seconds
    rtt: float  # the sample's round trip: the offset is wrong by at most half of it


class _Now(NamedTuple):
    epoch: float


class _Skew(NamedTuple):
    was_skewed_since: datetime | None


async def measure(conn: Conn, samples: int = SAMPLES) -> Sample:
    """The minimum-round-trip sample of `samples` clock_timestamp() round trips."""
    best: Sample | None = None
    for _ in range(max(1, samples)):
        sent = time.time()
        row = await one(conn, _Now, "clock_now")
        received = time.time()
        assert row is not None
        sample = Sample(row.epoch - (sent + received) / 2, received - sent)
        if best is None or sample.rtt < best.rtt:
            best = sample
    assert best is not None
    return best


def _wall_minus_monotonic() -> float:
    return time.time() - time.monotonic()


class DbClock:
    """The database's clock as read on this host: the host's wall clock plus the offset."""

    def __init__(self, offset: float = 0.0) -> None:
        self.offset = offset
        self.rtt: float | None = None
        self._measured_at: float | None = None  # monotonic
        self._anchor = _wall_minus_monotonic()

    def set(self, sample: Sample) -> None:
        self.offset, self.rtt = sample.offset, sample.rtt
        self._measured_at = time.monotonic()
        self._anchor = _wall_minus_monotonic()

    def due(self, period: float) -> bool:
        """A measurement is due: none yet, `period` passed, or the wall clock stepped."""
        if self._measured_at is None or time.monotonic() - self._measured_at >= period:
            return True
        return abs(_wall_minus_monotonic() - self._anchor) > STEP_SECONDS

    def now(self) -> datetime:
        return datetime.fromtimestamp(time.time() + self.offset, UTC)

    def host_epoch(self, when: datetime) -> float:
        """The host's wall-clock time (epoch seconds) at which the database's reads `when`."""
        return when.timestamp() - self.offset

    def seconds_until(self, when: datetime) -> float:
        return (when - self.now()).total_seconds()

    async def sleep_until(self, when: datetime, stop: asyncio.Event | None = None) -> bool:
        """Sleep until the database's clock reads `when`; False when `stop` was set first."""
        delay = self.seconds_until(when)
        if delay <= 0:
            return True
        if stop is None:
            await asyncio.sleep(delay)
            return True
        return await sleep_unless_stopped(stop, delay)


class ClockGuard:
    """A collector's clock checks: measured when due, stored in the registry, and the bound
    enforced (`within` False: take no slots)."""

    def __init__(self, clock: DbClock, me: CollectorRef, limit: float, period: float) -> None:
        self.clock = clock
        self.me = me
        self.limit = limit
        self.period = period
        self.skewed = False

    async def within(self, conn: Conn) -> bool:
        if self.clock.due(self.period):
            await self.check(conn)
        return not self.skewed

    async def check(self, conn: Conn) -> Sample:
        sample = await measure(conn)
        self.clock.set(sample)
        skewed = abs(sample.offset) > self.limit
        async with conn.transaction():
            row = await one(conn, _Skew, "collector_clock", {
                "collector_uuid": self.me.collector_uuid, "offset": sample.offset,
                "rtt": sample.rtt, "skewed": skewed})
            was = row is not None and row.was_skewed_since is not None
            if skewed != was:
                await self._transition(conn, sample, skewed, row)
        if skewed != self.skewed:
            self._say(sample, skewed)
            self.skewed = skewed
        return sample

    async def _transition(self, conn: Conn, sample: Sample, skewed: bool,
                          row: _Skew | None) -> None:
        details: dict[str, object] = {"offset_seconds": round(sample.offset, 6),
                                      "rtt_seconds": round(sample.rtt, 6),
                                      "limit_seconds": self.limit}
        if row is not None and row.was_skewed_since is not None:
            details["skewed_since"] = row.was_skewed_since.isoformat()
        kind = EventType.CLOCK_SKEW if skewed else EventType.CLOCK_RESTORED
        await events.record(conn, kind, **self.me.event_fields(), lane=self.me.lane.value,
                            result="paused" if skewed else "resumed", details=details)

    def _say(self, sample: Sample, skewed: bool) -> None:
        if skewed:
            log.warning("clock of collector %s is %+.3f s off the database's (bound %.3f s): "
                        "taking no send slots until it is back within; check the host's time "
                        "sync (chrony/NTP)", self.me.name, sample.offset, self.limit)
        else:
            log.info("clock of collector %s is %+.3f s off the database's, within the bound "
                     "%.3f s: taking send slots again", self.me.name, sample.offset, self.limit)
