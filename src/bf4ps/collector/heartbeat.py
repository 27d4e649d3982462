"""Heartbeats: routine ones update the registry and renew the current job's lease without any
event; health transitions are events written once each (heartbeat_lost by whoever notices
first, heartbeat_restored on the first good heartbeat after)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from psycopg_pool import AsyncConnectionPool

from bf4ps.collector.held import Holding, Phase
from bf4ps.db.connect import DB_ERRORS, Conn, connect
from bf4ps.db.queries import Present, one
from bf4ps.events import log as events
from bf4ps.events.log import EventType
from bf4ps.gates import circuit
from bf4ps.queue import claim as qclaim
from bf4ps.queue.jobs import CollectorRef
from bf4ps.waiting import sleep_unless_stopped

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Beat:
    """What a heartbeat reads back: the collector's flags and its health before it."""

    enabled: bool
    drained: bool
    retired_at: datetime | None
    previous_health: str | None
    lost_since: datetime | None


@dataclass
class Flags:
    """What the registry says about us (operators drain/disable/retire through it)."""

    enabled: bool = True
    drained: bool = False
    retired: bool = False


class LeaseLost(RuntimeError):
    """The heartbeat found the current job's lease no longer ours (not at its finalize): the
    collector lost touch for longer than the lease. Before the request is sent it ends the
    heartbeat, so supervision stops the collector at once (supervise.py); with the request sent
    it is noted (`lost`) and the work loop stops after that request's finalize, which the fence
    rejects (stale_finalize_rejected), so the audit shows the late answer."""


class Heartbeat:
    """Beats on a connection of its own, opened from the pool's connection string: a pool busy
    with the work loop (which holds a connection for a whole request) must never look like a
    database outage."""

    def __init__(self, pool: AsyncConnectionPool[Conn], me: CollectorRef, period: float,
                 lease_seconds: float, on_change: Callable[[], None] | None = None) -> None:
        if not isinstance(pool.conninfo, str):
            raise TypeError("the heartbeat needs the pool's connection string")
        self.url: str = pool.conninfo
        self.conn: Conn | None = None
        self.me = me
        self.period = period
        self.lease_seconds = lease_seconds
        self.flags = Flags()
        self.on_change = on_change  # called when the registry's flags change
        self.holding = Holding()  # the job held and its phase (collector/held.py)
        self.lost: LeaseLost | None = None  # a sent job's lease found lost: stop after it
        self.failing_since: datetime | None = None  # heartbeats failing from then on
        self.lost_since: datetime | None = None  # ... for longer than one period: an outage
        # the fleet's open circuits (lane, resource) as of the last beat (gates/circuit.py)
        self.open_circuits: set[tuple[str, str]] = set()

    async def run(self, stop: asyncio.Event) -> None:
        try:
            while not stop.is_set():
                await self.beat()
                await sleep_unless_stopped(stop, self.period)
        finally:
            await self._drop()

    async def beat(self) -> bool:
        try:
            if self.conn is None or self.conn.closed:
                self.conn = await connect(self.url, connect_timeout=max(1, round(self.period)))
            await self._healthy(self.conn)
        except DB_ERRORS as exc:
            await self._drop()
            self._failed(exc)
            return False
        self.failing_since = None
        return True

    async def _drop(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            with contextlib.suppress(*DB_ERRORS):
                await conn.close()

    def _failed(self, exc: BaseException) -> None:
        """An outage begins when heartbeats keep failing for a whole period: one failed beat
        in a flapping moment (a server restart: shutting down, starting up) is not an outage
        of its own, so one restart is one heartbeat_lost / heartbeat_restored pair."""
        now = datetime.now(UTC)
        if self.failing_since is None:
            self.failing_since = now
        elif self.lost_since is None and (now - self.failing_since).total_seconds() >= self.period:
            self.lost_since = self.failing_since
            log.warning("heartbeats failing since %s, collector %s is out of touch: %s",
                        self.failing_since.isoformat(), self.me.name, exc)

    async def _healthy(self, conn: Conn) -> None:
        async with conn.transaction():
            if self.lost_since is not None:
                await self._record_own_outage(conn)
            row = await one(conn, _Beat, "collector_heartbeat",
                            {"collector_uuid": self.me.collector_uuid})
            if row is None:
                raise RuntimeError(f"collector {self.me.collector_uuid} is not registered")
            if row.previous_health == "lost":
                await events.record(conn, EventType.HEARTBEAT_RESTORED, **self.me.event_fields(),
                                    lane=self.me.lane.value,
                                    details={"lost_since": _iso(row.lost_since)})
            flags = Flags(row.enabled, row.drained, row.retired_at is not None)
            if flags != self.flags and self.on_change is not None:
                self.on_change()
            self.flags = flags
        self.lost_since = None
        await self._renew(conn)
        await self._circuits(conn)

    async def _circuits(self, conn: Conn) -> None:
        """Learn which circuits are open; release their due probes (any collector may)."""
        self.open_circuits = await circuit.open_circuits(conn)
        if self.open_circuits:
            await circuit.release_probes(conn, self.me)

    async def _record_own_outage(self, conn: Conn) -> None:
        """We noticed our own failed heartbeats: mark lost unless someone else already did."""
        if await one(conn, Present, "collector_mark_lost",
                     {"collector_uuid": self.me.collector_uuid}) is not None:
            await events.record(conn, EventType.HEARTBEAT_LOST, **self.me.event_fields(),
                                lane=self.me.lane.value,
                                details={"detected_by": "collector",
                                         "failing_since": _iso(self.lost_since)})

    async def _renew(self, conn: Conn) -> None:
        held = self.holding.served()
        if held is None:
            return
        job = held.job
        renewed = await qclaim.renew(conn, job.lease, self.lease_seconds)
        now = self.holding.served()
        if renewed is None and now is not None and now.job is job \
                and now.phase is not Phase.FINISHING:
            # once finalize has begun, a renewal finding no lease is usually that finalize's
            # own commit (the job is gone); a lost lease is then the fence's to report
            lost = LeaseLost(f"the lease of job {job.job_id} is no longer ours")
            if now.phase is not Phase.SENT:
                log.warning("lease of job %s is no longer ours", job.job_id)
                raise lost
            if self.lost is None:
                log.warning("lease of job %s is no longer ours with its request sent: its "
                            "finalize is fenced, then the collector exits", job.job_id)
                self.lost = lost


def _iso(value: object) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else None
