"""Expired leases back to the queue (with lease_expired + reclaimed events). Claims also reclaim
expired leases inline, so correctness never depends on the reaper running."""

from __future__ import annotations

from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows


async def reap_expired(conn: Conn, limit: int = 100) -> int:
    return len(await all_rows(conn, "reap_expired", {"limit": limit}))
