"""Queue depth (actionable work) and coverage (total backlog): separate figures by design."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import NamedTuple

from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, one
from bf4ps.domain import Resource, StateStatus


@dataclass(frozen=True, slots=True)
class Depth:
    """The jobs of one lane, priority class and resource, by status."""

    lane: str
    priority_class: str
    resource: str
    ready: int
    waiting_retry: int
    claimed: int
    running: int
    oldest_rank: datetime | None  # the rank of the oldest ready job (a time)


@dataclass(slots=True)
class Finished:
    """The attempts of a window that ended, for one resource."""

    succeeded: int = 0
    failed: int = 0
    avg_duration_ms: float | None = None


class _Count(NamedTuple):
    resource: str
    status: str
    n: int


class _Folded(NamedTuple):
    folded: int


class _Finished(NamedTuple):
    resource: str
    event_type: str
    n: int
    avg_duration_ms: Decimal | None  # avg of integers: numeric


async def queue_depth(conn: Conn) -> list[Depth]:
    return await all_rows(conn, Depth, "queue_depth")


async def coverage(conn: Conn) -> dict[str, dict[str, int]]:
    """Per resource: count of soldiers per collection-state status (zeros included)."""
    table = {r.value: {s.value: 0 for s in StateStatus} for r in Resource}
    for row in await all_rows(conn, _Count, "coverage"):
        table[row.resource][row.status] = row.n
    return table


async def fold_coverage(conn: Conn) -> int:
    """Fold the coverage deltas into the counters (the scheduler's tick); the rows folded. The
    figures are exact either way: `coverage` adds the deltas not folded yet."""
    row = await one(conn, _Folded, "coverage_fold")
    return row.folded if row else 0


async def throughput(conn: Conn, window_seconds: float) -> dict[str, Finished]:
    out: dict[str, Finished] = {}
    for row in await all_rows(conn, _Finished, "throughput", {"window_seconds": window_seconds}):
        entry = out.setdefault(row.resource, Finished())
        if row.event_type == "succeeded":
            entry.succeeded = row.n
            if row.avg_duration_ms is not None:
                entry.avg_duration_ms = round(float(row.avg_duration_ms), 1)
        elif row.event_type == "failed":
            entry.failed = row.n
    return out
