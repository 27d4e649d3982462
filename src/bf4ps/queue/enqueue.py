"""Enqueue with coalescing and promotion: at most one actionable job per (soldier, resource)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from bf4ps.db.connect import Conn
from bf4ps.db.queries import Present, execute, one
from bf4ps.domain import JobReason, Lane, Platform, PriorityClass
from bf4ps.events import log as events
from bf4ps.events.log import EventType
from bf4ps.queue.ranking import outranks


@dataclass(frozen=True, slots=True)
class Demand:
    soldier_id: int | None
    resource: str
    lane: Lane
    priority_class: PriorityClass
    rank: datetime
    reason: JobReason
    eligible_at: datetime
    request_id: UUID | None = None
    lookup_name: str | None = None
    lookup_platform: Platform | None = None

    def params(self) -> dict[str, Any]:
        return {
            "soldier_id": self.soldier_id, "resource": self.resource, "lane": self.lane.value,
            "priority_class": self.priority_class.value, "rank": self.rank,
            "reason": self.reason.value, "eligible_at": self.eligible_at,
            "request_id": self.request_id, "lookup_name": self.lookup_name,
            "lookup_platform": self.lookup_platform.value if self.lookup_platform else None,
        }


@dataclass(frozen=True, slots=True)
class Enqueued:
    job_id: int
    action: str  # "created" | "promoted" | "coalesced"


class _Made(NamedTuple):
    job_id: int


class _Existing(NamedTuple):
    job_id: int
    lane: str
    priority_class: str
    status: str


class _Persona(NamedTuple):
    persona_id: int
    platform: str


async def enqueue(conn: Conn, demand: Demand, *, persona_id: int | None = None,
                  platform: str | None = None) -> Enqueued:
    """Create the job, or coalesce into the existing one (promoting it when the new demand is of
    a higher class). Runs in the caller's transaction; the event commits with it."""
    params = demand.params()
    for _ in range(5):
        row = await one(conn, _Made, "enqueue_insert", params)
        if row is not None:
            await _event(conn, EventType.CREATED, demand, row.job_id, persona_id, platform)
            return Enqueued(row.job_id, "created")
        existing = await one(conn, _Existing, "enqueue_lock_existing", params)
        if existing is None:
            continue  # finalized between our insert and our look: insert again
        return await _coalesce(conn, demand, existing, persona_id, platform)
    raise RuntimeError(f"could not enqueue {demand.resource} of soldier {demand.soldier_id}")


async def _coalesce(conn: Conn, demand: Demand, existing: _Existing,
                    persona_id: int | None, platform: str | None) -> Enqueued:
    job_id = existing.job_id
    old_class = PriorityClass(existing.priority_class)
    if existing.status == "pending" and outranks(demand.priority_class, old_class):
        params = demand.params() | {"job_id": job_id}
        if await one(conn, Present, "enqueue_promote", params) is not None:
            await _event(conn, EventType.PROMOTED, demand, job_id, persona_id, platform,
                         details={"from_lane": existing.lane, "from_class": old_class.value})
            return Enqueued(job_id, "promoted")
    if demand.request_id is not None:
        await execute(conn, "attach_request", {"job_id": job_id,
                                               "request_id": demand.request_id})
    return Enqueued(job_id, "coalesced")


async def _event(conn: Conn, kind: EventType, demand: Demand, job_id: int,
                 persona_id: int | None, platform: str | None,
                 details: dict[str, Any] | None = None) -> None:
    if persona_id is None and demand.soldier_id is not None:  # the audit identity
        row = await one(conn, _Persona, "soldier_by_id", {"soldier_id": demand.soldier_id})
        if row is not None:
            persona_id, platform = row.persona_id, row.platform
    await events.record(
        conn, kind, job_id=job_id, soldier_id=demand.soldier_id, persona_id=persona_id,
        platform=platform or (demand.lookup_platform.value if demand.lookup_platform else None),
        resource=demand.resource, lane=demand.lane.value,
        priority_class=demand.priority_class.value, result=demand.reason.value,
        details=details,
    )
