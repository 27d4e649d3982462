"""Shares (pure arithmetic): how a deficit splits across classes, and across resources inside
a class by the progressive bootstrap mix (a resource joins once detailed coverage reaches its
watermark; joined resources share by weight; phase advance never needs 100 % success)."""

from __future__ import annotations

from bf4ps.capacity.rules import joined_weights
from bf4ps.domain import Resource
from bf4ps.policy import Policy

FEED_CLASSES = ("active", "recent", "bootstrap", "retry")


def _split(total: int, weights: dict[str, float],
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


def class_quota(deficit: int, policy: Policy) -> dict[str, int]:
    return _split(deficit, {"active": policy.share_active, "recent": policy.share_recent,
                            "bootstrap": policy.share_bootstrap, "retry": policy.share_retry})


def attempted_share(coverage: dict[str, dict[str, int]], resource: str = "detailed") -> float:
    counts = coverage.get(resource, {})
    total = sum(counts.values())
    if total == 0:
        return 0.0
    return 1 - counts.get("never_attempted", 0) / total


def joined(policy: Policy, coverage: dict[str, dict[str, int]]) -> dict[str, float]:
    """Resource weights of the bootstrap mix, for the resources that have joined."""
    return joined_weights(policy, attempted_share(coverage))


def resource_quota(activity: str, n: int, policy: Policy,
                   coverage: dict[str, dict[str, int]],
                   queued: dict[str, int] | None = None) -> dict[str, int]:
    """Active soldiers bypass the bootstrap progression: every resource, equal shares.
    `queued`: the class's jobs per resource in the queue now (ties go to the fewest)."""
    if activity == "active":
        return _split(n, {r.value: 1.0 for r in Resource}, queued)
    return _split(n, joined(policy, coverage), queued)
