"""The operator console's figures (/ops and /api/ops/*): fleet health, queue depth beside
coverage, throughput, budget use per egress and for the fleet, recent throttles and circuits.
Cheap queries only (coverage from the counters, the ledger and events over bounded windows)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from typing import NamedTuple
from uuid import UUID

from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows
from bf4ps.domain import JobKind, Lane
from bf4ps.queue import figures
from bf4ps.views import backlog
from bf4ps.views.events import Event
from bf4ps.views.fleet_rows import (
    BacklogView,
    Circuit,
    Clock,
    CollectorRow,
    DepthRow,
    LaneDepth,
    RestoreHold,
    ThroughputWindow,
    circuits,
    clock,
    failures_by_class,
    fleet_budget,
    gates,
    registry,
    restore_hold,
    soldier_count,
    throughput,
)
from bf4ps.views.soldier import Model

WINDOW_SECONDS = 3600.0


def _stamp(when: datetime | None) -> str:
    return "–" if when is None else f"{when.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"


class CurrentJob(Model):
    job_id: int
    resource: str
    status: str | None
    persona_id: int | None
    platform: str | None
    lookup_name: str | None
    soldier_name: str | None


class Collector(Clock):
    name: str
    uuid: UUID
    hostname: str
    lane: Lane
    egress: str
    state: str  # healthy, skewed, drained, stopped, unavailable, disabled, retired, unknown
    health: str
    summary: str  # the state as an operator reads it: 'last heartbeat 8 sec ago'
    enabled: bool
    drained: bool
    drained_at: datetime | None
    drain_reason: str | None
    heartbeat_lost_at: datetime | None
    last_heartbeat_at: datetime | None
    heartbeat_age_seconds: float | None
    version: str | None
    started_at: datetime | None
    current_job: CurrentJob | None


class Fleet(Model):
    collectors: list[Collector]


class QueueView(Model):
    by_resource: dict[str, LaneDepth]
    detail: list[DepthRow]


class Coverage(Model):
    soldiers: int
    by_resource: dict[str, dict[str, int]]  # resource -> collection-state status -> soldiers


class QueueBesideCoverage(LaneDepth):
    resource: str
    coverage: dict[str, int] | None


class FleetBudgetUse(Model):
    limit: int | None  # None: no fleet budget
    window_seconds: float
    used: int
    use_percent: float | None
    by_class: dict[str, int]


class EgressBudget(Model):
    egress: str
    min_interval_seconds: float
    window_requests: int | None
    window_seconds: float | None
    recent_requests: int
    capacity: int  # requests its pacing allows in the window
    use_percent: float
    next_slot_at: datetime | None
    cooldown_until: datetime | None
    throttle_streak: int
    last_throttle_at: datetime | None
    requests_total: int


class Budget(Model):
    fleet: FleetBudgetUse
    window_seconds: float
    egresses: list[EgressBudget]


class Throttles(Model):
    throttles: list[Event]


class Circuits(Model):
    circuits: list[Circuit]


class ConsoleStatus(Model):
    """Everything the console's front page shows."""

    fleet: list[Collector]
    queue: QueueView
    coverage: Coverage
    queue_vs_coverage: list[QueueBesideCoverage]
    throughput: ThroughputWindow
    budget: Budget
    throttles: list[Event]
    open_requests: dict[str, int]
    circuits: list[Circuit]
    failures_by_class: dict[str, int]
    backlog: BacklogView
    restore_hold: RestoreHold | None  # None: sends are not held


def health_text(c: CollectorRow) -> tuple[str, str]:
    """(state, words) as an operator reads it: 'healthy', 'last heartbeat 8 sec ago'."""
    if c.retired_at is not None:
        return "retired", f"retired {_stamp(c.retired_at)}"
    if not c.enabled:
        return "disabled", "disabled by an operator"
    if c.health == "lost":
        return "unavailable", f"unavailable since {_stamp(c.heartbeat_lost_at)}"
    if c.drained:
        return "drained", f"drained since {_stamp(c.drained_at)}: {c.drain_reason or ''}"
    if c.health == "stopped":
        return "stopped", f"stopped {_stamp(c.stopped_at)}"
    if c.health == "healthy" and c.clock_skewed_since is not None:
        return "skewed", (f"clock {c.clock_offset_seconds or 0:+.3f} s off the database's since "
                          f"{_stamp(c.clock_skewed_since)}: taking no send slots")
    if c.health == "healthy":
        age = c.heartbeat_age
        return "healthy", (f"last heartbeat {age:.0f} sec ago" if age is not None
                           else "no heartbeat yet")
    return "unknown", "never seen"


def collector(c: CollectorRow) -> Collector:
    state, words = health_text(c)
    job = None
    if c.current_job_id is not None and c.job_resource is not None:
        job = CurrentJob(job_id=c.current_job_id, resource=c.job_resource, status=c.job_status,
                         persona_id=c.job_persona_id, platform=c.job_platform,
                         lookup_name=c.job_lookup_name, soldier_name=c.job_soldier_name)
    age = c.heartbeat_age
    return Collector(
        name=c.collector_name, uuid=c.collector_uuid, hostname=c.hostname, lane=c.lane,
        egress=c.egress_key, state=state, health=c.health, summary=words, enabled=c.enabled,
        drained=c.drained, drained_at=c.drained_at, drain_reason=c.drain_reason,
        heartbeat_lost_at=c.heartbeat_lost_at, last_heartbeat_at=c.last_heartbeat_at,
        heartbeat_age_seconds=round(age, 1) if age is not None else None,
        version=c.software_version, started_at=c.started_at, current_job=job, **dict(clock(c)))


async def fleet(conn: Conn) -> Fleet:
    """Collectors and their health."""
    return Fleet(collectors=[collector(c) for c in await registry(conn)])


async def queue(conn: Conn) -> QueueView:
    """Queue depth (actionable work) per resource, and per lane, class and resource."""
    detail = [DepthRow(**asdict(r)) for r in await figures.queue_depth(conn)]
    by_resource: dict[str, LaneDepth] = {}
    for row in detail:
        t = by_resource.get(row.resource, LaneDepth())
        by_resource[row.resource] = LaneDepth(
            ready=t.ready + row.ready, waiting_retry=t.waiting_retry + row.waiting_retry,
            claimed=t.claimed + row.claimed, running=t.running + row.running)
    return QueueView(by_resource=by_resource, detail=detail)


async def coverage(conn: Conn) -> Coverage:
    """Coverage (the backlog) per resource and collection-state status."""
    return Coverage(soldiers=await soldier_count(conn), by_resource=await figures.coverage(conn))


def queue_vs_coverage(depth: QueueView, cov: Coverage) -> list[QueueBesideCoverage]:
    return [QueueBesideCoverage(resource=resource,
                                **dict(depth.by_resource.get(resource, LaneDepth())),
                                coverage=cov.by_resource.get(resource))
            for resource in [kind.value for kind in JobKind]]


class _ClassCount(NamedTuple):
    budget_class: str
    n: int


class StatusCount(NamedTuple):
    """A count per status (web_requests_open)."""

    status: str
    n: int


async def budget(conn: Conn, window: float = WINDOW_SECONDS) -> Budget:
    """Budget use per egress and for the fleet."""
    b = await fleet_budget(conn)
    classes = dict(await all_rows(conn, _ClassCount, "web_budget_by_class",
                                  {"window_seconds": b.window_seconds}))
    return Budget(
        fleet=FleetBudgetUse(limit=b.requests, window_seconds=b.window_seconds, used=b.used,
                             use_percent=round(100 * b.used / b.requests, 1) if b.requests
                             else None, by_class=classes),
        window_seconds=window,
        egresses=[EgressBudget(
            egress=g.egress_key, min_interval_seconds=g.min_interval_seconds,
            window_requests=g.window_requests, window_seconds=g.window_seconds,
            recent_requests=g.recent_requests, capacity=int(window / g.min_interval_seconds),
            use_percent=round(100 * g.recent_requests * g.min_interval_seconds / window, 1),
            next_slot_at=g.next_slot_at, cooldown_until=g.cooldown_until,
            throttle_streak=g.throttle_streak, last_throttle_at=g.last_throttle_at,
            requests_total=g.requests_total) for g in await gates(conn, window)])


async def throttles(conn: Conn, window: float = 86400.0, limit: int = 20) -> Throttles:
    """Throttle answers and the egress cool-downs they caused, newest first."""
    return Throttles(throttles=await all_rows(conn, Event, "web_recent_throttles",
                                              {"window_seconds": window, "limit": limit}))


async def open_circuits(conn: Conn) -> Circuits:
    """The fleet circuit breakers that ever opened (open ones first)."""
    rows = await circuits(conn)
    return Circuits(circuits=sorted(rows, key=lambda c: (c.state != "open", c.lane,
                                                         c.resource)))


async def status(conn: Conn) -> ConsoleStatus:
    """Everything the console shows."""
    depth = await queue(conn)
    cov = await coverage(conn)
    open_requests = dict(await all_rows(conn, StatusCount, "web_requests_open"))
    return ConsoleStatus(
        fleet=(await fleet(conn)).collectors, queue=depth, coverage=cov,
        queue_vs_coverage=queue_vs_coverage(depth, cov),
        throughput=await throughput(conn, WINDOW_SECONDS), budget=await budget(conn),
        throttles=(await throttles(conn)).throttles, open_requests=open_requests,
        circuits=(await open_circuits(conn)).circuits,
        failures_by_class=await failures_by_class(conn, WINDOW_SECONDS),
        backlog=BacklogView.of(await backlog.read(conn)),
        restore_hold=await restore_hold(conn))
