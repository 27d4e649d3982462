"""Activity classes on the collection state: intake copies sightings in, the scheduler decays
them as windows pass, stale resources of active soldiers become due, and their parked ones are
tried once more after the recheck interval."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from bf4ps.db.connect import Conn
from bf4ps.db.queries import execute, one
from bf4ps.policy import Policy

RECHECK_BATCH = 1000  # parked resources revived per sweep at most


def _windows(policy: Policy) -> dict[str, float]:
    return {"active_seconds": policy.active_window_seconds,
            "recent_seconds": policy.recent_window_seconds}


async def refresh(conn: Conn, soldier_ids: Sequence[int], policy: Policy) -> int:
    """Reclassify these soldiers' resources from their last_seen (after an intake batch)."""
    if not soldier_ids:
        return 0
    return await execute(conn, "activity_refresh",
                             {"soldier_ids": list(soldier_ids), **_windows(policy)})


async def decay(conn: Conn, policy: Policy) -> int:
    return await execute(conn, "activity_decay", _windows(policy))


async def mark_due(conn: Conn, spread_seconds: float) -> int:
    """Mark stale resources of active soldiers due, each due time spread over the
    `spread_seconds` before it (the sweep period: the due_sweep query says why)."""
    return await execute(conn, "due_sweep", {"spread_seconds": max(0.0, spread_seconds)})


class _Count(NamedTuple):
    n: int


async def recheck_parked(conn: Conn, policy: Policy, batch: int = RECHECK_BATCH) -> int:
    """Parked resources of active soldiers whose last attempt is older than the policy's
    recheck interval go back to retry_wait (one more try; feed_retry queues them)."""
    if policy.unavailable_recheck_seconds <= 0:
        return 0
    row = await one(conn, _Count, "parked_recheck", {
        "recheck_seconds": policy.unavailable_recheck_seconds, "n": batch})
    return row.n if row else 0
