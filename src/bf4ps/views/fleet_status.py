"""The fleet's status as `bf4ps status` shows it (text and --json): soldiers, queue depth beside
coverage, throughput, collectors with their clocks, budget use, failures by class, circuits and
the backlog; and the collector registry's rows (`bf4ps collector list`, the console)."""

from __future__ import annotations

from datetime import datetime
from ipaddress import IPv4Address, IPv6Address
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from bf4ps.db.connect import Conn
from bf4ps.db.queries import q
from bf4ps.domain import Lane
from bf4ps.queue import figures
from bf4ps.views import backlog


class Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CollectorRow(Model):
    """One registration (collectors_list): the registry's columns and the live job it holds."""

    collector_uuid: UUID
    collector_name: str
    hostname: str
    lane: Lane
    egress_key: str
    source_address: IPv4Address | IPv6Address | None
    enabled: bool
    drained: bool
    drained_at: datetime | None
    drain_reason: str | None
    registered_at: datetime
    started_at: datetime | None
    stopped_at: datetime | None
    last_heartbeat_at: datetime | None
    health: str
    heartbeat_lost_at: datetime | None
    software_version: str | None
    pid: int | None
    retired_at: datetime | None
    replaced_by: UUID | None
    updated_at: datetime
    clock_offset_seconds: float | None
    clock_rtt_seconds: float | None
    clock_checked_at: datetime | None
    clock_skewed_since: datetime | None
    current_job_id: int | None
    job_resource: str | None
    job_status: str | None
    job_persona_id: int | None
    job_soldier_name: str | None
    job_platform: str | None
    job_lookup_name: str | None
    heartbeat_age: float | None  # seconds since the last heartbeat


class Clock(Model):
    """A collector's clock against the database's, as it last measured it (collector/clock.py);
    clock_skewed: beyond its bound, so taking no send slots."""

    clock_offset_seconds: float | None
    clock_rtt_seconds: float | None
    clock_checked_at: datetime | None
    clock_skewed: bool
    clock_skewed_since: datetime | None


class LaneDepth(Model):
    ready: int = 0
    waiting_retry: int = 0
    claimed: int = 0
    running: int = 0


class DepthRow(LaneDepth):
    lane: Lane
    priority_class: str
    resource: str
    oldest_rank: datetime | None  # the rank of the oldest ready job (a time)


class QueueDepth(Model):
    by_lane: dict[str, LaneDepth]
    detail: list[DepthRow]


class Throughput(Model):
    succeeded: int = 0
    failed: int = 0
    avg_duration_ms: float | None = None


class ThroughputWindow(Model):
    window_seconds: float
    by_resource: dict[str, Throughput]


class StatusCollector(Clock):
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


class Circuit(Model):
    """A fleet circuit breaker that ever opened (gates/circuit.py), with its held jobs."""

    lane: Lane
    resource: str
    state: str
    signature: str | None
    opened_at: datetime | None
    closed_at: datetime | None
    next_probe_at: datetime | None
    probe_seconds: float
    probe_successes: int
    close_successes: int
    soldiers: int
    egresses: int
    times_opened: int
    held: int


class LagFigure(Model):
    p50: float
    p95: float
    n: int


class BacklogView(Model):
    age_seconds: dict[str, dict[str, float]]  # class -> resource -> seconds (0: none waiting)
    refresh_lag: dict[str, dict[str, LagFigure]]
    lag_window_seconds: float
    lag_recorded_at: datetime | None

    @classmethod
    def of(cls, b: backlog.Backlog) -> BacklogView:
        return cls(age_seconds=b.age_seconds, refresh_lag={
            k: {r: LagFigure(p50=round(v.p50, 1), p95=round(v.p95, 1), n=v.n)
                for r, v in by.items()} for k, by in b.lag.items()},
            lag_window_seconds=b.lag_window_seconds, lag_recorded_at=b.lag_recorded_at)

    def backlog(self) -> backlog.Backlog:
        return backlog.Backlog(self.age_seconds, {
            k: {r: backlog.Lag(v.p50, v.p95, v.n) for r, v in by.items()}
            for k, by in self.refresh_lag.items()}, self.lag_window_seconds,
            self.lag_recorded_at)


class StatusReport(Model):
    soldiers: int
    queue_depth: QueueDepth
    coverage: dict[str, dict[str, int]]  # resource -> collection-state status -> soldiers
    throughput: ThroughputWindow
    collectors: list[StatusCollector]
    budget: BudgetUse
    failures_by_class: dict[str, int]
    circuits: list[Circuit]
    backlog: BacklogView


async def registry(conn: Conn, include_retired: bool = False) -> list[CollectorRow]:
    cur = await conn.execute(q("collectors_list"), {"include_retired": include_retired})
    return [CollectorRow(**r) for r in await cur.fetchall()]


def clock(c: CollectorRow) -> Clock:
    offset, rtt = c.clock_offset_seconds, c.clock_rtt_seconds
    return Clock(clock_offset_seconds=round(offset, 6) if offset is not None else None,
                 clock_rtt_seconds=round(rtt, 6) if rtt is not None else None,
                 clock_checked_at=c.clock_checked_at,
                 clock_skewed=c.clock_skewed_since is not None,
                 clock_skewed_since=c.clock_skewed_since)


def clock_text(c: Clock) -> str:
    offset = c.clock_offset_seconds
    if offset is None:
        return "clock not measured"
    text = f"clock {offset:+.3f} s"
    if c.clock_skewed:
        text += " SKEWED: taking no send slots"
    return text


async def queue_depth(conn: Conn) -> QueueDepth:
    """Per lane, every lane (an idle one shows its zeros rather than disappearing)."""
    detail = [DepthRow(**r) for r in await figures.queue_depth(conn)]
    totals = {lane.value: LaneDepth() for lane in Lane}
    for row in detail:
        t = totals[row.lane.value]
        totals[row.lane.value] = LaneDepth(
            ready=t.ready + row.ready, waiting_retry=t.waiting_retry + row.waiting_retry,
            claimed=t.claimed + row.claimed, running=t.running + row.running)
    return QueueDepth(by_lane=totals, detail=detail)


async def throughput(conn: Conn, window_seconds: float) -> ThroughputWindow:
    rows = await figures.throughput(conn, window_seconds)
    return ThroughputWindow(window_seconds=window_seconds,
                            by_resource={k: Throughput(**v) for k, v in rows.items()})


async def soldier_count(conn: Conn) -> int:
    cur = await conn.execute(q("soldier_count"))
    row = await cur.fetchone()
    return int(row["n"]) if row else 0


class Gate(Model):
    """An egress gate (gates_overview) with the requests its ledger counted over a window."""

    egress_key: str
    min_interval_seconds: float
    window_requests: int | None
    window_seconds: float | None
    next_slot_at: datetime | None
    cooldown_until: datetime | None
    throttle_streak: int
    last_throttle_at: datetime | None
    requests_total: int
    cooling_down: bool
    recent_requests: int


class FleetBudget(Model):
    """The fleet budget (requests None: off) and its use over its own rolling window."""

    requests: int | None
    window_seconds: float
    used: int


async def gates(conn: Conn, window_seconds: float) -> list[Gate]:
    cur = await conn.execute(q("gates_overview"), {"window_seconds": window_seconds})
    return [Gate(**r) for r in await cur.fetchall()]


async def fleet_budget(conn: Conn) -> FleetBudget:
    cur = await conn.execute(q("fleet_use"))
    row = await cur.fetchone()
    assert row is not None  # the single budget row is created by the migration
    return FleetBudget(**row)


async def budget_use(conn: Conn, window_seconds: float) -> BudgetUse:
    """Requests counted per egress over the window (against what its pacing allows), and the
    fleet budget's use over its own rolling window."""
    egresses = [EgressUse(
        egress=g.egress_key, min_interval_seconds=g.min_interval_seconds,
        requests=g.recent_requests, allowed=int(window_seconds / g.min_interval_seconds),
        throttle_streak=g.throttle_streak, cooldown_until=g.cooldown_until,
        cooling_down=g.cooling_down) for g in await gates(conn, window_seconds)]
    b = await fleet_budget(conn)
    fleet = None
    if b.requests is not None:
        fleet = FleetUse(requests=b.requests, window_seconds=b.window_seconds, used=b.used,
                         use=round(b.used / b.requests, 3))
    return BudgetUse(window_seconds=window_seconds, egresses=egresses, fleet=fleet)


async def circuits(conn: Conn) -> list[Circuit]:
    cur = await conn.execute(q("circuit_list"))
    return [Circuit(**r) for r in await cur.fetchall()]


async def failures_by_class(conn: Conn, window_seconds: float) -> dict[str, int]:
    """Failed attempts of the window per class (`unrecognized`: answers BF4PS does not know)."""
    cur = await conn.execute(q("failures_by_class"), {"window_seconds": window_seconds})
    return {str(r["error_class"]): int(r["n"]) for r in await cur.fetchall()}


def status_collector(c: CollectorRow) -> StatusCollector:
    return StatusCollector(
        name=c.collector_name, lane=c.lane, egress=c.egress_key, health=c.health,
        enabled=c.enabled, drained=c.drained, heartbeat_age_seconds=c.heartbeat_age,
        current_job=c.current_job_id, version=c.software_version, **dict(clock(c)))


async def status_report(conn: Conn, window_seconds: float = 3600) -> StatusReport:
    return StatusReport(
        soldiers=await soldier_count(conn), queue_depth=await queue_depth(conn),
        coverage=await figures.coverage(conn),
        throughput=await throughput(conn, window_seconds),
        collectors=[status_collector(c) for c in await registry(conn)],
        budget=await budget_use(conn, window_seconds),
        failures_by_class=await failures_by_class(conn, window_seconds),
        circuits=await circuits(conn), backlog=BacklogView.of(await backlog.read(conn)))


def render_status(report: StatusReport) -> str:
    lines = [f"soldiers: {report.soldiers}", "queue depth (actionable work):"]
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


def _throttle_note(gate: EgressUse) -> str:
    note = f"  throttled x{gate.throttle_streak}" if gate.throttle_streak else ""
    if gate.cooling_down:
        note += f"  cooling down until {gate.cooldown_until:%H:%M:%S} UTC"
    return note
