"""What the fleet can send: the least of its egress gates' pacing, the fleet budget, and — when
the fleet had work waiting the whole window — the send rate it measurably achieved. The one
that gives the least binds, and is named.

An egress's pacing is the admission's own rule (SQL bf4ps_paced_interval, db/schema.sql): its
gate moves past each slot by its interval plus the safety margin (slower only while a throttle
streak decays, which a steady-state forecast leaves out), and a collector serves one job at a
time whose slot is never sooner than the connect lead after its claim, so one collector sends
at most once per connect lead plus request duration (its cycle's own database work is what the
measured send rate adds)."""

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
    binding: str  # "pacing", "request cycle", "budget" or "measured send rate"
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


def spacing(inputs: Inputs, interval: float, serving: int, duration: float | None = None
            ) -> float:
    """Seconds between one egress's requests at the least: its gate (interval plus margin),
    or its collectors' cycles (connect lead plus request duration, each collector one job at
    a time). `duration`: the mean request duration, when already known."""
    dur = mean_duration(inputs) if duration is None else duration
    return max(interval + inputs.margin_seconds,
               (inputs.connect_lead_seconds + dur) / max(serving, 1))


def pacing(inputs: Inputs, egresses: int | None = None, duration: float | None = None
           ) -> float:
    """Requests per hour the serving egresses allow (or `egresses` of the usual one)."""
    if egresses is not None:
        return egresses * per_egress(inputs)
    dur = mean_duration(inputs) if duration is None else duration
    return sum(HOUR / spacing(inputs, e.min_interval_seconds, e.serving, dur)
               for e in inputs.egresses if e.serving > 0)


def per_egress(inputs: Inputs) -> float:
    """Requests per hour one more egress would give: the serving ones' mean (measured when
    the collectors are slower than their pacing), else the usual interval."""
    serving = [e for e in inputs.egresses if e.serving > 0] or list(inputs.egresses)
    if not serving:
        return HOUR / 5.0
    nominal = pacing(inputs) / len(serving) if any(e.serving for e in serving) else (
        HOUR / spacing(inputs, sum(e.min_interval_seconds for e in serving) / len(serving), 1))
    measured = _measured(inputs)
    if measured is not None and measured < nominal * len(serving):
        return measured / len(serving)
    return nominal


def _measured(inputs: Inputs) -> float | None:
    if not inputs.saturated or inputs.fleet_rate is None or inputs.fleet_rate.value <= 0:
        return None
    return inputs.fleet_rate.value + inputs.interactive_per_hour.value


def _cycle_bound(inputs: Inputs, dur: float) -> bool:
    """Every serving egress is paced by its collectors' request cycle, not by its gate."""
    serving = [e for e in inputs.egresses if e.serving > 0]
    return bool(serving) and all(
        spacing(inputs, e.min_interval_seconds, e.serving, dur)
        > e.min_interval_seconds + inputs.margin_seconds + 1e-12 for e in serving)


def capacity(inputs: Inputs, budget: float | None = None) -> Capacity:
    """`budget` (requests per hour) instead of the configured one, for solving."""
    dur = mean_duration(inputs)
    pace = pacing(inputs, duration=dur)
    if budget is None and inputs.budget_per_hour is not None:
        budget = inputs.budget_per_hour.value
    nominal = pace if budget is None else min(pace, budget)
    binding = "pacing" if budget is None or pace <= budget else "budget"
    if binding == "pacing" and _cycle_bound(inputs, dur):
        binding = "request cycle"
    measured = _measured(inputs)
    per_hour = nominal
    if measured is not None:
        # a saturated fleet sends what it sent, never more for a larger bound (so more budget
        # never predicts less); it is named the binding limit only well below the nominal one
        per_hour = min(nominal, measured)
        if measured < SLOWED * nominal:
            binding = "measured send rate"
    cap = inputs.policy.budget_cap_active * budget if budget is not None else per_hour
    serving = sum(1 for e in inputs.egresses if e.serving > 0)
    return Capacity(pace, budget, measured, per_hour, min(cap, per_hour), binding, serving)
