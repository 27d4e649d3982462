"""The never-attempted jobs already queued when the forecast is taken (pure). The claim takes
the lowest rank (queue/ranking.py: a job's feed time plus its class's aging offset), so the
queued jobs whose rank is not after now go before anything fed later: a lump served at the
whole capacity first. The others are claimed as their ranks come, ahead of the higher-class
work fed after those ranks: an inflow spread evenly over their ranks, which a class starved
of its share still gets."""

from __future__ import annotations

from dataclasses import dataclass

from bf4ps.capacity.fill import Key
from bf4ps.capacity.inputs import HOUR, Queued

SHORTEST = 1e-3  # seconds: ranks closer than this are one moment


@dataclass
class Cohort:
    key: Key
    left: float  # its jobs not served yet
    first: float  # hours from the forecast: the first rank comes
    last: float  # the last rank comes

    @property
    def rate(self) -> float:
        """Jobs per hour becoming claimable between its first and last rank."""
        return self.left / max(self.last - self.first, SHORTEST / HOUR) if self.left else 0.0


class Cohorts:
    def __init__(self, queued: tuple[Queued, ...], left: dict[str, dict[str, float]]) -> None:
        self.now: dict[Key, float] = {}
        self.later: dict[Key, Cohort] = {}
        for q in queued:
            have = left.get(q.klass, {}).get(q.resource, 0.0)
            key = (q.klass, q.resource)
            due = min(float(q.due_now), have)
            if due > 0:
                self.now[key] = self.now.get(key, 0.0) + due
            later = min(float(q.later), have - due)
            if later > 0:
                self.later[key] = Cohort(key, later, max(0.0, q.first) / HOUR,
                                         max(q.first, q.last) / HOUR)
        self._rates = {k: c.rate for k, c in self.later.items()}

    def inflow(self, hours: float) -> dict[Key, float]:
        """Jobs per hour whose rank has come, per class and resource, at `hours`."""
        return {k: self._rates[k] for k, c in self.later.items()
                if c.left > 0 and c.first <= hours + 1e-12 < c.last}

    def served(self, key: Key, jobs: float) -> None:
        """`jobs` of a class and resource were served: its queued jobs go first (the lowest
        ranks of their class)."""
        c = self.later.get(key)
        if c is not None:
            c.left = max(0.0, c.left - jobs)

    def next_event(self, hours: float) -> float | None:
        """Hours to the next rank boundary or a cohort served out."""
        ends: list[float] = []
        for k, c in self.later.items():
            if c.left <= 0:
                continue
            ends += [t - hours for t in (c.first, c.last) if t > hours + 1e-12]
            if c.first <= hours + 1e-12 < c.last and self._rates[k] > 0:
                ends.append(c.left / self._rates[k])
        return min(ends) if ends else None
