"""The feeder's rules, shared by the scheduler (scheduler/mix.py, feeder.py) and the model:
each pass splits its whole deficit between the classes by their shares, largest remainder
first; a resource joins the bootstrap mix once detailed's attempted share reaches its
watermark, and joined resources share by weight."""

from __future__ import annotations

import math

from bf4ps.policy import Policy

FEED_CLASSES = ("active", "recent", "bootstrap", "retry")  # the feeder's order (borrowing)
SMALL_PASS = 200  # jobs a feeder pass: beyond this the rounding is below half a percent


def largest_remainder(total: int, weights: dict[str, float],
                      fewest: dict[str, int] | None = None) -> dict[str, int]:
    """Largest-remainder split of `total` by weights (keys with weight 0 get nothing). Equal
    remainders go first to the keys with the `fewest` (jobs already queued), then in order:
    without that, a feeder topping up one or two jobs a tick (a small fleet) would give every
    unit to the first keys, and the last resources none at all."""
    positive = {k: w for k, w in weights.items() if w > 0}
    if total <= 0 or not positive:
        return dict.fromkeys(weights, 0)
    scale = sum(positive.values())
    exact = {k: total * w / scale for k, w in positive.items()}
    out = {k: int(v) for k, v in exact.items()}
    rest = total - sum(out.values())
    have = fewest or {}
    for k in sorted(exact, key=lambda k: (-(exact[k] - out[k]), have.get(k, 0)))[:rest]:
        out[k] += 1
    return {k: out.get(k, 0) for k in weights}


def class_shares(policy: Policy) -> dict[str, float]:
    return {"active": policy.share_active, "recent": policy.share_recent,
            "bootstrap": policy.share_bootstrap, "retry": policy.share_retry}


def class_quota(deficit: int, policy: Policy) -> dict[str, int]:
    return largest_remainder(deficit, class_shares(policy))


def deficits(per_tick: list[float]) -> dict[int, float]:
    """How many jobs leave the working set in one feeder pass (its deficit), as a
    distribution: each sender (an egress) finishes its paced requests regularly, so within a
    pass it finishes the whole number below or above its mean (by the mean's fraction), and
    the senders are independent of each other."""
    dist = {0: 1.0}
    for mean in per_tick:
        low, part = math.floor(mean), mean - math.floor(mean)
        step: dict[int, float] = {}
        for d, p in dist.items():
            for n, q in ((low, 1 - part), (low + 1, part)):
                if q > 0:
                    step[d + n] = step.get(d + n, 0.0) + p * q
        dist = step
    return dist


def fed_shares(policy: Policy, per_tick: list[float]) -> dict[str, float]:
    """Each class's share of the jobs fed while every class has more work than its quota,
    with `per_tick` jobs leaving the working set per feeder pass from each sender. Each pass
    splits its whole deficit by largest remainder, so a deficit of a few jobs gives a small
    share's fraction to the larger ones (with 3 a pass the bootstrap's 15 % gets nothing):
    the share is the mean quota over the deficits' distribution, per job. Many jobs a pass:
    the configured shares."""
    mean = sum(per_tick)
    shares = class_shares(policy)
    if mean <= 0 or mean > SMALL_PASS or sum(shares.values()) <= 0:
        total = sum(shares.values())
        return {c: (v / total if total > 0 else 0.0) for c, v in shares.items()}
    fed = dict.fromkeys(FEED_CLASSES, 0.0)
    for d, p in deficits(per_tick).items():
        for c, n in class_quota(d, policy).items():
            fed[c] += p * n
    return {c: n / mean for c, n in fed.items()}


def joined_weights(policy: Policy, attempted_detailed: float) -> dict[str, float]:
    weights = {"detailed": policy.weight_detailed}
    for resource in ("profile", "weapons", "vehicles"):
        if attempted_detailed >= float(getattr(policy, f"watermark_{resource}")):
            weights[resource] = float(getattr(policy, f"weight_{resource}"))
    return weights
