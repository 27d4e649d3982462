"""What the fleet can send: the least of its egress gates' pacing (no faster than one request
per request duration for each collector behind a gate), the fleet budget, and — when the
fleet had work waiting the whole window — the send rate it measurably achieved. The one that
gives the least binds, and is named."""

from __future__ import annotations

from dataclasses import dataclass

from bf4ps.capacity.demand import demand
from bf4ps.capacity.inputs import HOUR, Inputs

SLOWED = 0.9  # measured below this share of the nominal bound: the collectors are slower


@dataclass(frozen=True)
class Capacity:
    pacing_per_hour: float  # every serving egress at its pace
    budget_per_hour: float | None
    measured_per_hour: float | None  # the achieved send rate while saturated (else None)
    per_hour: float  # what binds
    active_cap_per_hour: float  # the active class's budget cap (or the whole)
    binding: str  # "pacing", "budget" or "measured send rate"
    serving: int  # egresses with a background collector serving

    @property
    def nominal_per_hour(self) -> float:
        if self.budget_per_hour is None:
            return self.pacing_per_hour
        return min(self.pacing_per_hour, self.budget_per_hour)


def mean_duration(inputs: Inputs) -> float:
    """A request's mean duration over the steady demand's mix of resources (equal weights
    when there is none)."""
    weights = dict.fromkeys(inputs.costs, 0.0)
    for d in demand(inputs):
        if d.resource in weights:
            weights[d.resource] += d.requests_per_hour
    if sum(weights.values()) <= 0:
        weights = dict.fromkeys(inputs.costs, 1.0)
    total = sum(weights.values()) or 1.0
    return sum(inputs.costs[r].duration_seconds.value * w for r, w in weights.items()) / total


def pacing(inputs: Inputs, egresses: int | None = None) -> float:
    """Requests per hour the serving egresses allow (or `egresses` of the usual one)."""
    dur = mean_duration(inputs)
    serving = [e for e in inputs.egresses if e.serving > 0]
    if egresses is not None:
        return egresses * per_egress(inputs)
    return sum(HOUR / max(e.min_interval_seconds, dur / e.serving) for e in serving)


def per_egress(inputs: Inputs) -> float:
    """Requests per hour one more egress would give: the serving ones' mean (measured when
    the collectors are slower than their pacing), else the usual interval."""
    serving = [e for e in inputs.egresses if e.serving > 0] or list(inputs.egresses)
    if not serving:
        return HOUR / 5.0
    nominal = pacing(inputs) / len(serving) if any(e.serving for e in serving) else (
        HOUR / max(sum(e.min_interval_seconds for e in serving) / len(serving),
                   mean_duration(inputs)))
    measured = _measured(inputs)
    if measured is not None and measured < nominal * len(serving):
        return measured / len(serving)
    return nominal


def _measured(inputs: Inputs) -> float | None:
    if not inputs.saturated or inputs.fleet_rate is None or inputs.fleet_rate.value <= 0:
        return None
    return inputs.fleet_rate.value + inputs.interactive_per_hour.value


def capacity(inputs: Inputs, budget: float | None = None) -> Capacity:
    """`budget` (requests per hour) instead of the configured one, for solving."""
    pace = pacing(inputs)
    if budget is None and inputs.budget_per_hour is not None:
        budget = inputs.budget_per_hour.value
    nominal = pace if budget is None else min(pace, budget)
    binding = "pacing" if budget is None or pace <= budget else "budget"
    measured = _measured(inputs)
    per_hour = nominal
    if measured is not None and measured < SLOWED * nominal:  # near nominal: nominal binds
        per_hour, binding = measured, "measured send rate"
    cap = inputs.policy.budget_cap_active * budget if budget is not None else per_hour
    serving = sum(1 for e in inputs.egresses if e.serving > 0)
    return Capacity(pace, budget, measured, per_hour, min(cap, per_hour), binding, serving)
