"""How the fleet's send capacity is split, by the scheduler's own rules: the feeder keeps the
working set at its target by feeding each class its share of the deficit (inside a class,
each resource its mix weight), and a class (or resource) that has too little work lends its
share to the others — the last of it in the feeder's class order. Whatever the queue holds is
eventually sent, so over time each class is served at its share of the jobs until its demand
is met (water-filling). The budget's active cap then holds the active class back and the
freed capacity is filled by the others the same way."""

from __future__ import annotations

import math
from dataclasses import dataclass

from bf4ps.capacity.inputs import CLASSES

Key = tuple[str, str]  # (class, resource)


@dataclass(frozen=True)
class Want:
    demand: float  # jobs per hour (math.inf: a backlog, as much as it is given)
    weight: float  # the feeder's share of the jobs (class share x resource weight)
    cost: float  # requests per job


def fill(capacity: float, wants: dict[Key, Want]) -> dict[Key, float]:
    """Jobs per hour per key within `capacity` requests per hour."""
    alloc = dict.fromkeys(wants, 0.0)
    remaining = max(0.0, capacity)
    open_ = [k for k, w in wants.items() if w.demand > 0 and w.weight > 0 and w.cost > 0]
    while open_ and remaining > 1e-12:
        x = remaining / sum(wants[k].weight * wants[k].cost for k in open_)
        met = [k for k in open_ if wants[k].weight * x >= wants[k].demand]
        if not met:
            for k in open_:
                alloc[k] = wants[k].weight * x
            remaining = 0.0
            break
        for k in met:
            alloc[k] = wants[k].demand
            remaining -= wants[k].demand * wants[k].cost
            open_.remove(k)
    order = sorted(wants, key=lambda k: (CLASSES.index(k[0]) if k[0] in CLASSES else 99, k[1]))
    for k in order:  # borrowing: what is left goes, in class order, to work that is left
        want = wants[k]
        if remaining <= 1e-12 or want.cost <= 0:
            break
        more = min(want.demand - alloc[k], remaining / want.cost)
        if more > 0:
            alloc[k] += more
            remaining -= more * want.cost
    return alloc


def requests(alloc: dict[Key, float], wants: dict[Key, Want], klass: str | None = None) -> float:
    return sum(n * wants[k].cost for k, n in alloc.items() if klass is None or k[0] == klass)


def fill_capped(capacity: float, active_cap: float, wants: dict[Key, Want]) -> dict[Key, float]:
    """`fill`, then the active class held to `active_cap` requests per hour and the rest of
    the capacity filled again among the other classes."""
    alloc = fill(capacity, wants)
    active = requests(alloc, wants, "active")
    if active <= active_cap * (1 + 1e-12) or math.isinf(active_cap):
        return alloc
    scale = active_cap / active
    fixed = {k: n * scale for k, n in alloc.items() if k[0] == "active"}
    others = {k: w for k, w in wants.items() if k[0] != "active"}
    return {**fill(capacity - active_cap, others), **fixed}
