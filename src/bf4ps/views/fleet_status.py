"""The fleet's status as `bf4ps status` shows it (text and --json): soldiers, queue depth beside
coverage, throughput, collectors with their clocks, budget use, failures by class, circuits and
the backlog. The rows it is made of (shared with the console): fleet_rows.py."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime

from bf4ps.db.connect import Conn
from bf4ps.domain import Lane
from bf4ps.queue import figures
from bf4ps.views import backlog
from bf4ps.views import fleet_rows as rows
from bf4ps.views.soldier import Model


class QueueDepth(Model):
    by_lane: dict[str, rows.LaneDepth]
    detail: list[rows.DepthRow]


class StatusCollector(rows.Clock):
    name: str
    lane: Lane
    egress: str
    health: str
    enabled: bool
    drained: bool
    heartbeat_age_seconds: float | None
    current_job: int | None
    version: str | None


class EgressUse(Model):
    egress: str
    min_interval_seconds: float
    requests: int  # counted over the window
    allowed: int  # what its pacing allows over the window
    throttle_streak: int
    cooldown_until: datetime | None
    cooling_down: bool


class FleetUse(Model):
    requests: int
    window_seconds: float
    used: int
    use: float  # used / requests


class BudgetUse(Model):
    window_seconds: float
    egresses: list[EgressUse]
    fleet: FleetUse | None  # None: no fleet budget


class StatusReport(Model):
    soldiers: int
    queue_depth: QueueDepth
    coverage: dict[str, dict[str, int]]  # resource -> collection-state status -> soldiers
    throughput: rows.ThroughputWindow
    collectors: list[StatusCollector]
    budget: BudgetUse
    failures_by_class: dict[str, int]
    circuits: list[rows.Circuit]
    backlog: rows.BacklogView
    restore_hold: rows.RestoreHold | None  # None: sends are not held


def clock_text(c: rows.Clock) -> str:
    offset = c.clock_offset_seconds
    if offset is None:
        return "clock not measured"
    text = f"clock {offset:+.3f} s"
    if c.clock_skewed:
        text += " SKEWED: taking no send slots"
    return text


async def queue_depth(conn: Conn) -> QueueDepth:
    """Per lane, every lane (an idle one shows its zeros rather than disappearing)."""
    detail = [rows.DepthRow(**asdict(r)) for r in await figures.queue_depth(conn)]
    totals = {lane.value: rows.LaneDepth() for lane in Lane}
    for row in detail:
        t = totals[row.lane.value]
        totals[row.lane.value] = rows.LaneDepth(
            ready=t.ready + row.ready, waiting_retry=t.waiting_retry + row.waiting_retry,
            claimed=t.claimed + row.claimed, running=t.running + row.running)
    return QueueDepth(by_lane=totals, detail=detail)


async def budget_use(conn: Conn, window_seconds: float) -> BudgetUse:
    """Requests counted per egress over the window (against what its pacing allows), and the
    fleet budget's use over its own rolling window."""
    egresses = [EgressUse(
        egress=g.egress_key, min_interval_seconds=g.min_interval_seconds,
        requests=g.recent_requests, allowed=int(window_seconds / g.min_interval_seconds),
        throttle_streak=g.throttle_streak, cooldown_until=g.cooldown_until,
        cooling_down=g.cooling_down) for g in await rows.gates(conn, window_seconds)]
    b = await rows.fleet_budget(conn)
    fleet = None
    if b.requests is not None:
        fleet = FleetUse(requests=b.requests, window_seconds=b.window_seconds, used=b.used,
                         use=round(b.used / b.requests, 3))
    return BudgetUse(window_seconds=window_seconds, egresses=egresses, fleet=fleet)


def status_collector(c: rows.CollectorRow) -> StatusCollector:
    return StatusCollector(
        name=c.collector_name, lane=c.lane, egress=c.egress_key, health=c.health,
        enabled=c.enabled, drained=c.drained, heartbeat_age_seconds=c.heartbeat_age,
        current_job=c.current_job_id, version=c.software_version, **dict(rows.clock(c)))


async def status_report(conn: Conn, window_seconds: float = 3600) -> StatusReport:
    return StatusReport(
        soldiers=await rows.soldier_count(conn), queue_depth=await queue_depth(conn),
        coverage=await figures.coverage(conn),
        throughput=await rows.throughput(conn, window_seconds),
        collectors=[status_collector(c) for c in await rows.registry(conn)],
        budget=await budget_use(conn, window_seconds),
        failures_by_class=await rows.failures_by_class(conn, window_seconds),
        circuits=await rows.circuits(conn), backlog=rows.BacklogView.of(await backlog.read(conn)),
        restore_hold=await rows.restore_hold(conn))


def render_status(report: StatusReport) -> str:
    lines = [f"soldiers: {report.soldiers}", *hold_lines(report.restore_hold),
             "queue depth (actionable work):"]
    for lane, t in sorted(report.queue_depth.by_lane.items()):
        lines.append(f"  {lane:12} ready {t.ready:>6}  claimed {t.claimed:>3}  "
                     f"running {t.running:>3}  waiting retry {t.waiting_retry:>5}")
    lines.append("coverage (backlog, per resource):")
    for resource, counts in report.coverage.items():
        parts = "  ".join(f"{k} {v}" for k, v in counts.items())
        lines.append(f"  {resource:9} {parts}")
    lines.append(f"throughput (last {report.throughput.window_seconds:.0f} s):")
    for resource, tp in sorted(report.throughput.by_resource.items()):
        lines.append(f"  {resource:9} ok {tp.succeeded:>6}  failed {tp.failed:>4}")
    budget = report.budget
    lines.append(f"budget use (last {budget.window_seconds:.0f} s):")
    for g in budget.egresses:
        lines.append(f"  {g.egress:20} {g.requests:>6} of {g.allowed:>6} allowed"
                     + _throttle_note(g))
    if budget.fleet:
        f = budget.fleet
        lines.append(f"  fleet budget: {f.used} of {f.requests} per "
                     f"{f.window_seconds:.0f} s ({100 * f.use:.0f} %)")
    if report.failures_by_class:
        lines.append("failed attempts by class: " + "  ".join(
            f"{k} {v}" for k, v in report.failures_by_class.items()))
    for c in report.circuits:
        if c.state == "open":
            lines.append(f"CIRCUIT OPEN {c.lane}/{c.resource}: {c.signature} "
                         f"({c.soldiers} soldiers, {c.egresses} egresses), "
                         f"{c.held} jobs held, probing every {c.probe_seconds:.0f} s")
    lines += backlog.render_lines(report.backlog.backlog())
    lines.append("collectors:")
    for s in report.collectors:
        age = s.heartbeat_age_seconds
        beat = f"last heartbeat {age:.0f} sec ago" if age is not None else "never seen"
        flags = " drained" if s.drained else ""
        lines.append(f"  {s.name:16} {s.health:8} {beat}  {s.lane} {s.egress}{flags}"
                     f"  {clock_text(s)}")
    return "\n".join(lines)


def hold_lines(held: rows.RestoreHold | None) -> list[str]:
    if held is None:
        return []
    return [f"SENDS HELD until {held.until:%Y-%m-%d %H:%M:%S} UTC by the restore guard: "
            f"{held.reason}"]


def _throttle_note(gate: EgressUse) -> str:
    note = f"  throttled x{gate.throttle_streak}" if gate.throttle_streak else ""
    if gate.cooling_down:
        note += f"  cooling down until {gate.cooldown_until:%H:%M:%S} UTC"
    return note
