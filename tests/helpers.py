"""Shared test helpers: real rows through the library's own functions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

from bf4ps import soldiers
from bf4ps.collector.identity import Wanted, register
from bf4ps.db.connect import Conn
from bf4ps.domain import JobReason, Lane, Platform, PriorityClass, SourceType
from bf4ps.policy import Policy
from bf4ps.queue.enqueue import Demand, Enqueued, enqueue
from bf4ps.queue.jobs import CollectorRef
from bf4ps.queue.ranking import rank

T0 = datetime(2026, 11, 1, tzinfo=UTC)


async def make_soldier(conn: Conn, persona_id: int, platform: Platform = Platform.PC,
                       name: str | None = None, seen: datetime = T0) -> int:
    result = await soldiers.upsert(conn, soldiers.Sighting(
        persona_id, platform, name or f"Soldier{persona_id}", seen, seen, SourceType.BF4SW))
    return result.soldier_id


async def make_collector(conn: Conn, data_dir: Path, name: str,
                         lane: Lane = Lane.BACKGROUND, egress: str = "eg-1") -> CollectorRef:
    return await register(conn, data_dir, Wanted(name, "test-host", lane, egress, None, "test"))


def demand(soldier_id: int, resource: str = "detailed",
           klass: PriorityClass = PriorityClass.BOOTSTRAP, since: datetime = T0,
           request_id: UUID | None = None, policy: Policy | None = None) -> Demand:
    lane = Lane.INTERACTIVE if klass is PriorityClass.INTERACTIVE else Lane.BACKGROUND
    reason = JobReason.MANUAL if klass is PriorityClass.INTERACTIVE else JobReason.BOOTSTRAP
    return Demand(soldier_id, resource, lane, klass, rank(since, klass, policy or Policy()),
                  reason, since - timedelta(seconds=1), request_id)


async def add_job(conn: Conn, soldier_id: int, resource: str = "detailed",
                  klass: PriorityClass = PriorityClass.BOOTSTRAP,
                  since: datetime = T0) -> Enqueued:
    async with conn.transaction():
        return await enqueue(conn, demand(soldier_id, resource, klass, since))


async def count(conn: Conn, sql: str, params: dict[str, object] | None = None) -> int:
    cur = await conn.execute(sql, params or {})  # type: ignore[arg-type]
    row = await cur.fetchone()
    assert row is not None
    return int(str(next(iter(row.values()))))
