"""The model stepped through time: each step the capacity (gates.py) is split by the feeder's
rules (fill.py) among the steady demand (demand.py) and the never-attempted backlog of each
class. Inside the active class the backlog is served first (the feeder is FIFO), refresh
demand grows with the soldiers already collected, and resources join the bootstrap mix at
their watermarks (scheduler/mix.py). Class shares are the feeder's own (rules.fed_shares),
with the jobs' real cost and the measured pass period. The fleet budget holds the active class
below its cap and what the other classes' floors leave (budget_allowed_classes, db/schema.sql).
A first attempt costs its failures' retries too. A starved lower class waits only while the
higher class's jobs queued before the forecast remain (`holds`); its own queued jobs go first,
any whose rank the queue reaches earlier at the whole capacity, and behind such a burst the
queue serves ranks in order (ranks.py). Steps end where a backlog empties, a wait ends, a
queued rank comes or a watermark is crossed: no step size matters."""

from __future__ import annotations

import math
from dataclasses import dataclass

from bf4ps.capacity.demand import DemandLine
from bf4ps.capacity.fill import Key, Want, fill_capped
from bf4ps.capacity.gates import Capacity, mean_duration, spacing
from bf4ps.capacity.inputs import CLASSES, HOUR, RESOURCES, Inputs
from bf4ps.capacity.ranks import Ranked, behind, behind_ends, burst
from bf4ps.capacity.rules import fed_shares, joined_weights
from bf4ps.domain import PriorityClass
from bf4ps.policy import Policy

MARKS = (0.10, 0.25, 0.50, 0.90, 1.0)
HORIZON_HOURS = 3650.0 * 24  # past this, a bootstrap "never" completes at today's rates
MAX_STEPS = 20_000


@dataclass(frozen=True)
class Steady:
    demand: dict[Key, float]  # jobs per hour asked (steady reasons)
    served: dict[Key, float]  # jobs per hour given


@dataclass
class Run:
    """The stepped bootstrap: when each resource's attempted share passed each mark (hours
    from now; None: not within the horizon) and the first step's allocation."""

    marks: dict[str, dict[float, float | None]]
    first: dict[Key, float]
    wants0: dict[Key, Want]


def steady_wants(inputs: Inputs, pol: Policy, lines: tuple[DemandLine, ...]
                 ) -> dict[Key, float]:
    out: dict[Key, float] = {}
    for d in lines:
        if d.resource in RESOURCES and d.klass != "interactive":
            out[(d.klass, d.resource)] = out.get((d.klass, d.resource), 0.0) \
                + d.collections_per_hour
    return out


def job_cost(inputs: Inputs, alloc: dict[Key, float] | None = None) -> float:
    """Requests per job leaving the working set: over the jobs of `alloc` (jobs per hour per
    key: the work the fleet is given), else the mean over the resources."""
    jobs = sum(alloc.values()) if alloc else 0.0
    if alloc and jobs > 0:
        return max(sum(n * inputs.costs[r].requests_per_attempt.value
                       for (_, r), n in alloc.items()) / jobs, 1e-9)
    costs = [c.requests_per_attempt.value for c in inputs.costs.values()]
    return max(sum(costs) / len(costs) if costs else 1.0, 1e-9)


def shares(inputs: Inputs, pol: Policy, background: float, per_job: float | None = None
           ) -> dict[str, float]:
    """The class shares the feeder gives at this capacity: the jobs leaving the working set
    in one feeder pass (the measured pass period, else the scheduler's tick), each serving
    egress's at its share of the background capacity."""
    per_job = per_job or job_cost(inputs)
    jobs = background / per_job * inputs.pass_period / HOUR
    dur = mean_duration(inputs)
    paced = [HOUR / spacing(inputs, e.min_interval_seconds, e.serving, dur)
             for e in inputs.egresses if e.serving > 0]
    whole = sum(paced)
    if whole <= 0:
        return fed_shares(pol, [jobs])
    return fed_shares(pol, [jobs * p / whole for p in paced])


def mixed_shares(inputs: Inputs, pol: Policy, background: float, most: float,
                 wants: dict[Key, Want]) -> tuple[dict[str, float], float]:
    """The feeder's shares with the jobs' real mix, and that mix's requests per job: how many
    jobs leave a pass depends on what they cost, so the work given at the resources' mean
    cost sets the cost the shares are then worked out at."""
    per_job = job_cost(inputs, fill_capped(background, most, wants,
                                           shares(inputs, pol, background)))
    return shares(inputs, pol, background, per_job), per_job


def active_cap(inputs: Inputs, cap: Capacity, pol: Policy, bootstrap_left: bool,
               retries: bool) -> float:
    """The active class's most (requests per hour): its budget cap, and under a fleet budget
    what the reserved floors of the bootstrap and retry classes leave while they have work."""
    most = max(0.0, cap.active_cap_per_hour)
    if cap.budget_per_hour is None:
        return most
    floors = (pol.budget_floor_bootstrap if bootstrap_left else 0.0) + (
        pol.budget_floor_retry if retries else 0.0)
    return min(most, max(0.0, 1 - floors) * cap.budget_per_hour)


def _wants(inputs: Inputs, pol: Policy, steady: dict[Key, float],
           left: dict[str, dict[str, float]], attempted: float) -> dict[Key, Want]:
    mix = joined_weights(pol, attempted)
    active_total = max(inputs.population.active.value, 1.0)
    wants: dict[Key, Want] = {}
    for c in ("active", "recent", "bootstrap", "retry"):
        raw: dict[str, float] = {}
        for r in RESOURCES:
            d = steady.get((c, r), 0.0)
            if c == "active":  # refreshes only of the soldiers already collected
                d *= max(0.0, 1 - left["active"][r] / max(active_total, left["active"][r]))
            if c != "retry" and left[c][r] > 0:
                d = math.inf
            raw[r] = d
        if c == "active":
            mw = {r: 1.0 for r in RESOURCES if raw[r] > 0}
        elif c == "retry":
            mw = {r: raw[r] for r in RESOURCES if raw[r] > 0}
        else:
            mw = {r: mix.get(r, 0.0) for r in RESOURCES if raw[r] > 0}
        total = sum(mw.values())
        for r in RESOURCES:
            if raw[r] > 0:
                w = mw.get(r, 0.0) / total if total > 0 else 0.0
                cost = inputs.costs[r]  # a first attempt costs its failures' retries too
                wants[(c, r)] = Want(raw[r], w, cost.requests_per_collection
                                     if math.isinf(raw[r]) else cost.requests_per_attempt.value)
    return wants


def _attempted(inputs: Inputs, left: dict[str, dict[str, float]], r: str) -> float:
    total = inputs.total(r)
    if total <= 0:
        return 1.0
    return max(0.0, 1 - sum(left[c][r] for c in left) / total)


def run(inputs: Inputs, cap: Capacity, lines: tuple[DemandLine, ...],
        pol: Policy | None = None) -> Run:
    pol = pol or inputs.policy
    steady = steady_wants(inputs, pol, lines)
    left = inputs.never_attempted()
    bg = max(0.0, cap.per_hour - inputs.interactive_per_hour.value)
    retries = any(c == "retry" and v > 0 for (c, _), v in steady.items())
    wants = _wants(inputs, pol, steady, left, _attempted(inputs, left, "detailed"))
    most = active_cap(inputs, cap, pol, any(left["bootstrap"].values()), retries)
    fed, per_job = mixed_shares(inputs, pol, bg, most, wants)
    wait = holds(inputs, pol, fed, bg, per_job)
    ranked = Ranked(inputs, left)
    start = {r: sum(left[c][r] for c in left) for r in RESOURCES}
    marks: dict[str, dict[float, float | None]] = {r: {} for r in RESOURCES}
    hours = 0.0
    first: dict[Key, float] = {}
    wants0: dict[Key, Want] = {}
    for _ in range(MAX_STEPS):
        done = {r: _done(start[r], left, r) for r in RESOURCES}
        for r in RESOURCES:
            for m in MARKS:
                if m not in marks[r] and done[r] >= m - 1e-9:
                    marks[r][m] = hours
        attempted = _attempted(inputs, left, "detailed")
        wants = _wants(inputs, pol, steady, left, attempted)
        most = active_cap(inputs, cap, pol, any(left["bootstrap"].values()), retries)
        alloc = fill_capped(bg, most, wants, fed)
        if not first:
            first, wants0 = alloc, wants
        if not any(left[c][r] > 0 for c in left for r in RESOURCES) or hours >= HORIZON_HOURS:
            break
        mode, backlog, ends, speed = _plan(inputs, pol, left, wants, alloc, ranked, hours,
                                           wait, bg)
        dt = _ends(_step(inputs, pol, left, backlog, attempted, start, done), ends)
        if dt is None:
            break
        _cross(start, marks, done, backlog, hours, dt)
        for (c, r), rate in backlog.items():
            left[c][r] = max(0.0, left[c][r] - rate * dt)
            if left[c][r] < 1e-6:
                left[c][r] = 0.0
        _advance(ranked, mode, backlog, hours, dt, speed)
        hours += dt
    return Run(marks, first, wants0)


def _plan(inputs: Inputs, pol: Policy, left: dict[str, dict[str, float]],
          wants: dict[Key, Want], alloc: dict[Key, float], ranked: Ranked, hours: float,
          wait: dict[str, float], bg: float
          ) -> tuple[str, dict[Key, float], list[float | None], float]:
    """What the next step serves (jobs per hour per key with work left) and the events that
    may end it: queued jobs the queue's rank has reached go ahead of all else ("burst");
    while the queue is behind the clock it serves ranks in order ("behind", at `speed` hours
    of rank per hour); otherwise the feeder's shares, where inside a class the backlog is the
    oldest work and is served first, and a starved lower class waits while the higher
    class's queued jobs go first ("shares")."""
    backlog, burst_hours = burst(inputs, left, wants, ranked.due(), bg)
    if backlog:
        return "burst", backlog, [burst_hours], 0.0
    if ranked.at < hours - 1e-12:
        rates, speed = behind(pol, left, alloc, ranked.at)
        if not math.isinf(speed):
            return "behind", rates, behind_ends(pol, ranked, alloc, hours, speed), speed
        ranked.at = hours  # nothing ranked in between: caught up
        return _plan(inputs, pol, left, wants, alloc, ranked, hours, wait, bg)
    held = _held(alloc, wants, hours, wait)
    backlog = {(c, r): 0.0 if c in held else alloc.get((c, r), 0.0)
               for c in left for r in RESOURCES if left[c][r] > 0}
    nxt = ranked.next()
    return "shares", backlog, [None if nxt is None else nxt - hours,
                               *(until - hours for until in held.values())], 0.0


def _advance(ranked: Ranked, mode: str, backlog: dict[Key, float], hours: float, dt: float,
             speed: float) -> None:
    """The rank served after a step: a burst holds it (the clock runs ahead), serving behind
    the clock moves it at its speed (up to the clock), the shares keep it at the clock. The
    share and a burst take the class's queued jobs from the front; behind the clock the
    class is served its jobs fed since the forecast."""
    if mode != "behind":
        for c in ranked.eaten:
            ranked.take(c, sum(v for (k, _), v in backlog.items() if k == c) * dt)
    if mode == "shares":
        ranked.at = hours + dt
    elif mode == "behind":
        ranked.at = min(hours + dt, ranked.at + speed * dt)
        if ranked.at > hours + dt - 1e-12:
            ranked.at = hours + dt


def _ends(dt: float | None, ends: list[float | None]) -> float | None:
    """The step's length: `_step`'s next event or, if sooner, the burst's end, a wait's end or
    the next queued job's rank."""
    out = [e for e in ends if e is not None and e > 0]
    if not out:
        return dt
    return min(out) if dt is None else min(dt, *out)


def holds(inputs: Inputs, pol: Policy, fed: dict[str, float], background: float,
          per_job: float | None = None) -> dict[str, float]:
    """Hours each lower class waits at the start when a higher class is starved. The claim
    takes the lowest rank (queue/ranking.py: feed time plus the class's aging offset), but
    the feeder refills only what left the working set, each class its share: the higher
    class's jobs queued before the forecast go first, and once they are gone the lower
    class is served at its share (its jobs are then the only ones left between feeds). So it
    waits until those beyond one pass's feed are drained (at the lower classes' share of the
    service) or until
    its own first rank comes (its first queued job's, else a new job's aging offset),
    whichever is sooner; with no higher-class job queued, not at all."""
    jobs = background / (per_job or job_cost(inputs))
    queued = {q.klass: q for q in inputs.queued}
    out: dict[str, float] = {}
    for c in ("recent", "bootstrap"):
        higher = CLASSES[:CLASSES.index(c)]
        share = sum(fed.get(h, 0.0) for h in higher)
        # what one pass feeds them is served within the pass anyway: only more waits
        ahead = max(0.0, sum(queued[h].jobs for h in higher if h in queued)
                    - share * jobs * inputs.pass_period / HOUR)
        own = queued.get(c)
        rank = (max(0.0, own.first) if own is not None and own.jobs > 0
                else pol.aging(PriorityClass(c))) / HOUR
        rest = jobs * (1 - share)
        drain = 0.0 if ahead <= 0 else (ahead / rest if rest > 0 else math.inf)
        out[c] = min(rank, drain)
    return out


def _held(alloc: dict[Key, float], wants: dict[Key, Want], hours: float,
          wait: dict[str, float]) -> dict[str, float]:
    """Classes held at `hours` (class -> hour their wait ends): starved by a higher class
    (it has more work than it gets) and within their wait."""
    out: dict[str, float] = {}
    for c, until in wait.items():
        higher = CLASSES[:CLASSES.index(c)]
        starved = any(k[0] in higher and alloc.get(k, 0.0) < w.demand * (1 - 1e-9)
                      for k, w in wants.items())
        if starved and hours < until:
            out[c] = until
    return out


def _done(start: float, left: dict[str, dict[str, float]], r: str) -> float:
    """The share of the forecast's never-attempted work of a resource done (1: none was
    left)."""
    return 1.0 if start <= 0 else max(0.0, 1 - sum(left[c][r] for c in left) / start)


def _cross(start: dict[str, float], marks: dict[str, dict[float, float | None]],
           att: dict[str, float], backlog: dict[Key, float], hours: float, dt: float) -> None:
    """Marks passed inside this step, at the moment each is passed (the rates are constant
    within a step)."""
    for r in RESOURCES:
        rate = sum(v for (c, res), v in backlog.items() if res == r)
        total = start[r]
        if rate <= 0 or total <= 0:
            continue
        for m in MARKS:
            if m not in marks[r] and att[r] + rate * dt / total >= m - 1e-9:
                marks[r][m] = hours + max(0.0, (m - att[r]) * total / rate)


def _step(inputs: Inputs, pol: Policy, left: dict[str, dict[str, float]],
          backlog: dict[Key, float], attempted: float, start: dict[str, float],
          done: dict[str, float]) -> float | None:
    """Hours to the next event: a backlog empties, a watermark is crossed (the mix
    changes), or detailed passes a mark."""
    ends = [left[c][r] / rate for (c, r), rate in backlog.items() if rate > 0]
    if not ends:
        return None
    dt = min(ends)
    total = inputs.total("detailed")
    rate = sum(v for (c, r), v in backlog.items() if r == "detailed")
    if total > 0 and rate > 0:
        for m in (float(getattr(pol, f"watermark_{r}")) for r in RESOURCES[1:]):
            if m > attempted + 1e-9:
                dt = min(dt, (m - attempted) * total / rate + 1e-9)
        for m in MARKS:
            if m > done["detailed"] + 1e-9:
                dt = min(dt, (m - done["detailed"]) * start["detailed"] / rate + 1e-9)
    return max(dt, 1e-9)


def steady_state(inputs: Inputs, cap: Capacity, lines: tuple[DemandLine, ...],
                 pol: Policy | None = None) -> Steady:
    """The allocation once every backlog is done: each steady reason's demand and what the
    feeder's rules give it."""
    pol = pol or inputs.policy
    steady = steady_wants(inputs, pol, lines)
    none_left = {c: dict.fromkeys(RESOURCES, 0.0) for c in ("active", "recent", "bootstrap")}
    wants = _wants(inputs, pol, steady, none_left, 1.0)
    bg = max(0.0, cap.per_hour - inputs.interactive_per_hour.value)
    retries = any(c == "retry" and v > 0 for (c, _), v in steady.items())
    most = active_cap(inputs, cap, pol, False, retries)
    alloc = fill_capped(bg, most, wants, mixed_shares(inputs, pol, bg, most, wants)[0])
    return Steady({k: w.demand for k, w in wants.items()}, alloc)


def hours_to(hours: float | None) -> float:
    return math.inf if hours is None else hours * HOUR
