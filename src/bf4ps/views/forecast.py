"""The capacity forecast's arithmetic (pure: no database, no clock): steady-state demand per
class and resource against the budget, bootstrap completion per resource at today's mix and
shares, the egresses (or budget) the policy needs, and the policy change that would fit.

Every input is a `Figure`: a value with where it came from (a measured window, or a documented
default for a fleet that has not measured it yet). The loader is views/forecast_inputs.py.

Refresh model (the scheduler refreshes only active soldiers, those seen within the active
window W): with freshness F <= W an active soldier is collected every F while active, so the
rate is A / F (A: soldiers active now); with F > W a soldier is collected at most once per F,
so the rate is seen(F) / F, the soldiers seen in a period F (interpolated between the measured
seen-in-W, 24 h, 7 d and 30 d counts, linear in log time), and never fewer than the new
soldiers' first collections (new per day / 24). Each collection costs the measured requests
per attempt (active work) and, over the measured success share, its retries (the retry
class).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from bf4ps.policy import Policy

RESOURCES = ("detailed", "profile", "weapons", "vehicles")
HOUR = 3600.0
DAY = 86_400.0
HORIZON_DAYS = 3650.0  # past this, a bootstrap "never" completes at today's rates


@dataclass(frozen=True)
class Figure:
    """One input: its value and where it came from."""

    value: float
    source: str  # "measured: ..." or "default: ..."

    @property
    def measured(self) -> bool:
        return not self.source.startswith("default")


@dataclass(frozen=True)
class ResourceCost:
    requests_per_attempt: Figure
    success_share: Figure
    duration_seconds: Figure

    @property
    def requests_per_collection(self) -> float:
        return self.requests_per_attempt.value / max(self.success_share.value, 0.01)


@dataclass(frozen=True)
class Egress:
    key: str
    min_interval_seconds: float
    serving: int  # background collectors serving behind it


@dataclass(frozen=True)
class Population:
    total: Figure
    active: Figure  # seen within the policy's active window
    seen: dict[float, Figure]  # period seconds -> soldiers seen within it
    new_per_day: Figure

    def seen_within(self, seconds: float) -> float:
        """Soldiers seen within `seconds`: linear in log time between the measured points,
        extended past the last two the same way, never above the total."""
        points = sorted((k, v.value) for k, v in self.seen.items())
        total = self.total.value
        if not points:
            return min(total, self.active.value)
        if seconds <= points[0][0]:
            return points[0][1] * seconds / points[0][0]
        for (t0, n0), (t1, n1) in itertools.pairwise(points):
            if seconds <= t1:
                return min(total, n0 + (n1 - n0) * math.log(seconds / t0) / math.log(t1 / t0))
        if len(points) < 2:
            return min(total, points[-1][1])
        (t0, n0), (t1, n1) = points[-2], points[-1]
        return min(total, n1 + (n1 - n0) * math.log(seconds / t1) / math.log(t1 / t0))


@dataclass(frozen=True)
class Inputs:
    now: datetime
    window_seconds: float
    policy: Policy
    costs: dict[str, ResourceCost]
    egresses: tuple[Egress, ...]
    egress_source: str
    budget_per_hour: Figure | None  # None: no fleet budget (pacing bounds)
    population: Population
    coverage: dict[str, dict[str, int]]
    bootstrap_rate: dict[str, Figure]  # first collections per hour per resource (measured)
    fleet_rate: Figure | None  # background requests per hour sent (measured)
    interactive_per_hour: Figure
    missing: tuple[str, ...] = ()


@dataclass(frozen=True)
class DemandLine:
    klass: str
    resource: str
    collections_per_hour: float
    requests_per_hour: float
    note: str = ""
    reason: str = ""  # a job reason's own demand (final_refresh, scheduled_profile)


@dataclass(frozen=True)
class Completion:
    resource: str
    remaining: int
    collections_per_hour: float
    at: datetime | None  # None: not within the horizon at today's rates
    source: str


@dataclass(frozen=True)
class Capacity:
    pacing_per_hour: float  # every serving egress at its pace
    budget_per_hour: float | None
    per_hour: float  # what binds
    active_cap_per_hour: float  # the active class's budget cap (or the whole)


@dataclass(frozen=True)
class Forecast:
    inputs: Inputs
    demand: tuple[DemandLine, ...]
    capacity: Capacity
    bootstrap: tuple[Completion, ...]
    egresses_needed: int
    budget_needed_per_hour: float
    suggestion: str | None
    suggested: dict[str, float] = field(default_factory=dict)

    @property
    def demand_per_hour(self) -> float:
        return sum(d.requests_per_hour for d in self.demand)

    @property
    def active_per_hour(self) -> float:
        return sum(d.requests_per_hour for d in self.demand if d.klass == "active")

    @property
    def fits(self) -> bool:
        return (self.demand_per_hour <= self.capacity.per_hour
                and self.active_per_hour <= self.capacity.active_cap_per_hour)

    @property
    def shortfall_per_hour(self) -> float:
        """Requests per hour over what the fleet (or the active cap) allows; 0 when it fits."""
        return max(0.0, self.demand_per_hour - self.capacity.per_hour,
                   self.active_per_hour - self.capacity.active_cap_per_hour)


# ---------------------------------------------------------------- steady state
def refresh_per_hour(freshness: float, pop: Population, active_window: float) -> float:
    """Collections per hour of one resource under the refresh model (module docstring)."""
    if freshness <= active_window:
        return pop.active.value * HOUR / freshness
    return max(pop.seen_within(freshness) * HOUR / freshness, pop.new_per_day.value / 24)


def demand(inputs: Inputs, policy: Policy | None = None) -> tuple[DemandLine, ...]:
    """Per resource, the active class's collections (refreshes and new soldiers' first
    collections) at their measured requests per attempt, and the retries their failures
    cost (the budget's retry class); the interactive lane's measured rate. Recent and
    inactive soldiers are not refreshed by the policy; the bootstrap backlog is the
    completion forecast, not steady state."""
    pol = policy or inputs.policy
    lines, retries = [], []
    for r in RESOURCES:
        fresh = float(getattr(pol, f"freshness_{r}_seconds"))
        per_hour = refresh_per_hour(fresh, inputs.population, pol.active_window_seconds)
        cost = inputs.costs[r]
        first = per_hour * cost.requests_per_attempt.value
        lines.append(DemandLine("active", r, per_hour, first, f"every {_span(fresh)}"))
        retries.append(DemandLine("retry", r, 0.0,
                                  per_hour * cost.requests_per_collection - first,
                                  f"{100 * (1 - cost.success_share.value):.1f} % fail"))
    lines += reason_demand(inputs, pol)
    lines += [d for d in retries if d.requests_per_hour > 0]
    lines.append(DemandLine("recent", "all", 0.0, 0.0, "not refreshed: only active soldiers"))
    if inputs.interactive_per_hour.value > 0:
        lines.append(DemandLine("interactive", "all", 0.0, inputs.interactive_per_hour.value,
                                inputs.interactive_per_hour.source))
    return tuple(lines)


def reason_demand(inputs: Inputs, pol: Policy) -> list[DemandLine]:
    """The session reasons. final_refresh, in the active class: per ended session (taken as
    one a day per soldier seen within 24 h, an assumption until sessions are measured), at
    most one per soldier per final_refresh_min_age_seconds; what it adds is what exceeds the
    resource's freshness refresh, which the session's end takes the place of (a stale resource
    of a soldier on a server waits for it). scheduled_profile: every known soldier's profile
    once per interval (in the soldiers' own classes: counted here as bootstrap)."""
    pop = inputs.population
    sessions = pop.seen_within(DAY) / 24
    lines = []
    for r in pol.final_refresh_resources:
        if r.value not in inputs.costs:
            continue
        age = pol.final_refresh_min_age_seconds
        rate = sessions if age <= 0 else min(
            sessions, refresh_per_hour(age, pop, pol.active_window_seconds))
        extra = max(0.0, rate - refresh_per_hour(pol.freshness(r), pop,
                                                 pol.active_window_seconds))
        lines.append(DemandLine(
            "active", r.value, extra,
            extra * inputs.costs[r.value].requests_per_attempt.value,
            f"final_refresh: sessions (one a day per soldier seen in 24 h) at most every "
            f"{_span(age)}, beyond the freshness refresh" if age > 0 else
            "final_refresh: every session (one a day per soldier seen in 24 h)",
            "final_refresh"))
    if pol.scheduled_profile_seconds > 0 and "profile" in inputs.costs:
        per_hour = pop.total.value * HOUR / pol.scheduled_profile_seconds
        lines.append(DemandLine(
            "bootstrap", "profile", per_hour,
            per_hour * inputs.costs["profile"].requests_per_attempt.value,
            f"scheduled_profile: every soldier every {_span(pol.scheduled_profile_seconds)}",
            "scheduled_profile"))
    return lines


def capacity(inputs: Inputs) -> Capacity:
    pacing = sum(HOUR / max(e.min_interval_seconds, _slowest(inputs)) for e in inputs.egresses
                 if e.serving > 0)
    budget = inputs.budget_per_hour.value if inputs.budget_per_hour else None
    per_hour = min(pacing, budget) if budget is not None else pacing
    cap_share = inputs.policy.budget_cap_active if budget is not None else 1.0
    return Capacity(pacing, budget, per_hour, per_hour * cap_share)


def _slowest(inputs: Inputs) -> float:
    """A collector serves one request at a time: an egress cannot go faster than one request
    per request duration (the mean over the steady-state demand's mix of resources)."""
    weights = {d.resource: d.requests_per_hour for d in demand(inputs)
               if d.resource in inputs.costs}
    total = sum(weights.values())
    if total <= 0:
        weights, total = dict.fromkeys(inputs.costs, 1.0), float(len(inputs.costs) or 1)
    return sum(inputs.costs[r].duration_seconds.value * w for r, w in weights.items()) / total


def egress_pace(inputs: Inputs) -> float:
    """Requests per hour one serving egress gives (the fleet's usual interval)."""
    serving = [e for e in inputs.egresses if e.serving > 0] or list(inputs.egresses)
    interval = (sum(e.min_interval_seconds for e in serving) / len(serving)) if serving else 5.0
    return HOUR / max(interval, _slowest(inputs))


def needs(lines: tuple[DemandLine, ...], inputs: Inputs) -> tuple[int, float]:
    """(egresses needed at today's pace, budget per hour needed): the whole demand within the
    budget, and the active part within its cap."""
    total = sum(d.requests_per_hour for d in lines)
    active = sum(d.requests_per_hour for d in lines if d.klass == "active")
    budget = max(total, active / max(inputs.policy.budget_cap_active, 0.01))
    return max(1, math.ceil(total / egress_pace(inputs))), budget


# ---------------------------------------------------------------- the policy that would fit
DETAILED_STEPS = tuple(h * HOUR for h in (24, 30, 36, 48, 72, 96, 120, 144, 168, 240, 336))
WEEKLY_STEPS = tuple(d * DAY for d in (7, 14, 28, 56, 91, 182, 365))


def suggestion(inputs: Inputs, cap: Capacity) -> tuple[str | None, dict[str, float]]:
    """The smallest change of the refresh intervals (detailed first, then the weekly three)
    whose demand fits today's budget and active cap; None when it fits already."""
    def fits(pol: Policy) -> bool:
        lines = demand(inputs, pol)
        total = sum(d.requests_per_hour for d in lines)
        active = sum(d.requests_per_hour for d in lines if d.klass == "active")
        return total <= cap.per_hour and active <= cap.active_cap_per_hour

    pol = inputs.policy
    if fits(pol):
        return None, {}
    weekly = ("profile", "weapons", "vehicles")
    base_weekly = max(float(getattr(pol, f"freshness_{r}_seconds")) for r in weekly)
    for wk in (base_weekly, *[s for s in WEEKLY_STEPS if s > base_weekly]):
        for det in [pol.freshness_detailed_seconds,
                    *[s for s in DETAILED_STEPS if s > pol.freshness_detailed_seconds]]:
            changes = {"freshness_detailed_seconds": det}
            changes.update({f"freshness_{r}_seconds": max(wk, float(
                getattr(pol, f"freshness_{r}_seconds"))) for r in weekly})
            candidate = pol.model_copy(update=changes)
            if fits(candidate):
                changed = {k: v for k, v in changes.items() if v != getattr(pol, k)}
                return _words(changed), changed
    return ("no refresh interval up to a year fits: the new soldiers' first collections "
            "alone nearly fill the budget; raise the budget (or the active cap) or add "
            "egresses"), {}


def _words(changed: dict[str, float]) -> str:
    parts = []
    det = changed.get("freshness_detailed_seconds")
    if det is not None:
        parts.append(f"detailed for active soldiers every {_span(det)}")
    weekly = sorted({v for k, v in changed.items() if k != "freshness_detailed_seconds"})
    if weekly:
        parts.append(f"profile, weapons and vehicles every {_span(weekly[-1])}")
    return "; ".join(parts)


def _span(seconds: float) -> str:
    if seconds >= 2 * DAY and seconds % DAY == 0:
        return f"{seconds / DAY:.0f} d"
    if seconds >= HOUR:
        return f"{seconds / HOUR:.0f} h"
    return f"{seconds:.0f} s"


# ---------------------------------------------------------------- bootstrap
def _remaining(coverage: dict[str, dict[str, int]]) -> dict[str, float]:
    return {r: float(coverage.get(r, {}).get("never_attempted", 0)) for r in RESOURCES}


def _attempted(coverage: dict[str, dict[str, int]], left_detailed: float) -> float:
    total = sum(coverage.get("detailed", {}).values())
    return 1.0 if total == 0 else 1 - left_detailed / total


def bootstrap_request_rate(inputs: Inputs, cap: Capacity,
                           lines: tuple[DemandLine, ...]) -> Figure:
    """Requests per hour the bootstrap gets: measured (first collections per resource over the
    window, at their request costs) when there is any, else what the fleet leaves over after
    the steady-state demand (at least the bootstrap floor of the budget)."""
    measured = {r: f for r, f in inputs.bootstrap_rate.items() if f.value > 0}
    if measured:
        rate = sum(f.value * inputs.costs[r].requests_per_collection
                   for r, f in measured.items())
        return Figure(rate, next(iter(measured.values())).source)
    steady = sum(d.requests_per_hour for d in lines)
    floor = inputs.policy.budget_floor_bootstrap * cap.per_hour
    return Figure(max(cap.per_hour - steady, floor),
                  "modelled: the fleet's capacity left over after the steady-state demand "
                  "(at least the bootstrap floor)")


def bootstrap(inputs: Inputs, cap: Capacity, lines: tuple[DemandLine, ...],
              step_hours: float = 1.0) -> tuple[Completion, ...]:
    """Step the progressive mix forward: each step the bootstrap's requests are split by the
    weights of the resources that have joined (watermarks on detailed's attempted share) and
    still have work; a resource's first collection costs its requests per collection."""
    rate = bootstrap_request_rate(inputs, cap, lines)
    left = _remaining(inputs.coverage)
    pol = inputs.policy
    done_at: dict[str, float] = {r: 0.0 for r in RESOURCES if left[r] <= 0}
    measured_mix = {r: f.value for r, f in inputs.bootstrap_rate.items() if f.value > 0}
    hours = 0.0
    per_hour_now: dict[str, float] = {}
    while len(done_at) < len(RESOURCES) and hours < HORIZON_DAYS * 24:
        weights = _weights(pol, inputs.coverage, left, measured_mix, inputs.costs)
        if not per_hour_now:
            per_hour_now = _split(rate.value, weights, inputs.costs)
        if not weights:
            break
        per_hour = _split(rate.value, weights, inputs.costs)
        dt = min([step_hours, *(left[r] / per_hour[r] for r in per_hour if per_hour[r] > 0)])
        dt = max(dt, 1e-6)
        for r, n in per_hour.items():
            left[r] -= n * dt
            if left[r] <= 1e-9 and r not in done_at:
                done_at[r] = hours + dt
        hours += dt
    out = []
    for r in RESOURCES:
        remaining = inputs.coverage.get(r, {}).get("never_attempted", 0)
        at = inputs.now + timedelta(hours=done_at[r]) if r in done_at else None
        out.append(Completion(r, remaining, per_hour_now.get(r, 0.0), at, rate.source))
    return tuple(out)


def _weights(pol: Policy, coverage: dict[str, dict[str, int]], left: dict[str, float],
             measured: dict[str, float], costs: dict[str, ResourceCost]) -> dict[str, float]:
    """Request shares of the resources with work left: today's measured mix for the resources
    being served; a resource joins once detailed's attempted share passes its watermark, with
    its policy weight (in jobs, at today's jobs per weight unit) at its request cost."""
    attempted = _attempted(coverage, left["detailed"])
    measured_weight = sum(float(getattr(pol, f"weight_{r}")) for r in measured)
    jobs_per_weight = (sum(measured.values()) / measured_weight
                       if measured and measured_weight > 0 else 1.0)
    out = {}
    for r in RESOURCES:
        if left[r] <= 0:
            continue
        cost = costs[r].requests_per_collection
        if r in measured:
            out[r] = measured[r] * cost
        elif r == "detailed" or attempted >= float(getattr(pol, f"watermark_{r}")):
            out[r] = float(getattr(pol, f"weight_{r}")) * jobs_per_weight * cost
    return {r: w for r, w in out.items() if w > 0}


def _split(rate: float, weights: dict[str, float],
           costs: dict[str, ResourceCost]) -> dict[str, float]:
    total = sum(weights.values())
    return {r: rate * w / total / costs[r].requests_per_collection
            for r, w in weights.items()} if total > 0 else {}


def forecast(inputs: Inputs) -> Forecast:
    lines = demand(inputs)
    cap = capacity(inputs)
    egresses, budget = needs(lines, inputs)
    words, changed = suggestion(inputs, cap)
    return Forecast(inputs, lines, cap, bootstrap(inputs, cap, lines), egresses, budget, words,
                    changed)


def with_policy(inputs: Inputs, policy: Policy) -> Inputs:
    return replace(inputs, policy=policy)
