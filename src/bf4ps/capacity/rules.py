"""The feeder's resource-mix rule, shared by the scheduler (scheduler/mix.py) and the model:
a resource joins the bootstrap mix once detailed's attempted share reaches its watermark;
joined resources share by weight."""

from __future__ import annotations

from bf4ps.policy import Policy


def joined_weights(policy: Policy, attempted_detailed: float) -> dict[str, float]:
    weights = {"detailed": policy.weight_detailed}
    for resource in ("profile", "weapons", "vehicles"):
        if attempted_detailed >= float(getattr(policy, f"watermark_{resource}")):
            weights[resource] = float(getattr(policy, f"weight_{resource}"))
    return weights
