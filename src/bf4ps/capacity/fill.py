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


def _at(x: float, wants: dict[Key, Want], shares: dict[str, float]) -> dict[Key, float]:
    classes = list(CLASSES)  # every class takes its share of a pass, work or not
    by_class = {c: {k[1]: w for k, w in wants.items() if k[0] == c} for c in classes}
    demand = {c: sum(w.demand for w in by_class[c].values()) for c in classes}
    fed = _split(x, demand, {c: shares.get(c, 0.0) for c in classes})
    out: dict[Key, float] = {}
    for c in classes:
        ws = by_class[c]
        got = _split(fed[c], {r: w.demand for r, w in ws.items()},
                     {r: w.weight for r, w in ws.items()})
        out.update({(c, r): n for r, n in got.items()})
    return out


def requests(alloc: dict[Key, float], wants: dict[Key, Want], klass: str | None = None) -> float:
    return sum(n * wants[k].cost for k, n in alloc.items()
               if k in wants and (klass is None or k[0] == klass))


def fill(capacity: float, wants: dict[Key, Want], shares: dict[str, float]
         ) -> dict[Key, float]:
    """Jobs per hour per key within `capacity` requests per hour."""
    wants = {k: w for k, w in wants.items() if w.demand > 0 and w.cost > 0}
    if not wants or capacity <= 0:
        return dict.fromkeys(wants, 0.0)
    total = sum(w.demand for w in wants.values())
    if not math.isinf(total) and requests(_at(total, wants, shares), wants) <= capacity:
        return _at(total, wants, shares)  # every demand met
    lo, hi = 0.0, capacity / min(w.cost for w in wants.values())
    for _ in range(60):  # requests(X) is non-decreasing in the feed rate X
        mid = (lo + hi) / 2
        if requests(_at(mid, wants, shares), wants) <= capacity:
            lo = mid
        else:
            hi = mid
    return _at(lo, wants, shares)


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
