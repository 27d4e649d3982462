"""What the demo shows and summarizes: coverage, the simulator's counters, what failed and was
retried or throttled, and budget use against the capacity that had work."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, NamedTuple

import httpx

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one_row
from bf4ps.queue import figures


@dataclass(frozen=True, slots=True)
class FleetBudget:
    requests: int
    window_seconds: float


@dataclass(frozen=True, slots=True)
class Budget:
    """The capacity of a run so far, and the share of it the simulator saw used."""

    egresses: int
    egresses_with_work: list[str]
    interval_seconds: float
    capacity_requests: int
    fleet_budget: FleetBudget | None
    use: float | None = None


@dataclass(frozen=True, slots=True)
class Capacity:
    """The fleet's request capacity over a run: each egress that had work (made a request) at
    one request per `interval`, capped by the fleet budget when one is set."""

    egress_ips: dict[str, str]  # source address -> egress name
    interval: float
    budget: FleetBudget | None = None

    def of(self, seconds: float, by_ip: dict[str, Any]) -> Budget:
        busy = sorted(name for ip, name in self.egress_ips.items()
                      if int((by_ip.get(ip) or {}).get("count", 0)) > 0)
        capacity = len(busy) * seconds / self.interval
        if self.budget is not None:
            capacity = min(capacity, self.budget.requests * seconds / self.budget.window_seconds)
        return Budget(len(self.egress_ips), busy, self.interval, round(capacity), self.budget)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One look at the running demo: the database's figures and the simulator's counters
    (`sim`: the simulator's own JSON, /__sim/stats)."""

    soldiers: int
    counted_recent: int
    healthy: int
    ready: int
    coverage: dict[str, dict[str, int]]
    sim: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Failures:
    total: int = 0
    by_error_class: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Throttles:
    egress_cooldowns: int = 0
    throttled_answers: int = 0
    # every egress cool-down (throttles' and outages') by its signal: soft_throttle, http_403,
    # login_wall, http_5xx, retry_after, timeout, session_expired ...
    cooldowns_by_signal: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Outcomes:
    """Failed attempts by error class, retries, parked resources and throttles."""

    failures: Failures = field(default_factory=Failures)
    retries_scheduled: int = 0
    unavailable: int = 0
    throttles: Throttles = field(default_factory=Throttles)


@dataclass(frozen=True, slots=True)
class Progress:
    """Soldiers with three detailed collections or more, complete last-session reports (an
    ended session with a snapshot before it and its closing one collected), and the soldiers
    on this week's board of the most-boarded weapon."""

    soldiers_with_3_snapshots: int = 0
    session_reports: int = 0
    weapon_board_soldiers: int = 0


@dataclass(frozen=True, slots=True)
class Requests:
    total: int
    by_resource: dict[str, Any]
    by_outcome: dict[str, Any]


@dataclass(frozen=True, slots=True)
class CoverageChange:
    start: dict[str, dict[str, int]]
    end: dict[str, dict[str, int]]
    collected_start: dict[str, int]
    collected_end: dict[str, int]


@dataclass(frozen=True, slots=True)
class Violations:
    per_ip: int
    fleet: int


@dataclass(frozen=True, slots=True)
class Summary:
    """The run's summary (`asdict` is the JSON that `--json` prints)."""

    duration_seconds: float
    url: str
    soldiers: int
    requests: Requests
    coverage: CoverageChange
    outcomes: Outcomes
    budget: Budget
    violations: Violations
    progress: Progress


class _Counts(NamedTuple):
    soldiers: int
    counted: int
    healthy: int
    ready: int


class _Outcomes(NamedTuple):
    failures: dict[str, int]  # failed attempts per error class
    retries: int
    unavailable: int
    throttles: int
    throttled_answers: int
    cooldowns: dict[str, int]


class _Sessions(NamedTuple):
    soldiers_with_3_snapshots: int
    session_reports: int
    weapon_board_soldiers: int


async def snapshot(conn: Conn, sim_url: str, window: float) -> Snapshot:
    row = await one_row(conn, _Counts, "demo_snapshot", {"window_seconds": window})
    async with httpx.AsyncClient(timeout=5) as client:
        sim = (await client.get(f"{sim_url}/__sim/stats")).json()
    return Snapshot(soldiers=row.soldiers, counted_recent=row.counted, healthy=row.healthy,
                    ready=row.ready,
                    coverage=await figures.coverage(conn), sim=sim)


async def outcomes(conn: Conn, since: datetime) -> Outcomes:
    """Failed attempts by error class, retries, parked resources and throttles since `since`."""
    row = await one_row(conn, _Outcomes, "demo_outcomes", {"since": since})
    failures = {str(k): int(v) for k, v in row.failures.items()}
    return Outcomes(Failures(sum(failures.values()), failures),
                    retries_scheduled=row.retries, unavailable=row.unavailable,
                    throttles=Throttles(row.throttles, row.throttled_answers,
                                        {str(k): int(v) for k, v in row.cooldowns.items()}))


def budget_use(capacity: Capacity, seconds: float, sim: dict[str, Any]) -> Budget:
    """The capacity over `seconds` and the share of it the simulator saw used."""
    budget = capacity.of(seconds, sim.get("by_ip") or {})
    cap = budget.capacity_requests
    return replace(budget, use=round(sim["requests_total"] / cap, 3) if cap else None)


async def progress(conn: Conn) -> Progress:
    row = await one_row(conn, _Sessions, "sessions_progress")
    return Progress(row.soldiers_with_3_snapshots, row.session_reports,
                    row.weapon_board_soldiers)


def collected(coverage: dict[str, dict[str, int]]) -> dict[str, int]:
    return {r: c.get("current", 0) for r, c in coverage.items()}


EMPTY_SIM: dict[str, Any] = {"requests_total": 0, "by_resource": {}, "by_outcome": {},
                             "by_ip": {}, "violations": {"total": 0},
                             "fleet": {"violations": 0}}


def summary(start: Snapshot | None, end: Snapshot | None, *, seconds: float,
            capacity: Capacity, happened: Outcomes | None, url: str,
            progress: Progress | None = None) -> Summary:
    """The run's summary; `start`/`end` None when it stopped before the first snapshot."""
    last = end or start
    sim = last.sim if last else EMPTY_SIM
    first_cov = start.coverage if start else {}
    last_cov = last.coverage if last else {}
    return Summary(
        duration_seconds=round(seconds, 1), url=url, soldiers=last.soldiers if last else 0,
        requests=Requests(sim["requests_total"], sim["by_resource"], sim["by_outcome"]),
        coverage=CoverageChange(first_cov, last_cov, collected(first_cov), collected(last_cov)),
        outcomes=happened or Outcomes(), budget=budget_use(capacity, seconds, sim),
        violations=Violations(sim["violations"]["total"], sim["fleet"]["violations"]),
        progress=progress or Progress())
