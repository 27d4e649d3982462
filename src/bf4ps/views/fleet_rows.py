"""The fleet's typed rows that `bf4ps status` and the console are made of: the collector
registry (`bf4ps collector list`), clocks, queue depth, throughput, egress gates, the fleet
budget, circuit breakers, failures by class and the backlog."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from ipaddress import IPv4Address, IPv6Address
from typing import NamedTuple
from uuid import UUID

from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, one, one_row
from bf4ps.domain import Lane
from bf4ps.gates.gate import Gate
from bf4ps.gates.restore import standing_hold
from bf4ps.queue import figures
from bf4ps.views import backlog
from bf4ps.views.backlog import LagFigure
from bf4ps.views.soldier import Model


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
    db_login: str | None  # the login that registered it (its events are that login's only)
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


class Throughput(Model):
    succeeded: int = 0
    failed: int = 0
    avg_duration_ms: float | None = None


class ThroughputWindow(Model):
    window_seconds: float
    by_resource: dict[str, Throughput]


@dataclass(frozen=True)
class GateUse(Gate):
    """An egress gate (gates_overview), cooling down now or not, with the requests its ledger
    counted over a window."""

    cooling_down: bool
    recent_requests: int


class FleetBudget(Model):
    """The fleet budget (requests None: off) and its use over its own rolling window."""

    requests: int | None
    window_seconds: float
    used: int


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


class RestoreHold(Model):
    """Sends held by the restore guard: a detected restore's hold, or the run rule's
    (run_rule: a server start no running process vouched for; `bf4ps db vouch`)."""

    until: datetime
    reason: str
    run_rule: bool


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
        return backlog.Backlog(self.age_seconds, self.refresh_lag, self.lag_window_seconds,
                               self.lag_recorded_at)


async def registry(conn: Conn, include_retired: bool = False) -> list[CollectorRow]:
    return await all_rows(conn, CollectorRow, "collectors_list",
                          {"include_retired": include_retired})


def clock(c: CollectorRow) -> Clock:
    offset, rtt = c.clock_offset_seconds, c.clock_rtt_seconds
    return Clock(clock_offset_seconds=round(offset, 6) if offset is not None else None,
                 clock_rtt_seconds=round(rtt, 6) if rtt is not None else None,
                 clock_checked_at=c.clock_checked_at,
                 clock_skewed=c.clock_skewed_since is not None,
                 clock_skewed_since=c.clock_skewed_since)


async def gates(conn: Conn, window_seconds: float) -> list[GateUse]:
    return await all_rows(conn, GateUse, "gates_overview", {"window_seconds": window_seconds})


async def fleet_budget(conn: Conn) -> FleetBudget:
    # the single budget row is created by the migration
    return await one_row(conn, FleetBudget, "fleet_use")


async def circuits(conn: Conn) -> list[Circuit]:
    return await all_rows(conn, Circuit, "circuit_list")


class _ClassCount(NamedTuple):
    error_class: str
    n: int


class _Count(NamedTuple):
    n: int


async def failures_by_class(conn: Conn, window_seconds: float) -> dict[str, int]:
    """Failed attempts of the window per class (`unrecognized`: answers BF4PS does not know)."""
    return dict(await all_rows(conn, _ClassCount, "failures_by_class",
                               {"window_seconds": window_seconds}))


async def soldier_count(conn: Conn) -> int:
    row = await one(conn, _Count, "soldier_count")
    return row.n if row else 0


async def throughput(conn: Conn, window_seconds: float) -> ThroughputWindow:
    rows = await figures.throughput(conn, window_seconds)
    return ThroughputWindow(window_seconds=window_seconds,
                            by_resource={k: Throughput(**asdict(v)) for k, v in rows.items()})


async def restore_hold(conn: Conn) -> RestoreHold | None:
    held = await standing_hold(conn)
    if held is None:
        return None
    return RestoreHold(until=held.until, reason=held.reason, run_rule=held.run_rule)
