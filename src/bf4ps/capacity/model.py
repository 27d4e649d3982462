"""The model stepped through time: each step the capacity (gates.py) is split by the feeder's
rules (fill.py) among the steady demand (demand.py) and the never-attempted backlog of each
class. Inside the active class the backlog is served first (the feeder is FIFO), refresh
demand grows with the soldiers already collected, and resources join the bootstrap mix at
their watermarks (scheduler/mix.py). Class shares are the feeder's own (rules.fed_shares),
with the jobs' real cost and the measured pass period. The fleet budget holds the active class
below its cap and what the other classes' floors leave (budget_allowed_classes, db/schema.sql).
A first attempt costs its failures' retries too. A starved lower class waits only while the
higher class's jobs queued before the forecast remain (`holds`); its own queued jobs go first,
any whose rank comes earlier at the whole capacity (`_Ranked`). Steps end where a backlog
empties, a wait ends, a queued rank comes or a watermark is crossed: no step size matters."""

from __future__ import annotations

import math
from dataclasses import dataclass

from bf4ps.capacity.demand import DemandLine
from bf4ps.capacity.fill import Key, Want, fill_capped
from bf4ps.capacity.gates import Capacity, mean_duration, spacing
from bf4ps.capacity.inputs import CLASSES, HOUR, RESOURCES, Inputs
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


class _Ranked:
    """The pending first attempts of a starvable class (recent, bootstrap) queued at the
    forecast's instant, by rank (hours from now, lowest first). Inside the class the claim is
    FIFO, so the class's fed share takes them from the front (`eaten`); one whose rank comes
    before that goes ahead of every higher-class job fed after its rank (queue/ranking.py):
    it is claimed then, at the whole capacity, on top of the share."""

    def __init__(self, inputs: Inputs, left: dict[str, dict[str, float]]) -> None:
        self.ranks: dict[str, list[float]] = {}
        for q in inputs.queued:
            if q.klass in ("recent", "bootstrap") and q.ranks:
                most = int(sum(left.get(q.klass, {}).values()))
                self.ranks[q.klass] = sorted(x / HOUR for x in q.ranks)[:most]
        self.eaten = dict.fromkeys(self.ranks, 0.0)

    def due(self, hours: float) -> dict[str, float]:
        """Jobs per class whose rank has come and that the share has not yet taken."""
        out = {}
        for c, ranks in self.ranks.items():
            come = sum(1 for x in ranks if x <= hours + 1e-12)
            if come - self.eaten[c] > 1e-9:
                out[c] = come - self.eaten[c]
        return out

    def next(self, hours: float) -> float | None:
        """Hours to the next rank still ahead and not yet taken by the share."""
        ahead = [x for c, ranks in self.ranks.items()
                 for x in ranks[int(self.eaten[c] + 1e-9):] if x > hours + 1e-12]
        return min(ahead) - hours if ahead else None

    def take(self, klass: str, jobs: float) -> None:
        if klass in self.eaten:
            self.eaten[klass] = min(float(len(self.ranks[klass])), self.eaten[klass] + jobs)


def _burst(inputs: Inputs, left: dict[str, dict[str, float]], wants: dict[Key, Want],
           due: dict[str, float], background: float) -> tuple[dict[Key, float], float]:
    """Queued jobs whose rank has come, claimed ahead of the rest at the whole background
    capacity (each class's resources by its mix weight, else by what is left): jobs per hour
    per key and the hours they take."""
    rates: dict[Key, float] = {}
    hours = 0.0
    for c, n in due.items():
        weights = {r: (wants[(c, r)].weight if (c, r) in wants else 0.0)
                   for r in RESOURCES if left[c][r] > 0}
        if sum(weights.values()) <= 0:
            weights = {r: left[c][r] for r in RESOURCES if left[c][r] > 0}
        total = sum(weights.values())
        if total <= 0:
            continue
        split = {r: w / total for r, w in weights.items() if w > 0}
        cost = sum(p * (wants[(c, r)].cost if (c, r) in wants
                        else inputs.costs[r].requests_per_collection)
                   for r, p in split.items())
        hours += n * cost / background if background > 0 else math.inf
        rates.update({(c, r): p * n for r, p in split.items()})  # jobs, made rates below
    if not rates or not 0 < hours < math.inf:
        return {}, 0.0
    return {k: n / hours for k, n in rates.items()}, hours


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
    ranked = _Ranked(inputs, left)
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
        # queued jobs whose rank has come go ahead of all else; otherwise inside a class the
        # backlog is the oldest work: it is served first; a starved lower class waits while
        # the higher class's queued jobs go first
        backlog, burst = _burst(inputs, left, wants, ranked.due(hours), bg)
        held = {} if backlog else _held(alloc, wants, hours, wait)
        if not backlog:
            backlog = {(c, r): 0.0 if c in held else alloc.get((c, r), 0.0)
                       for c in left for r in RESOURCES if left[c][r] > 0}
        dt = _ends(_step(inputs, pol, left, backlog, attempted, start, done),
                   [burst] if burst else [ranked.next(hours),
                                          *(until - hours for until in held.values())])
        if dt is None:
            break
        _cross(start, marks, done, backlog, hours, dt)
        for (c, r), rate in backlog.items():
            left[c][r] = max(0.0, left[c][r] - rate * dt)
            if left[c][r] < 1e-6:
                left[c][r] = 0.0
        for c in ranked.eaten:
            ranked.take(c, sum(v for (k, _), v in backlog.items() if k == c) * dt)
        hours += dt
    return Run(marks, first, wants0)


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
