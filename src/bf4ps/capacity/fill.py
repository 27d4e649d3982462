"""How the fleet's send capacity is split, by the feeder's own rules (scheduler/feeder.py,
mix.py): each pass feeds every class its share of the deficit (inside a class, each joined
resource its mix weight; a resource with too little work hands the rest to the class's other
resources in order), and what a class could not use is borrowed by the classes in the
feeder's order (active, recent, bootstrap, retry) up to their work. Whatever the working set
holds is eventually sent, so over time the jobs fed are the jobs sent: the model finds the
feed rate X (jobs per hour) whose jobs cost exactly the capacity in requests (or meets every
demand). The budget's active cap then holds the active class back and the freed capacity is
filled by the others the same way."""

from __future__ import annotations

import math
from dataclasses import dataclass

from bf4ps.capacity.inputs import CLASSES

Key = tuple[str, str]  # (class, resource)
PRECISION = 1e-10  # the feed rate is solved to this share of itself


@dataclass(frozen=True)
class Want:
    demand: float  # jobs per hour (math.inf: a backlog, as much as it is given)
    weight: float  # the resource's weight inside its class
    cost: float  # requests per job


def _split(total: float, demands: dict[str, float], weights: dict[str, float]
           ) -> dict[str, float]:
    """`total` split by weights, each capped by its demand; what one cannot use goes to the
    others in key order (the feeder's second pass, its borrowing)."""
    positive = {k: w for k, w in weights.items() if w > 0}
    scale = sum(positive.values())
    out = {k: (min(demands[k], total * positive[k] / scale) if k in positive and scale > 0
               else 0.0) for k in demands}
    left = total - sum(out.values())
    for k in demands:
        if left <= 1e-12:
            break
        more = min(demands[k] - out[k], left)
        if more > 0:
            out[k] += more
            left -= more
    return out


class _Feed:
    """The feeder's split of a feed rate, with what does not depend on the rate worked out
    once (the solver evaluates it many times)."""

    def __init__(self, wants: dict[Key, Want], shares: dict[str, float]) -> None:
        self.classes = list(CLASSES)  # every class takes its share of a pass, work or not
        self.by_class = {c: {k[1]: w for k, w in wants.items() if k[0] == c}
                         for c in self.classes}
        self.demand = {c: sum(w.demand for w in self.by_class[c].values())
                       for c in self.classes}
        self.shares = {c: shares.get(c, 0.0) for c in self.classes}
        self.inner = {c: ({r: w.demand for r, w in ws.items()},
                          {r: w.weight for r, w in ws.items()})
                      for c, ws in self.by_class.items()}
        self.cost = {k: w.cost for k, w in wants.items()}

    def at(self, x: float) -> dict[Key, float]:
        fed = _split(x, self.demand, self.shares)
        out: dict[Key, float] = {}
        for c in self.classes:
            demands, weights = self.inner[c]
            out.update({(c, r): n for r, n in _split(fed[c], demands, weights).items()})
        return out

    def requests(self, x: float) -> float:
        return sum(n * self.cost[k] for k, n in self.at(x).items())


def requests(alloc: dict[Key, float], wants: dict[Key, Want], klass: str | None = None) -> float:
    return sum(n * wants[k].cost for k, n in alloc.items()
               if k in wants and (klass is None or k[0] == klass))


def fill(capacity: float, wants: dict[Key, Want], shares: dict[str, float]
         ) -> dict[Key, float]:
    """Jobs per hour per key within `capacity` requests per hour."""
    wants = {k: w for k, w in wants.items() if w.demand > 0 and w.cost > 0}
    if not wants or capacity <= 0:
        return dict.fromkeys(wants, 0.0)
    feed = _Feed(wants, shares)
    total = sum(w.demand for w in wants.values())
    if not math.isinf(total) and feed.requests(total) <= capacity:
        return feed.at(total)  # every demand met
    return feed.at(_solve(feed, capacity, capacity / min(w.cost for w in wants.values())))


def _solve(feed: _Feed, capacity: float, hi: float) -> float:
    """The feed rate whose requests are the capacity: requests(X) is continuous, piecewise
    linear and non-decreasing in X, so false position (Illinois) finds it in a few steps;
    the answer never costs more than the capacity."""
    lo, f_lo, f_hi = 0.0, -capacity, feed.requests(hi) - capacity
    if f_hi <= 0:
        return hi
    side = 0
    for _ in range(200):
        if hi - lo <= PRECISION * hi:
            break
        x = hi - f_hi * (hi - lo) / (f_hi - f_lo)
        if not lo < x < hi:
            x = (lo + hi) / 2
        f = feed.requests(x) - capacity
        if f <= 0:
            lo, f_lo = x, f
            if f > -PRECISION * capacity:
                break
            f_hi, side = (f_hi / 2 if side == -1 else f_hi), -1
        else:
            hi, f_hi = x, f
            f_lo, side = (f_lo / 2 if side == 1 else f_lo), 1
    return lo


def fill_capped(capacity: float, active_cap: float, wants: dict[Key, Want],
                shares: dict[str, float]) -> dict[Key, float]:
    """`fill`, then the active class held to `active_cap` requests per hour and the rest of
    the capacity filled again among the other classes."""
    alloc = fill(capacity, wants, shares)
    active = requests(alloc, wants, "active")
    if active <= active_cap * (1 + 1e-12):
        return alloc
    scale = active_cap / active
    fixed = {k: n * scale for k, n in alloc.items() if k[0] == "active"}
    others = {k: w for k, w in wants.items() if k[0] != "active"}
    return {**fill(capacity - active_cap, others, shares), **fixed}
