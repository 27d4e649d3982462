"""Steady-state demand per reason, class and resource, from the policy.

The scheduler refreshes active soldiers (seen within the active window W); one is due again F
after it was collected (F here includes the lateness after due). With F <= W an active soldier
is collected every F while active: rate A / F (A: soldiers active now). With F > W at most once
per F: rate seen(F) / F, the soldiers seen in a period F (linear in log time between the
measured seen counts), never below the new soldiers' first collections (new per day / 24).
Each collection is one attempt at the measured requests per attempt; its failures come back as
the retry class's attempts (1 / success share - 1 per collection). Other reasons slot in
through `REASONS`: each names its feeder class and policy keys (turned off: it asks nothing).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from bf4ps.capacity.inputs import DAY, HOUR, RESOURCES, Inputs, Population
from bf4ps.domain import Resource
from bf4ps.policy import Policy


@dataclass(frozen=True)
class DemandLine:
    klass: str
    resource: str
    collections_per_hour: float  # attempts (jobs) per hour
    requests_per_hour: float
    note: str = ""
    reason: str = ""


def refresh_per_hour(freshness: float, pop: Population, active_window: float) -> float:
    """Collections per hour of one resource under the refresh model (module docstring)."""
    if freshness <= active_window:
        return pop.active.value * HOUR / freshness
    return max(pop.seen_within(freshness) * HOUR / freshness, pop.new_per_day.value / 24)


def freshness(pol: Policy, resource: str) -> float:
    return float(getattr(pol, f"freshness_{resource}_seconds"))


def lateness(inputs: Inputs, every: float = math.inf) -> float:
    """Seconds a met refresh comes after it is due, on average: the next feed (a scheduler
    tick), the first of the serving collectors' idle polls, the connect lead and the request.
    A soldier is due again one interval (`every`) after it was collected, so it is refreshed
    every interval plus this. The due sweep adds nothing on average: it spreads each due time
    over the sweep period before it (db/sql/feeder.sql, due_sweep), so a refresh waits half a
    sweep from a point half a sweep early; an interval shorter than the sweep is spread over
    itself only, and waits the rest."""
    serving = sum(e.serving for e in inputs.egresses) or 1
    durations = [c.duration_seconds.value for c in inputs.costs.values()]
    sweep = inputs.sweep_seconds
    return ((sweep - min(sweep, every)) / 2 + inputs.tick_seconds
            + inputs.idle_poll_seconds / (serving + 1) + inputs.connect_lead_seconds
            + (sum(durations) / len(durations) if durations else 0.0))


def _active_refresh(inputs: Inputs, pol: Policy) -> dict[str, float]:
    return {r: refresh_per_hour(freshness(pol, r) + lateness(inputs, freshness(pol, r)),
                                inputs.population, pol.active_window_seconds)
            for r in RESOURCES}


def _final_refresh(inputs: Inputs, pol: Policy) -> dict[str, float]:
    """Due once when a play session ends: detailed after a session of at least
    `final_refresh_min_play_seconds`, weapons and vehicles after one of at least
    `final_refresh_items_min_play_seconds` (the sessions lasting that long: measured, or the
    documented shape). What it adds is what exceeds the resource's freshness refresh, whose
    place it takes: a stale resource of a soldier on a server waits for his session's end."""
    pop = inputs.population
    out: dict[str, float] = {}
    for r in Resource:
        need = pol.final_refresh_min_play(r)
        if need is None:
            continue
        rate = pop.sessions_lasting(need).value
        out[r.value] = max(0.0, rate - refresh_per_hour(freshness(pol, r.value), pop,
                                                        pol.active_window_seconds))
    return out


def _scheduled_profile(inputs: Inputs, pol: Policy) -> dict[str, float]:
    """The profile of every known soldier every `scheduled_profile_seconds` (0: never)."""
    every = pol.scheduled_profile_seconds
    if every <= 0:
        return {}
    return {"profile": inputs.population.total.value * HOUR / every}


@dataclass(frozen=True)
class Reason:
    klass: str  # the feeder class its jobs are fed in
    per_hour: Callable[[Inputs, Policy], dict[str, float]]  # resource -> collections/h
    note: str


REASONS: dict[str, Reason] = {
    "active_refresh": Reason("active", _active_refresh, "refresh of active soldiers"),
    "final_refresh": Reason("active", _final_refresh, "once when a play session ends"),
    "scheduled_profile": Reason("recent", _scheduled_profile, "profile of known soldiers"),
}


def demand(inputs: Inputs, policy: Policy | None = None) -> tuple[DemandLine, ...]:
    """Every reason's collections per class and resource at their requests per attempt, the
    retries their failures cost (the retry class) and the interactive lane's measured rate.
    The bootstrap backlog is not steady state: the model steps it (capacity/model.py)."""
    pol = policy or inputs.policy
    lines: list[DemandLine] = []
    failed: dict[str, float] = dict.fromkeys(RESOURCES, 0.0)
    for name, reason in REASONS.items():
        for r, per_hour in reason.per_hour(inputs, pol).items():
            if per_hour <= 0 and name != "active_refresh":
                continue
            cost = inputs.costs[r]
            note = (f"every {span(freshness(pol, r))}" if name == "active_refresh"
                    else reason.note)
            lines.append(DemandLine(reason.klass, r, per_hour,
                                    per_hour * cost.requests_per_attempt.value, note, name))
            failed[r] += per_hour * (1 / cost.ok - 1)
    for r, attempts in failed.items():
        if attempts > 0:
            share = 100 * (1 - inputs.costs[r].ok)
            lines.append(DemandLine("retry", r, attempts,
                                    attempts * inputs.costs[r].requests_per_attempt.value,
                                    f"{share:.1f} % fail", "retry"))
    if inputs.interactive_per_hour.value > 0:
        lines.append(DemandLine("interactive", "all", 0.0, inputs.interactive_per_hour.value,
                                inputs.interactive_per_hour.source, "interactive"))
    return tuple(lines)


def span(seconds: float, *, rounded: bool = False) -> str:
    """An interval in words, at any scale (seconds to days): days and whole hours only where
    they are exact, or, `rounded` (a measurement's window), from a day and an hour on."""
    if seconds >= DAY and (rounded or (seconds >= 2 * DAY and seconds % DAY == 0)):
        return f"{seconds / DAY:.0f} d"
    if seconds >= HOUR and (rounded or seconds % HOUR == 0):
        return f"{seconds / HOUR:.0f} h"
    if seconds >= HOUR:
        return f"{seconds / HOUR:.1f} h"
    if seconds >= 120:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"
