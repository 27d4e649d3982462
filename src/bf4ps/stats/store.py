"""Storing what Battlelog answered: the writers a collector hands to finalize.succeed.

    await finalize.succeed(conn, me, job, attempt, policy,
                           write_stats=writer_for(job.stats_resource, result.parsed))

The writer runs inside succeed's fenced transaction: the statistics commit together with the
collection state, the `succeeded` event and the job's removal, or not at all. fetched_at is
succeed's `now`, the database's clock_timestamp() under the job lock, so the no-backwards
comparisons never depend on a collector host's clock. The writers (write_detailed,
write_profile, write_weapons, write_vehicles) open no transaction; snapshot.py and items.py
say what each writes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TypeGuard

from bf4ps.battlelog.models import DetailedStats, Parsed, ProfileStats
from bf4ps.db.connect import Conn
from bf4ps.domain import Resource
from bf4ps.queue.finalize import StatsWriter
from bf4ps.queue.jobs import ClaimedJob
from bf4ps.stats.items import (
    VEHICLES,
    WEAPONS,
    ItemKind,
    ItemT,
    write_items,
    write_vehicles,
    write_weapons,
)
from bf4ps.stats.snapshot import Written, write_detailed, write_profile

__all__ = ["Written", "write_detailed", "write_profile", "write_vehicles", "write_weapons",
           "writer_for"]

BoundWrite = Callable[[Conn, int, datetime], Awaitable[Written]]


def _items_of(value: object, kind: ItemKind[ItemT]) -> TypeGuard[tuple[ItemT, ...]]:
    return isinstance(value, tuple) and all(isinstance(v, kind.item) for v in value)


def bind(resource: Resource, parsed: Parsed) -> BoundWrite:
    """The write for `resource` with `parsed` bound; TypeError when they do not match."""
    resource = Resource(resource)
    if resource is Resource.DETAILED and isinstance(parsed, DetailedStats):
        stats = parsed
        return lambda conn, sid, at: write_detailed(conn, sid, stats, at)
    if resource is Resource.PROFILE and isinstance(parsed, ProfileStats):
        profile = parsed
        return lambda conn, sid, at: write_profile(conn, sid, profile, at)
    if resource is Resource.WEAPONS and _items_of(parsed, WEAPONS):
        weapons = parsed
        return lambda conn, sid, at: write_items(conn, WEAPONS, sid, weapons, at)
    if resource is Resource.VEHICLES and _items_of(parsed, VEHICLES):
        vehicles = parsed
        return lambda conn, sid, at: write_items(conn, VEHICLES, sid, vehicles, at)
    raise TypeError(f"cannot store {type(parsed).__name__} as {resource.value} statistics")


def writer_for(resource: Resource, parsed: Parsed) -> StatsWriter:
    """A StatsWriter for finalize.succeed that stores `parsed` for the job's soldier.

    The resource/type match is checked here, before any request is finalized; the job is checked
    when succeed calls the writer (a lookup job or another resource's job raises, which rolls the
    whole success back)."""
    write = bind(resource, parsed)

    async def write_stats(conn: Conn, job: ClaimedJob, now: datetime) -> None:
        if job.soldier_id is None or job.resource != resource.value:
            raise ValueError(f"a {resource.value} writer cannot store job {job.job_id} "
                             f"({job.resource}, soldier {job.soldier_id})")
        await write(conn, job.soldier_id, now)

    return write_stats
