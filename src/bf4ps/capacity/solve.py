"""Suggestions solved from the model, at any scale: the shortest refresh interval that fits
(detailed alone first, then every interval scaled together), the budget that would fit, and
the egress count that would, each only where it is what binds."""

from __future__ import annotations

import math
from collections.abc import Callable

from bf4ps.capacity.demand import demand, freshness
from bf4ps.capacity.gates import capacity, per_egress
from bf4ps.capacity.inputs import DAY, HOUR, RESOURCES, Inputs
from bf4ps.policy import Policy

LONGEST = 3650 * DAY
_MIN = 60.0
NICE = sorted({*(5.0 * k for k in range(1, 12)),
               *(_MIN * m for m in (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 30, 40, 45)),
               *(HOUR * h for h in (1, 1.5, 2, 3, 4, 5, 6, 8, 10, 12, 15, 18, 20, 24, 30, 36,
                                    42, 48, 60, 72, 84, 96, 120, 144)),
               *(DAY * d for d in (7, 8, 9, 10, 12, 14, 18, 21, 24, 28, 35, 42, 49, 56, 63, 70,
                                   84, 91, 112, 140, 182, 273, 365, 730, 1095, 1825, 3650))})


def totals(inputs: Inputs, pol: Policy) -> tuple[float, float]:
    """(all steady demand, its active part) in requests per hour."""
    lines = demand(inputs, pol)
    return (sum(d.requests_per_hour for d in lines),
            sum(d.requests_per_hour for d in lines if d.klass == "active"))


def fits(inputs: Inputs, pol: Policy, budget: float | None = None) -> bool:
    cap = capacity(inputs, budget)
    total, active = totals(inputs, pol)
    return total <= cap.per_hour * (1 + 1e-9) and active <= cap.active_cap_per_hour * (1 + 1e-9)


def nice(seconds: float) -> float:
    """The first round interval at or above `seconds`."""
    for v in NICE:
        if v >= seconds - 1e-9:
            return v
    return math.ceil(seconds / DAY) * DAY


def _solve(ok: Callable[[float], bool], lo: float, hi: float) -> float | None:
    """The least x in [lo, hi] with ok(x), for ok monotone in x (bisection in log space)."""
    if not ok(hi):
        return None
    if ok(lo):
        return lo
    a, b = math.log(lo), math.log(hi)
    for _ in range(60):
        mid = (a + b) / 2
        if ok(math.exp(mid)):
            b = mid
        else:
            a = mid
    return math.exp(b)


def interval(inputs: Inputs) -> dict[str, float]:
    """The intervals that fit today's capacity, rounded up: {} when it fits already or when
    no interval up to ten years does (the new soldiers' first collections fill it)."""
    pol = inputs.policy
    if fits(inputs, pol):
        return {}
    det = freshness(pol, "detailed")

    def with_detailed(f: float) -> Policy:
        return pol.model_copy(update={"freshness_detailed_seconds": f})

    found = _solve(lambda f: fits(inputs, with_detailed(f)), det, max(LONGEST, det))
    if found is not None:
        chosen = next((v for v in NICE if v >= found - 1e-9 and fits(inputs, with_detailed(v))),
                      found)
        return {"freshness_detailed_seconds": chosen}
    base = {r: freshness(pol, r) for r in RESOURCES}

    def scaled(k: float) -> Policy:
        return pol.model_copy(update={f"freshness_{r}_seconds": max(base[r], min(
            LONGEST, base[r] * k)) for r in RESOURCES})

    k = _solve(lambda k: fits(inputs, scaled(k)), 1.0, LONGEST / min(base.values()))
    if k is None:
        return {}
    changes = {f"freshness_{r}_seconds": nice(base[r] * k) for r in RESOURCES}
    return {key: v for key, v in changes.items() if v != getattr(pol, key)}


def budget_needed(inputs: Inputs) -> float | None:
    """The budget (requests per hour) the policy needs; None when a budget cannot make it fit
    (the egresses, or the collectors' send rate, bind below the demand)."""
    total, active = totals(inputs, inputs.policy)
    need = max(total, active / max(inputs.policy.budget_cap_active, 1e-9))
    return need if fits(inputs, inputs.policy, need) else None


def egresses_needed(inputs: Inputs) -> int | None:
    """Egresses at the serving ones' rate the demand needs; None when egresses do not help
    (the budget binds below the demand)."""
    total, _ = totals(inputs, inputs.policy)
    cap = capacity(inputs)
    if cap.budget_per_hour is not None and cap.budget_per_hour < total:
        return None
    each = per_egress(inputs)
    return max(1, math.ceil(total / each * (1 - 1e-12))) if each > 0 else None
