"""Collector-event retention without long locks or bloat: monthly partitions wholly past the
horizon are dropped (instant, no dead tuples); events past the horizon inside the boundary
partition (and any in the default partition) go in small batched deletes. The request ledger
is pruned the same way, in batches, never inside the budget windows that read it. Never
touches soldiers or statistics."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import psycopg

from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, execute, one, q

log = logging.getLogger(__name__)
_UPPER = re.compile(r"TO \('([^']+)'\)")


@dataclass
class RetentionReport:
    cutoff: datetime
    dropped_partitions: list[str]
    deleted_rows: int


def partition_upper_bound(bound: str) -> datetime | None:
    match = _UPPER.search(bound)
    if not match:
        return None  # the DEFAULT partition
    return datetime.fromisoformat(match[1].replace(" ", "T")).astimezone(UTC)


class _Partition(NamedTuple):
    name: str
    bound: str


async def run(conn: Conn, retention_days: float, *, batch: int = 5000,
              now: datetime | None = None) -> RetentionReport:
    cutoff = (now or datetime.now(UTC)) - timedelta(days=retention_days)
    report = RetentionReport(cutoff, [], 0)
    for row in await all_rows(conn, _Partition, "event_partitions"):
        upper = partition_upper_bound(row.bound)
        if upper is not None and upper <= cutoff and await _drop(conn, row.name):
            report.dropped_partitions.append(row.name)
    report.deleted_rows = await delete_in_batches(conn, "events_delete_batch", cutoff, batch)
    return report


async def _drop(conn: Conn, name: str) -> bool:
    """Drop a monthly partition; False when the database keeps it (it holds events younger
    than the policy's event_retention_days, whatever horizon this caller was given)."""
    try:
        async with conn.transaction():
            await conn.execute(q("drop_event_partition"), {"name": name})
    except psycopg.errors.InsufficientPrivilege as exc:
        log.info("partition %s kept: %s", name, exc)
        return False
    return True


async def prune_ledger(conn: Conn, retention_days: float, *, batch: int = 5000,
                       now: datetime | None = None) -> int:
    """Delete request-ledger rows older than the horizon (and older than twice the fleet
    budget window, whatever the horizon); the number deleted."""
    cutoff = (now or datetime.now(UTC)) - timedelta(days=retention_days)
    return await delete_in_batches(conn, "ledger_delete_batch", cutoff, batch)


async def prune_archive(conn: Conn, retention_days: float, *, batch: int = 5000,
                        now: datetime | None = None) -> int:
    """Delete archived raw answers (stats/archive.py) older than the horizon; how many."""
    cutoff = (now or datetime.now(UTC)) - timedelta(days=retention_days)
    return await delete_in_batches(conn, "archive_delete_batch", cutoff, batch)


async def delete_in_batches(conn: Conn, query: str, cutoff: datetime, batch: int) -> int:
    """Run a `DELETE ... LIMIT %(batch)s` statement until it deletes fewer than `batch` rows
    (short transactions, no long lock); the rows deleted."""
    deleted = 0
    while True:
        n = await execute(conn, query, {"cutoff": cutoff, "batch": batch})
        deleted += n
        if n < batch:
            return deleted


class _Created(NamedTuple):
    created: int


async def ensure_partitions(conn: Conn, months_ahead: int = 3) -> int:
    row = await one(conn, _Created, "ensure_partitions_ahead", {"months": months_ahead})
    return row.created if row else 0
