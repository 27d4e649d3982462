"""The operator's status report: one structure for `bf4ps status`, the API and the console."""

from __future__ import annotations

from typing import Any

from bf4ps.db.connect import Conn
from bf4ps.db.queries import q
from bf4ps.domain import Lane
from bf4ps.queue import figures
from bf4ps.views import backlog


async def fleet(conn: Conn, include_retired: bool = False) -> list[dict[str, Any]]:
    cur = await conn.execute(q("collectors_list"), {"include_retired": include_retired})
    return [dict(r) for r in await cur.fetchall()]


def clock_fields(c: dict[str, Any]) -> dict[str, Any]:
    """A collector's clock against the database's, as it last measured it (collector/clock.py);
    clock_skewed: beyond its bound, so taking no send slots."""
    offset, rtt = c["clock_offset_seconds"], c["clock_rtt_seconds"]
    return {"clock_offset_seconds": round(offset, 6) if offset is not None else None,
            "clock_rtt_seconds": round(rtt, 6) if rtt is not None else None,
            "clock_checked_at": c["clock_checked_at"],
            "clock_skewed": c["clock_skewed_since"] is not None,
            "clock_skewed_since": c["clock_skewed_since"]}


def clock_text(c: dict[str, Any]) -> str:
    offset = c["clock_offset_seconds"]
    if offset is None:
        return "clock not measured"
    text = f"clock {offset:+.3f} s"
    if c["clock_skewed"]:
        text += " SKEWED: taking no send slots"
    return text


def _depth_totals(depth: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per lane, every lane (an idle one shows its zeros rather than disappearing)."""
    totals = {lane.value: {"ready": 0, "waiting_retry": 0, "claimed": 0, "running": 0}
              for lane in Lane}
    for row in depth:
        lane = totals[str(row["lane"])]
        for key in lane:
            lane[key] += int(row[key])
    return totals


async def soldier_count(conn: Conn) -> int:
    cur = await conn.execute(q("soldier_count"))
    row = await cur.fetchone()
    return int(row["n"]) if row else 0


async def gates(conn: Conn, window_seconds: float) -> list[dict[str, Any]]:
    """Every egress gate with the requests counted in its ledger over the window."""
    cur = await conn.execute(q("gates_overview"), {"window_seconds": window_seconds})
    return [dict(r) for r in await cur.fetchall()]


async def fleet_budget(conn: Conn) -> dict[str, Any]:
    """The fleet budget (requests None: off) and its use over its own rolling window."""
    cur = await conn.execute(q("fleet_use"))
    row = await cur.fetchone()
    assert row is not None  # the single budget row is created by the migration
    return dict(row)


async def budget_use(conn: Conn, window_seconds: float) -> dict[str, Any]:
    """Requests counted per egress over the window (against what its pacing allows), and the
    fleet budget's use over its own rolling window."""
    egresses = [{
        "egress": g["egress_key"], "min_interval_seconds": g["min_interval_seconds"],
        "requests": int(g["recent_requests"]),
        "allowed": int(window_seconds / float(g["min_interval_seconds"])),
        "throttle_streak": g["throttle_streak"], "cooldown_until": g["cooldown_until"],
        "cooling_down": g["cooling_down"],
    } for g in await gates(conn, window_seconds)]
    row = await fleet_budget(conn)
    fleet = None
    if row["requests"] is not None:
        fleet = {"requests": row["requests"], "window_seconds": row["window_seconds"],
                 "used": int(row["used"]), "use": round(int(row["used"]) / row["requests"], 3)}
    return {"window_seconds": window_seconds, "egresses": egresses, "fleet": fleet}


async def status_report(conn: Conn, window_seconds: float = 3600) -> dict[str, Any]:
    depth = await figures.queue_depth(conn)
    collectors = [{
        "name": c["collector_name"], "lane": c["lane"], "egress": c["egress_key"],
        "health": c["health"], "enabled": c["enabled"], "drained": c["drained"],
        "heartbeat_age_seconds": float(c["heartbeat_age"]) if c["heartbeat_age"] is not None
        else None,
        "current_job": c["current_job_id"], "version": c["software_version"],
        **clock_fields(c),
    } for c in await fleet(conn)]
    return {
        "soldiers": await soldier_count(conn),
        "queue_depth": {"by_lane": _depth_totals(depth), "detail": depth},
        "coverage": await figures.coverage(conn),
        "throughput": {"window_seconds": window_seconds,
                       "by_resource": await figures.throughput(conn, window_seconds)},
        "collectors": collectors,
        "budget": await budget_use(conn, window_seconds),
        "failures_by_class": await failures_by_class(conn, window_seconds),
        "circuits": await circuits(conn),
        "backlog": (await backlog.read(conn)).as_json(),
    }


async def circuits(conn: Conn) -> list[dict[str, Any]]:
    """Every fleet circuit breaker that ever opened (gates/circuit.py), with its held jobs."""
    cur = await conn.execute(q("circuit_list"))
    return [dict(r) for r in await cur.fetchall()]


async def failures_by_class(conn: Conn, window_seconds: float) -> dict[str, int]:
    """Failed attempts of the window per class (`unrecognized`: answers BF4PS does not know)."""
    cur = await conn.execute(q("failures_by_class"), {"window_seconds": window_seconds})
    return {str(r["error_class"]): int(r["n"]) for r in await cur.fetchall()}


def render_status(report: dict[str, Any]) -> str:
    lines = [f"soldiers: {report['soldiers']}", "queue depth (actionable work):"]
    for lane, t in sorted(report["queue_depth"]["by_lane"].items()):
        lines.append(f"  {lane:12} ready {t['ready']:>6}  claimed {t['claimed']:>3}  "
                     f"running {t['running']:>3}  waiting retry {t['waiting_retry']:>5}")
    lines.append("coverage (backlog, per resource):")
    for resource, counts in report["coverage"].items():
        parts = "  ".join(f"{k} {v}" for k, v in counts.items())
        lines.append(f"  {resource:9} {parts}")
    window = report["throughput"]["window_seconds"]
    lines.append(f"throughput (last {window:.0f} s):")
    for resource, t in sorted(report["throughput"]["by_resource"].items()):
        lines.append(f"  {resource:9} ok {t['succeeded']:>6}  failed {t['failed']:>4}")
    budget = report["budget"]
    lines.append(f"budget use (last {budget['window_seconds']:.0f} s):")
    for g in budget["egresses"]:
        lines.append(f"  {g['egress']:20} {g['requests']:>6} of {g['allowed']:>6} allowed"
                     + _throttle_note(g))
    if budget["fleet"]:
        f = budget["fleet"]
        lines.append(f"  fleet budget: {f['used']} of {f['requests']} per "
                     f"{f['window_seconds']:.0f} s ({100 * f['use']:.0f} %)")
    failures = report.get("failures_by_class") or {}
    if failures:
        lines.append("failed attempts by class: " + "  ".join(
            f"{k} {v}" for k, v in failures.items()))
    for c in report.get("circuits", []):
        if c["state"] == "open":
            lines.append(f"CIRCUIT OPEN {c['lane']}/{c['resource']}: {c['signature']} "
                         f"({c['soldiers']} soldiers, {c['egresses']} egresses), "
                         f"{c['held']} jobs held, probing every {c['probe_seconds']:.0f} s")
    lines += backlog.render_lines(_backlog_of(report["backlog"]))
    lines.append("collectors:")
    for c in report["collectors"]:
        age = c["heartbeat_age_seconds"]
        beat = f"last heartbeat {age:.0f} sec ago" if age is not None else "never seen"
        flags = " drained" if c["drained"] else ""
        lines.append(f"  {c['name']:16} {c['health']:8} {beat}  {c['lane']} {c['egress']}{flags}"
                     f"  {clock_text(c)}")
    return "\n".join(lines)


def _backlog_of(raw: dict[str, Any]) -> backlog.Backlog:
    return backlog.Backlog(raw["age_seconds"], backlog.lag_from_json(raw["refresh_lag"]),
                           raw["lag_window_seconds"], raw["lag_recorded_at"])


def _throttle_note(gate: dict[str, Any]) -> str:
    note = f"  throttled x{gate['throttle_streak']}" if gate["throttle_streak"] else ""
    if gate["cooling_down"]:
        note += f"  cooling down until {gate['cooldown_until']:%H:%M:%S} UTC"
    return note
