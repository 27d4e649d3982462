"""What the demo shows and summarizes: coverage, the simulator's counters, budget use."""

from __future__ import annotations

from typing import Any

import httpx

from bf4ps.db.connect import Conn
from bf4ps.queue import figures


async def snapshot(conn: Conn, sim_url: str, window: float) -> dict[str, Any]:
    cur = await conn.execute(
        "SELECT (SELECT count(*) FROM soldiers) AS soldiers, "
        "(SELECT count(*) FROM counted_requests WHERE slot_at > now() - "
        "make_interval(secs => %(w)s)) AS counted, "
        "(SELECT count(*) FROM collectors WHERE health = 'healthy') AS healthy, "
        "(SELECT count(*) FROM collection_jobs WHERE status = 'pending' "
        " AND eligible_at <= now()) AS ready", {"w": window})
    row = await cur.fetchone() or {}
    async with httpx.AsyncClient(timeout=5) as client:
        sim = (await client.get(f"{sim_url}/__sim/stats")).json()
    return {"soldiers": row.get("soldiers", 0), "counted_recent": row.get("counted", 0),
            "healthy": row.get("healthy", 0), "ready": row.get("ready", 0),
            "coverage": await figures.coverage(conn), "sim": sim}


def collected(coverage: dict[str, dict[str, int]]) -> dict[str, int]:
    return {r: c.get("current", 0) for r, c in coverage.items()}


def summary(start: dict[str, Any], end: dict[str, Any], *, seconds: float, egresses: int,
            interval: float, url: str) -> dict[str, Any]:
    sim = end["sim"]
    capacity = egresses * seconds / interval
    return {
        "duration_seconds": round(seconds, 1),
        "url": url,
        "soldiers": end["soldiers"],
        "requests": {"total": sim["requests_total"], "by_resource": sim["by_resource"],
                     "by_outcome": sim["by_outcome"]},
        "coverage": {"start": start["coverage"], "end": end["coverage"],
                     "collected_start": collected(start["coverage"]),
                     "collected_end": collected(end["coverage"])},
        "budget": {"egresses": egresses, "interval_seconds": interval,
                   "capacity_requests": round(capacity),
                   "use": round(sim["requests_total"] / capacity, 3) if capacity else None},
        "violations": {"per_ip": sim["violations"]["total"],
                       "fleet": sim["fleet"]["violations"]},
    }
