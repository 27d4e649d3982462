"""Throttle responses cool the whole egress down (exponential, capped); successes let it
recover one step at a time. Both transitions are events."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one
from bf4ps.queue import events
from bf4ps.queue.events import EventType
from bf4ps.queue.jobs import CollectorRef


class _Throttled(NamedTuple):
    throttle_streak: int
    cooldown_until: datetime


class _Streak(NamedTuple):
    throttle_streak: int


async def throttled(conn: Conn, me: CollectorRef, base: float, cap: float,
                    http_status: int | None, *, resource: str | None = None,
                    reason: str | None = None) -> None:
    """Cool the egress down; the event names the resource asked and why (a 403, or a soft
    throttle's "body is null") beside the HTTP status."""
    async with conn.transaction():
        row = await one(conn, _Throttled, "gate_throttled", {
            "egress_key": me.egress_key, "base_seconds": base, "max_seconds": cap})
        if row is None:
            return
        await events.record(conn, EventType.EGRESS_THROTTLED, http_status=http_status,
                            error_class="throttle", resource=resource, error_message=reason,
                            **me.event_fields(),
                            details={"streak": row.throttle_streak,
                                     "cooldown_until": row.cooldown_until.isoformat()})


async def succeeded(conn: Conn, me: CollectorRef) -> None:
    async with conn.transaction():
        row = await one(conn, _Streak, "gate_recovered", {"egress_key": me.egress_key})
        if row is not None and row.throttle_streak == 0:
            await events.record(conn, EventType.EGRESS_RECOVERED, **me.event_fields())
