"""Heartbeats: routine ones update the registry and renew the current job's lease without any
event; health transitions are events written once each (heartbeat_lost by whoever notices
first, heartbeat_restored on the first good heartbeat after)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from datetime import UTC, datetime

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from bf4ps.db.connect import Conn
from bf4ps.db.queries import q
from bf4ps.queue import claim as qclaim
from bf4ps.queue import events
from bf4ps.queue.events import EventType
from bf4ps.queue.jobs import ClaimedJob, CollectorRef

log = logging.getLogger(__name__)
DB_ERRORS = (psycopg.Error, PoolTimeout, OSError)
# What a database outage looks like (retry later); other psycopg errors are bugs or bad data.
OUTAGE_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout, OSError)


@dataclass
class Flags:
    """What the registry says about us (operators drain/disable/retire through it)."""

    enabled: bool = True
    drained: bool = False
    retired: bool = False


class Heartbeat:
    def __init__(self, pool: AsyncConnectionPool[Conn], me: CollectorRef, period: float,
                 lease_seconds: float) -> None:
        self.pool = pool
        self.me = me
        self.period = period
        self.lease_seconds = lease_seconds
        self.flags = Flags()
        self.current: ClaimedJob | None = None
        self.lease_lost = asyncio.Event()
        self.lost_since: datetime | None = None

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self.beat()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.period)

    async def beat(self) -> bool:
        try:
            async with self.pool.connection(timeout=self.period) as conn:
                await self._healthy(conn)
            return True
        except DB_ERRORS as exc:
            if self.lost_since is None:
                self.lost_since = datetime.now(UTC)
                log.warning("heartbeat failed, collector %s is out of touch: %s",
                            self.me.name, exc)
            return False

    async def _healthy(self, conn: Conn) -> None:
        async with conn.transaction():
            if self.lost_since is not None:
                await self._record_own_outage(conn)
            cur = await conn.execute(q("collector_heartbeat"),
                                     {"collector_uuid": self.me.collector_uuid})
            row = await cur.fetchone()
            if row is None:
                raise RuntimeError(f"collector {self.me.collector_uuid} is not registered")
            if row["previous_health"] == "lost":
                await events.record(conn, EventType.HEARTBEAT_RESTORED, **self.me.event_fields(),
                                    lane=self.me.lane.value,
                                    details={"lost_since": _iso(row["lost_since"])})
            self.flags = Flags(bool(row["enabled"]), bool(row["drained"]),
                               row["retired_at"] is not None)
        self.lost_since = None
        await self._renew(conn)

    async def _record_own_outage(self, conn: Conn) -> None:
        """We noticed our own failed heartbeats: mark lost unless someone else already did."""
        cur = await conn.execute(q("collector_mark_lost"),
                                 {"collector_uuid": self.me.collector_uuid})
        if await cur.fetchone() is not None:
            await events.record(conn, EventType.HEARTBEAT_LOST, **self.me.event_fields(),
                                lane=self.me.lane.value,
                                details={"detected_by": "collector",
                                         "failing_since": _iso(self.lost_since)})

    async def _renew(self, conn: Conn) -> None:
        job = self.current
        if job is None:
            return
        renewed = await qclaim.renew(conn, job.lease, self.lease_seconds)
        if renewed is None and self.current is job:
            log.warning("lease of job %s is no longer ours", job.job_id)
            self.lease_lost.set()


def _iso(value: object) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else None
