"""The operator console's figures: fleet health, queue depth beside coverage, throughput,
budget use per egress and for the fleet, recent throttles, and the event-log search. Cheap
queries only (coverage from the counters, the ledger and events over bounded windows)."""

from __future__ import annotations

from typing import Any

from bf4ps import eventlog, ops
from bf4ps.db.connect import Conn
from bf4ps.db.queries import q
from bf4ps.domain import Resource
from bf4ps.eventlog import EventFilter
from bf4ps.queue import figures
from bf4ps.views import backlog, fleet_history
from bf4ps.web.format import stamp

WINDOW_SECONDS = 3600.0
DEPTH_KEYS = ("ready", "waiting_retry", "claimed", "running")


async def _all(conn: Conn, name: str, params: dict[str, Any] | None = None
               ) -> list[dict[str, Any]]:
    cur = await conn.execute(q(name), params or {})
    return await cur.fetchall()


def health_text(c: dict[str, Any]) -> tuple[str, str]:
    """(state, words) as an operator reads it: 'healthy', 'last heartbeat 8 sec ago'."""
    if c["retired_at"] is not None:
        return "retired", f"retired {stamp(c['retired_at'])}"
    if not c["enabled"]:
        return "disabled", "disabled by an operator"
    if c["health"] == "lost":
        return "unavailable", f"unavailable since {stamp(c['heartbeat_lost_at'])}"
    if c["drained"]:
        return "drained", f"drained since {stamp(c['drained_at'])}: {c['drain_reason'] or ''}"
    if c["health"] == "stopped":
        return "stopped", f"stopped {stamp(c['stopped_at'])}"
    if c["health"] == "healthy" and c["clock_skewed_since"] is not None:
        return "skewed", (f"clock {c['clock_offset_seconds']:+.3f} s off the database's since "
                          f"{stamp(c['clock_skewed_since'])}: taking no send slots")
    if c["health"] == "healthy":
        age = c["heartbeat_age"]
        return "healthy", (f"last heartbeat {float(age):.0f} sec ago" if age is not None
                           else "no heartbeat yet")
    return "unknown", "never seen"


def collector_dict(c: dict[str, Any]) -> dict[str, Any]:
    state, words = health_text(c)
    job = None
    if c["current_job_id"] is not None and c["job_resource"] is not None:
        job = {"job_id": c["current_job_id"], "resource": c["job_resource"],
               "status": c["job_status"], "persona_id": c["job_persona_id"],
               "platform": c["job_platform"], "lookup_name": c["job_lookup_name"],
               "soldier_name": c.get("job_soldier_name")}
    age = c["heartbeat_age"]
    return {"name": c["collector_name"], "uuid": str(c["collector_uuid"]),
            "hostname": c["hostname"], "lane": c["lane"], "egress": c["egress_key"],
            "state": state, "health": c["health"], "summary": words,
            "enabled": c["enabled"], "drained": c["drained"], "drained_at": c["drained_at"],
            "drain_reason": c["drain_reason"], "heartbeat_lost_at": c["heartbeat_lost_at"],
            "last_heartbeat_at": c["last_heartbeat_at"],
            "heartbeat_age_seconds": round(float(age), 1) if age is not None else None,
            "version": c["software_version"], "started_at": c["started_at"], "current_job": job,
            **ops.clock_fields(c)}


async def fleet(conn: Conn) -> list[dict[str, Any]]:
    return [collector_dict(c) for c in await ops.fleet(conn)]


async def queue(conn: Conn) -> dict[str, Any]:
    detail = await figures.queue_depth(conn)
    by_resource: dict[str, dict[str, int]] = {}
    for row in detail:
        entry = by_resource.setdefault(str(row["resource"]), dict.fromkeys(DEPTH_KEYS, 0))
        for key in DEPTH_KEYS:
            entry[key] += int(row[key])
    return {"by_resource": by_resource, "detail": [
        {k: row[k] for k in ("lane", "priority_class", "resource", *DEPTH_KEYS, "oldest_rank")}
        for row in detail]}


async def coverage(conn: Conn) -> dict[str, Any]:
    return {"soldiers": await ops.soldier_count(conn),
            "by_resource": await figures.coverage(conn)}


def queue_vs_coverage(depth: dict[str, Any], cov: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for resource in [*(r.value for r in Resource), "lookup"]:
        d = depth["by_resource"].get(resource, dict.fromkeys(DEPTH_KEYS, 0))
        rows.append({"resource": resource, **d,
                     "coverage": cov["by_resource"].get(resource)})
    return rows


async def throughput(conn: Conn, window: float = WINDOW_SECONDS) -> dict[str, Any]:
    return {"window_seconds": window, "by_resource": await figures.throughput(conn, window)}


async def budget(conn: Conn, window: float = WINDOW_SECONDS) -> dict[str, Any]:
    fleet_row = await ops.fleet_budget(conn)
    fleet_window = float(fleet_row["window_seconds"])
    limit = fleet_row["requests"]
    used = int(fleet_row["used"])
    gates = await ops.gates(conn, window)
    classes = await _all(conn, "web_budget_by_class", {"window_seconds": fleet_window})
    return {
        "fleet": {"limit": limit, "window_seconds": fleet_window, "used": used,
                  "use_percent": round(100 * used / limit, 1) if limit else None,
                  "by_class": {str(r["budget_class"]): int(r["n"]) for r in classes}},
        "window_seconds": window,
        "egresses": [{
            "egress": g["egress_key"], "min_interval_seconds": g["min_interval_seconds"],
            "window_requests": g["window_requests"], "window_seconds": g["window_seconds"],
            "recent_requests": int(g["recent_requests"]),
            "capacity": int(window / float(g["min_interval_seconds"])),
            "use_percent": round(100 * int(g["recent_requests"]) * float(
                g["min_interval_seconds"]) / window, 1),
            "next_slot_at": g["next_slot_at"], "cooldown_until": g["cooldown_until"],
            "throttle_streak": g["throttle_streak"], "last_throttle_at": g["last_throttle_at"],
            "requests_total": int(g["requests_total"])} for g in gates],
    }


async def throttles(conn: Conn, window: float = 86400.0, limit: int = 20
                    ) -> list[dict[str, Any]]:
    return await _all(conn, "web_recent_throttles", {"window_seconds": window, "limit": limit})


async def status(conn: Conn) -> dict[str, Any]:
    """Everything the console's front page shows."""
    depth = await queue(conn)
    cov = await coverage(conn)
    open_requests = {str(r["status"]): int(r["n"]) for r in await _all(conn,
                                                                        "web_requests_open")}
    return {"fleet": await fleet(conn), "queue": depth, "coverage": cov,
            "queue_vs_coverage": queue_vs_coverage(depth, cov),
            "throughput": await throughput(conn), "budget": await budget(conn),
            "throttles": await throttles(conn), "open_requests": open_requests,
            "circuits": await circuits(conn),
            "failures_by_class": await ops.failures_by_class(conn, WINDOW_SECONDS),
            "backlog": (await backlog.read(conn)).as_json()}


async def circuits(conn: Conn) -> list[dict[str, Any]]:
    """The fleet circuit breakers that ever opened (open ones first)."""
    rows = await ops.circuits(conn)
    return sorted(rows, key=lambda c: (c["state"] != "open", c["lane"], c["resource"]))


async def history(conn: Conn) -> dict[str, Any]:
    """The fleet-history chart series (the console's charts, /api/ops/history)."""
    return (await fleet_history.read(conn)).as_json()


async def events(conn: Conn, query: EventFilter) -> list[dict[str, Any]]:
    return await eventlog.search(conn, query)
