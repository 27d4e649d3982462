"""Queue depth (actionable work) and coverage (total backlog): separate figures by design."""

from __future__ import annotations

from typing import Any

from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, one
from bf4ps.domain import Resource, StateStatus


async def queue_depth(conn: Conn) -> list[dict[str, Any]]:
    return [dict(row) for row in await all_rows(conn, "queue_depth")]


async def coverage(conn: Conn) -> dict[str, dict[str, int]]:
    """Per resource: count of soldiers per collection-state status (zeros included)."""
    table = {r.value: {s.value: 0 for s in StateStatus} for r in Resource}
    for row in await all_rows(conn, "coverage"):
        table[str(row["resource"])][str(row["status"])] = int(str(row["n"]))
    return table


async def fold_coverage(conn: Conn) -> int:
    """Fold the coverage deltas into the counters (the scheduler's tick); the rows folded. The
    figures are exact either way: `coverage` adds the deltas not folded yet."""
    row = await one(conn, "coverage_fold")
    return int(str(row["folded"])) if row else 0


async def throughput(conn: Conn, window_seconds: float) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for row in await all_rows(conn, "throughput", {"window_seconds": window_seconds}):
        entry = out.setdefault(str(row["resource"]), {"succeeded": 0, "failed": 0})
        entry[str(row["event_type"])] = int(str(row["n"]))
        if row["event_type"] == "succeeded" and row["avg_duration_ms"] is not None:
            entry["avg_duration_ms"] = round(float(str(row["avg_duration_ms"])), 1)
    return out
