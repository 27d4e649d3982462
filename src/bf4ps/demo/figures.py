"""What the demo shows and summarizes: coverage, the simulator's counters, what failed and was
retried or throttled, and budget use against the capacity that had work."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one
from bf4ps.queue import figures


@dataclass(frozen=True, slots=True)
class Capacity:
    """The fleet's request capacity over a run: each egress that had work (made a request) at
    one request per `interval`, capped by the fleet budget when one is set."""

    egress_ips: dict[str, str]  # source address -> egress name
    interval: float
    budget_requests: int | None = None
    budget_window: float = 3600.0

    def of(self, seconds: float, by_ip: dict[str, Any]) -> dict[str, Any]:
        busy = sorted(name for ip, name in self.egress_ips.items()
                      if int((by_ip.get(ip) or {}).get("count", 0)) > 0)
        capacity = len(busy) * seconds / self.interval
        if self.budget_requests is not None:
            capacity = min(capacity, self.budget_requests * seconds / self.budget_window)
        return {"egresses": len(self.egress_ips), "egresses_with_work": busy,
                "interval_seconds": self.interval, "capacity_requests": round(capacity),
                "fleet_budget": None if self.budget_requests is None else {
                    "requests": self.budget_requests, "window_seconds": self.budget_window}}


async def snapshot(conn: Conn, sim_url: str, window: float) -> dict[str, Any]:
    row = await one(conn, "demo_snapshot", {"window_seconds": window}) or {}
    async with httpx.AsyncClient(timeout=5) as client:
        sim = (await client.get(f"{sim_url}/__sim/stats")).json()
    return {"soldiers": row.get("soldiers", 0), "counted_recent": row.get("counted", 0),
            "healthy": row.get("healthy", 0), "ready": row.get("ready", 0),
            "coverage": await figures.coverage(conn), "sim": sim}


async def outcomes(conn: Conn, since: datetime) -> dict[str, Any]:
    """Failed attempts by error class, retries, parked resources and throttles since `since`."""
    row = await one(conn, "demo_outcomes", {"since": since}) or {}
    failures = {str(k): int(v) for k, v in (row.get("failures") or {}).items()}
    return {"failures": {"total": sum(failures.values()), "by_error_class": failures},
            "retries_scheduled": int(row.get("retries") or 0),
            "unavailable": int(row.get("unavailable") or 0),
            "throttles": {"egress_cooldowns": int(row.get("throttles") or 0),
                          "throttled_answers": int(row.get("throttled_answers") or 0)}}


def budget_use(capacity: Capacity, seconds: float, sim: dict[str, Any]) -> dict[str, Any]:
    """The capacity over `seconds` and the share of it the simulator saw used."""
    budget = capacity.of(seconds, sim.get("by_ip") or {})
    cap = budget["capacity_requests"]
    budget["use"] = round(sim["requests_total"] / cap, 3) if cap else None
    return budget


async def progress(conn: Conn) -> dict[str, int]:
    """Soldiers with three detailed collections or more, and complete last-session reports
    (an ended session with a snapshot before it and its closing one collected)."""
    row = await one(conn, "sessions_progress") or {}
    return {"soldiers_with_3_snapshots": int(row.get("soldiers_with_3_snapshots") or 0),
            "session_reports": int(row.get("session_reports") or 0)}


def collected(coverage: dict[str, dict[str, int]]) -> dict[str, int]:
    return {r: c.get("current", 0) for r, c in coverage.items()}


EMPTY_SIM: dict[str, Any] = {"requests_total": 0, "by_resource": {}, "by_outcome": {},
                             "by_ip": {}, "violations": {"total": 0},
                             "fleet": {"violations": 0}}


def summary(start: dict[str, Any] | None, end: dict[str, Any] | None, *, seconds: float,
            capacity: Capacity, happened: dict[str, Any] | None, url: str,
            progress: dict[str, int] | None = None) -> dict[str, Any]:
    """The run's summary; `start`/`end` None when it stopped before the first snapshot."""
    first, last = start or {}, end or start or {}
    sim = last.get("sim") or EMPTY_SIM
    return {
        "duration_seconds": round(seconds, 1),
        "url": url,
        "soldiers": last.get("soldiers", 0),
        "requests": {"total": sim["requests_total"], "by_resource": sim["by_resource"],
                     "by_outcome": sim["by_outcome"]},
        "coverage": {"start": first.get("coverage", {}), "end": last.get("coverage", {}),
                     "collected_start": collected(first.get("coverage", {})),
                     "collected_end": collected(last.get("coverage", {}))},
        "outcomes": happened or {"failures": {"total": 0, "by_error_class": {}},
                                 "retries_scheduled": 0, "unavailable": 0,
                                 "throttles": {"egress_cooldowns": 0, "throttled_answers": 0}},
        "budget": budget_use(capacity, seconds, sim),
        "violations": {"per_ip": sim["violations"]["total"],
                       "fleet": sim["fleet"]["violations"]},
        "progress": progress or {"soldiers_with_3_snapshots": 0, "session_reports": 0},
    }
