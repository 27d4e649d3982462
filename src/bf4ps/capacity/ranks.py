"""The claim's rank order, for the model (model.py): the claim takes the lowest rank, and a
job's rank is its feed time plus its class's aging offset (queue/ranking.py). While no queued
rank is due the fed shares hold (`Ranked.at` follows the clock). A queued rank that comes is
served at the whole capacity, but only after every job ranked before it: while the queue is
behind (`at`, the rank being served, below the clock) the capacity serves the ranks in order,
each class at the rate it is fed, counted from its aging offset on. A starved higher class is
fed what leaves, so a burst of queued ranks falls behind the clock and the lag stays."""

from __future__ import annotations

import math

from bf4ps.capacity.fill import Key, Want
from bf4ps.capacity.inputs import HOUR, RESOURCES, Inputs
from bf4ps.domain import PriorityClass
from bf4ps.policy import Policy


class Ranked:
    """The pending first attempts of a starvable class (recent, bootstrap) queued at the
    forecast's instant, by rank (hours from now, lowest first). Inside the class the claim is
    FIFO, so the class's fed share takes them from the front (`eaten`); one whose rank comes
    before that goes ahead of every job ranked after it: it is claimed once the queue reaches
    its rank, at the whole capacity, on top of the share. `at`: the rank being served (hours
    from now): all ranked below it are gone."""

    def __init__(self, inputs: Inputs, left: dict[str, dict[str, float]]) -> None:
        self.ranks: dict[str, list[float]] = {}
        for q in inputs.queued:
            if q.klass in ("recent", "bootstrap") and q.ranks:
                most = int(sum(left.get(q.klass, {}).values()))
                self.ranks[q.klass] = sorted(x / HOUR for x in q.ranks)[:most]
        self.eaten = dict.fromkeys(self.ranks, 0.0)
        self.at = 0.0

    def due(self) -> dict[str, float]:
        """Jobs per class ranked at or below `at` that the share has not yet taken."""
        out = {}
        for c, ranks in self.ranks.items():
            come = sum(1 for x in ranks if x <= self.at + 1e-12)
            if come - self.eaten[c] > 1e-9:
                out[c] = come - self.eaten[c]
        return out

    def next(self) -> float | None:
        """The next rank above `at` not yet taken by the share (hours from now)."""
        ahead = [x for c, ranks in self.ranks.items()
                 for x in ranks[int(self.eaten[c] + 1e-9):] if x > self.at + 1e-12]
        return min(ahead) if ahead else None

    def take(self, klass: str, jobs: float) -> None:
        if klass in self.eaten:
            self.eaten[klass] = min(float(len(self.ranks[klass])), self.eaten[klass] + jobs)


def burst(inputs: Inputs, left: dict[str, dict[str, float]], wants: dict[Key, Want],
          due: dict[str, float], background: float) -> tuple[dict[Key, float], float]:
    """Queued jobs whose rank the queue has reached, claimed ahead of the rest at the whole
    background capacity (each class's resources by its mix weight, else by what is left):
    jobs per hour per key and the hours they take."""
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


def behind(pol: Policy, left: dict[str, dict[str, float]], alloc: dict[Key, float],
           at: float) -> tuple[dict[Key, float], float]:
    """The queue behind the clock, serving ranks in order: the jobs fed since the forecast
    ranked at `at` are those of the classes whose aging offset it has passed (fed at `at`
    minus the offset), each fed at its rate in `alloc`; the capacity (every job fed, as many
    leave) takes them at `speed` hours of rank per hour. Jobs per hour per key with work
    never attempted, and the speed (inf: nothing ranked there, the queue catches up)."""
    jobs = sum(alloc.values())
    live = {k: n for k, n in alloc.items() if n > 0 and offset(pol, k[0]) <= at + 1e-12}
    density = sum(live.values())
    if density <= 0 or jobs <= 0:
        return {}, math.inf
    speed = jobs / density
    return {k: n * speed for k, n in live.items() if left.get(k[0], {}).get(k[1], 0) > 0}, speed


def offset(pol: Policy, klass: str) -> float:
    """A class's aging offset, hours (retries are ranked when they are due: none)."""
    return pol.aging(PriorityClass(klass)) / HOUR if klass in ("recent", "bootstrap") else 0.0


def behind_ends(pol: Policy, ranked: Ranked, alloc: dict[Key, float], hours: float,
                speed: float) -> list[float | None]:
    """Hours until, serving behind the clock at `speed`, the queue reaches the next queued
    rank or a class's aging offset (the ranks' mix changes), or catches up with the clock."""
    at = ranked.at
    marks = [ranked.next(), *(offset(pol, c) for c in {k[0] for k in alloc})]
    ends: list[float | None] = [(x - at) / speed for x in marks if x is not None and x > at]
    if speed > 1:
        ends.append((hours - at) / (speed - 1))
    return ends
