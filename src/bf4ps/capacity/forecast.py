"""The forecast: the model's answers in one object — capacity and what binds, requests per
hour per class and resource now and in steady state, bootstrap marks (10/25/50/90 % and
done) per resource, steady-state backlog age per class, the verdict and the suggestions."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bf4ps.capacity import solve
from bf4ps.capacity.demand import DemandLine, demand, freshness, lateness, span
from bf4ps.capacity.fill import Key, Want
from bf4ps.capacity.gates import Capacity, capacity, mean_duration
from bf4ps.capacity.inputs import HOUR, RESOURCES, Inputs
from bf4ps.capacity.model import HORIZON_HOURS, MARKS, Steady, run, steady_state


@dataclass(frozen=True)
class Completion:
    resource: str
    remaining: int
    collections_per_hour: float  # first collections per hour now
    at: datetime | None  # done; None: not within the horizon at today's rates
    source: str
    marks: dict[float, datetime | None] = field(default_factory=dict)  # attempted share -> when


@dataclass(frozen=True)
class Served:
    klass: str
    resource: str
    now_per_hour: float  # requests per hour at the forecast's start (bootstrap included)
    steady_per_hour: float  # once the backlogs are done


@dataclass(frozen=True)
class Age:
    """Steady-state backlog age of one class: seconds (time-averaged oldest waiting work), or
    None when its demand is not met and the age grows by `growth_per_hour` seconds an hour.
    `unmet`: the demand is not met, yet the age settles (a refresh comes later, so the same
    soldiers ask less often: their refresh interval stretches until they ask what is
    given)."""

    seconds: float | None
    growth_per_hour: float = 0.0
    unmet: bool = False


@dataclass(frozen=True)
class Forecast:
    inputs: Inputs
    demand: tuple[DemandLine, ...]
    capacity: Capacity
    bootstrap: tuple[Completion, ...]
    served: tuple[Served, ...]
    backlog_age: dict[str, Age]
    egresses_needed: int | None
    budget_needed_per_hour: float | None
    suggested: dict[str, float] = field(default_factory=dict)

    @property
    def demand_per_hour(self) -> float:
        return sum(d.requests_per_hour for d in self.demand)

    @property
    def active_per_hour(self) -> float:
        return sum(d.requests_per_hour for d in self.demand if d.klass == "active")

    @property
    def fits(self) -> bool:
        return (self.demand_per_hour <= self.capacity.per_hour * (1 + 1e-9)
                and self.active_per_hour <= self.capacity.active_cap_per_hour * (1 + 1e-9))

    @property
    def shortfall_per_hour(self) -> float:
        """Requests per hour over what the fleet (or the active cap) allows; 0 when it fits."""
        return max(0.0, self.demand_per_hour - self.capacity.per_hour,
                   self.active_per_hour - self.capacity.active_cap_per_hour)

    @property
    def throughput_per_hour(self) -> float:
        """Requests per hour the fleet sends now (background and interactive)."""
        return sum(s.now_per_hour for s in self.served) + self.inputs.interactive_per_hour.value

    @property
    def steady_throughput_per_hour(self) -> float:
        return (sum(s.steady_per_hour for s in self.served)
                + self.inputs.interactive_per_hour.value)

    def per_resource(self, steady: bool = False) -> dict[str, float]:
        out = dict.fromkeys(RESOURCES, 0.0)
        for s in self.served:
            out[s.resource] += s.steady_per_hour if steady else s.now_per_hour
        return out

    @property
    def suggestion(self) -> str | None:
        if self.fits:
            return None
        if not self.suggested:
            return ("no refresh interval up to ten years fits: the new soldiers' first "
                    "collections alone nearly fill the capacity")
        return "; ".join(f"{k.removeprefix('freshness_').removesuffix('_seconds')} every "
                         f"{span(v)}" for k, v in self.suggested.items())


def _requests(alloc: dict[Key, float], wants: dict[Key, Want]) -> dict[Key, float]:
    return {k: n * wants[k].cost for k, n in alloc.items() if k in wants}


def ages(inputs: Inputs, cap: Capacity, st: Steady) -> dict[str, Age]:
    """Per class: met demand waits for the due sweep and then the queue. A sweep every S marks
    a batch due (its ages spread over S: the sweep spreads the due times over its period,
    db/sql/feeder.sql); its oldest waits a delay d (the next feed, one
    scheduler tick after the sweep; the first of the serving collectors' idle polls; the
    connect lead, before which no slot is given; one request) and the batch is then served
    at the whole background capacity, at load rho (the class's requests over it): averaged
    over a sweep period the oldest waiting work is rho*S*(1+rho)/2 + d*(1+rho) + d^2/(2S)
    old. With m due a sweep on average (Poisson), a sweep marks none with probability e^-m
    and the oldest of k marked is k/(k+1) of a sweep old: the first two terms are scaled by
    1 - (1 - e^-m)/m and the last by 1 - e^-m (both 1 at scale). Retries become due
    continuously (no sweep): d. Unmet demand's age grows."""
    bg = max(0.0, cap.per_hour - inputs.interactive_per_hour.value)
    serving = sum(e.serving for e in inputs.egresses) or 1
    delay = (inputs.tick_seconds + inputs.idle_poll_seconds / (serving + 1)
             + inputs.connect_lead_seconds + mean_duration(inputs))
    out = {}
    for c in ("active", "recent", "bootstrap", "retry"):
        keys = [k for k in st.demand if k[0] == c and st.demand[k] > 0]
        lam = sum(st.demand[k] for k in keys)
        got = sum(st.served.get(k, 0.0) for k in keys)
        if lam <= 0:
            out[c] = Age(0.0)
            continue
        if got < lam * (1 - 1e-6):
            out[c] = _unmet(inputs, st, keys, lam, got)
            continue
        cost = sum(inputs.costs[k[1]].requests_per_attempt.value * st.demand[k]
                   for k in keys) / lam
        rho = min(1.0, lam * cost / bg) if bg > 0 else 1.0
        sweep = inputs.sweep_seconds
        if c == "retry" or sweep <= 0:
            out[c] = Age(delay)
            continue
        # few due a sweep (m on average, Poisson): some sweeps mark none, and the oldest of
        # k marked is k/(k+1) of a sweep old, not a whole sweep
        m = lam / HOUR * sweep
        some = -math.expm1(-m)
        dense = 1 - some / m
        out[c] = Age(dense * (rho * sweep * (1 + rho) / 2 + delay * (1 + rho))
                     + some * delay ** 2 / (2 * sweep))
    return out


def _unmet(inputs: Inputs, st: Steady, keys: list[Key], lam: float, got: float) -> Age:
    """A refresh (active) or scheduled (recent) class's unmet demand: the same soldiers, each
    due again one interval F after it was collected, so served late by L it asks every F + L;
    L settles where they ask what is given: F + L = A / given, per resource (the oldest is
    the latest). Other classes' unmet work (retries) piles up: its age grows."""
    every = {"active": lambda r: freshness(inputs.policy, r),
             "recent": lambda r: float(inputs.policy.scheduled_profile_seconds)}.get(keys[0][0])
    if every is None:
        return Age(None, HOUR * (1 - got / lam))
    # asked A / (F + L0) with L0 the lateness when met: A / given = (F + L0) asked / given
    # the due sweep spreads the refreshes' due times (active); the scheduled profiles' sweep
    # does not, so they wait half a sweep on average (lateness with nothing spread)
    late = [(every(r) + lateness(inputs, every(r) if c == "active" else 0.0))
            * st.demand[(c, r)] / max(st.served.get((c, r), 0.0), 1e-12) - every(r)
            for c, r in keys]
    if any(math.isinf(x) or x > HORIZON_HOURS * HOUR for x in late):
        return Age(None, HOUR * (1 - got / lam))
    return Age(max(0.0, *late), unmet=True)


def _marks(now: datetime, hours: dict[float, float | None]) -> dict[float, datetime | None]:
    return {m: None if h is None or h > HORIZON_HOURS else now + timedelta(hours=h)
            for m, h in hours.items()}


def _measured_completion(inputs: Inputs, cap: Capacity, resource: str, remaining: int,
                         per_hour: float, source: str) -> Completion:
    """The bootstrap marks of a resource at its own measured rate of first collections (the
    resources go at their own rates: weapons answers take longer than detailed ones), at most
    what the fleet's capacity can send of it alone: a window measured while a fleet budget's
    first window filled (a start at the egresses' pacing) saw more than the budget lets pass
    from now on."""
    most = (max(0.0, cap.per_hour - inputs.interactive_per_hour.value)
            / max(1.0, inputs.costs[resource].requests_per_attempt.value))
    note = f"{source}; this resource's own rate"
    if per_hour > most:
        per_hour, note = most, f"{note}, at most the capacity's {most:,.0f}/h"
    marks = _marks(inputs.now, {m: m * remaining / per_hour for m in MARKS})
    return Completion(resource, remaining, per_hour, marks[1.0], note, marks)


def forecast(inputs: Inputs) -> Forecast:
    lines = demand(inputs)
    cap = capacity(inputs)
    stepped = run(inputs, cap, lines)
    st = steady_state(inputs, cap, lines)
    now = _requests(stepped.first, stepped.wants0)
    steady_req = {k: n * inputs.costs[k[1]].requests_per_attempt.value
                  for k, n in st.served.items()}
    keys = sorted(set(now) | set(steady_req))
    served = tuple(Served(c, r, now.get((c, r), 0.0), steady_req.get((c, r), 0.0))
                   for c, r in keys)
    left = inputs.never_attempted()
    boot = []
    for r in RESOURCES:
        remaining = int(sum(left[c][r] for c in left))
        rate = inputs.bootstrap_rate.get(r)
        if rate is not None and rate.value > 0 and remaining > 0:  # its own measured rate
            boot.append(_measured_completion(inputs, cap, r, remaining, rate.value,
                                             rate.source))
            continue
        marks = _marks(inputs.now, {m: stepped.marks[r].get(m) for m in MARKS})
        first = sum(n for (c, res), n in stepped.first.items()
                    if res == r and left.get(c, {}).get(r, 0) > 0)
        boot.append(Completion(r, remaining, first, marks[1.0],
                               "modelled: what the capacity leaves after steady demand, by "
                               "the feeder's shares and mix", marks))
    return Forecast(inputs, lines, cap, tuple(boot), served, ages(inputs, cap, st),
                    solve.egresses_needed(inputs), solve.budget_needed(inputs),
                    solve.interval(inputs))
