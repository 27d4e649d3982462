"""Shares (pure arithmetic): how a deficit splits across classes, and across resources inside
a class by the progressive bootstrap mix (a resource joins once detailed coverage reaches its
watermark; joined resources share by weight; phase advance never needs 100 % success)."""

from __future__ import annotations

from bf4ps.capacity.rules import FEED_CLASSES, class_quota, joined_weights, largest_remainder
from bf4ps.domain import Resource
from bf4ps.policy import Policy

__all__ = ["FEED_CLASSES", "attempted_share", "class_quota", "joined", "resource_quota"]


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
        return largest_remainder(n, {r.value: 1.0 for r in Resource}, queued)
    return largest_remainder(n, joined(policy, coverage), queued)
