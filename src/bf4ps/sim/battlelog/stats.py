"""What crossed the wire, counted at arrival (before any latency sleep), served at /__sim/stats."""

from __future__ import annotations

import math
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import TypedDict

from bf4ps.sim.battlelog.config import SimConfig
from bf4ps.sim.battlelog.limiter import RateLimiter, Verdict

ARRIVALS_KEPT = 200  # per IP: when each of its last requests arrived, and what it got

OUTCOMES = (
    "ok",
    "throttled",
    "penalty",
    "server_error",
    "timeout",
    "html_error",
    "type_error",
    "missing_general",
    "unknown_persona",
    "not_found",
    "bad_check_sum",
    "zeros",
    "decrease",
    "login_redirect",
    "retry_after",
)


class IpFigures(TypedDict):
    """One source IP's counters, as /__sim/stats shows them."""

    count: int
    first_at: float
    last_at: float
    min_spacing_seconds: float | None  # None until a second request came
    violations: int
    penalty_answers: int
    retry_after_until: float
    retry_after_ignored: int
    by_resource: dict[str, int]
    by_outcome: dict[str, int]
    recent: list[tuple[float, str]]  # the last ARRIVALS_KEPT arrivals: (wall clock, outcome)


class ViolationFigures(TypedDict):
    """One rate-limit violation: who, when, of which rule, how early."""

    ip: str
    at: float
    resource: str
    rule: str
    early_by_seconds: float


class RecentViolations(TypedDict):
    total: int
    recent: list[ViolationFigures]  # the last violations_kept


class FleetFigures(TypedDict):
    """The fleet budget (all IPs together): its knobs and what the limiter counted."""

    window_seconds: float
    budget: int | None
    max_in_window: int
    in_window_now: int
    violations: int


class StatsSnapshot(TypedDict):
    """The body of /__sim/stats."""

    since: float
    requests_total: int
    by_resource: dict[str, int]
    by_outcome: dict[str, int]
    by_ip: dict[str, IpFigures]
    violations: RecentViolations
    fleet: FleetFigures


@dataclass(slots=True)
class IpCounters:
    count: int = 0
    first_at: float = 0.0
    last_at: float = 0.0
    min_spacing: float = math.inf
    violations: int = 0
    penalty_answers: int = 0
    retry_after_until: float = 0.0  # wall clock: this IP was asked to wait until then
    retry_after_ignored: int = 0  # requests that came anyway
    by_resource: Counter[str] = field(default_factory=Counter)
    by_outcome: Counter[str] = field(default_factory=Counter)
    recent: deque[tuple[float, str]] = field(
        default_factory=lambda: deque(maxlen=ARRIVALS_KEPT))

    def as_dict(self) -> IpFigures:
        return {
            "count": self.count,
            "first_at": self.first_at,
            "last_at": self.last_at,
            "min_spacing_seconds": None if math.isinf(self.min_spacing) else self.min_spacing,
            "violations": self.violations,
            "penalty_answers": self.penalty_answers,
            "retry_after_until": self.retry_after_until,
            "retry_after_ignored": self.retry_after_ignored,
            "by_resource": dict(self.by_resource),
            "by_outcome": dict(self.by_outcome),
            "recent": list(self.recent),
        }


class SimStats:
    def __init__(self, config: SimConfig) -> None:
        self._config = config
        self.reset()

    def reset(self) -> None:
        self.since = time.time()
        self.total = 0
        self.by_resource: Counter[str] = Counter()
        self.by_outcome: Counter[str] = Counter({outcome: 0 for outcome in OUTCOMES})
        self.by_ip: dict[str, IpCounters] = {}
        self.violations_total = 0
        self.violations: deque[ViolationFigures] = deque(maxlen=self._config.violations_kept)

    def record(self, ip: str, resource: str, outcome: str, verdict: Verdict, at: float) -> None:
        self.total += 1
        self.by_resource[resource] += 1
        self.by_outcome[outcome] += 1
        counters = self.by_ip.get(ip)
        if counters is None:
            counters = self.by_ip[ip] = IpCounters(first_at=at)
        counters.count += 1
        counters.last_at = at
        if at < counters.retry_after_until:
            counters.retry_after_ignored += 1
        counters.by_resource[resource] += 1
        counters.by_outcome[outcome] += 1
        counters.recent.append((at, outcome))
        if verdict.spacing is not None:
            counters.min_spacing = min(counters.min_spacing, verdict.spacing)
        if verdict.penalised:
            counters.penalty_answers += 1
        if verdict.violation is not None:
            counters.violations += 1
            self.violations_total += 1
            self.violations.append(
                {
                    "ip": ip,
                    "at": at,
                    "resource": resource,
                    "rule": verdict.violation.rule,
                    "early_by_seconds": round(verdict.violation.early_by, 6),
                }
            )

    def asked_to_wait(self, ip: str, until: float) -> None:
        """This IP was answered a Retry-After: requests before `until` are counted as ignoring
        it."""
        counters = self.by_ip.get(ip)
        if counters is not None:
            counters.retry_after_until = max(counters.retry_after_until, until)

    def snapshot(self, limiter: RateLimiter, now_monotonic: float) -> StatsSnapshot:
        return {
            "since": self.since,
            "requests_total": self.total,
            "by_resource": dict(self.by_resource),
            "by_outcome": dict(self.by_outcome),
            "by_ip": {ip: counters.as_dict() for ip, counters in sorted(self.by_ip.items())},
            "violations": {"total": self.violations_total, "recent": list(self.violations)},
            "fleet": {
                "window_seconds": self._config.fleet_window,
                "budget": self._config.fleet_budget,
                "max_in_window": limiter.fleet_max_in_window,
                "in_window_now": limiter.fleet_in_window(now_monotonic),
                "violations": limiter.fleet_violations,
            },
        }
