"""Capped exponential retry delays with jitter; the steps come from the policy table."""

from __future__ import annotations

import random

from bf4ps.domain import ErrorClass, Lane
from bf4ps.policy import Policy


def retry_delay(
    failures: int, error: ErrorClass, lane: Lane, policy: Policy, rng: random.Random | None = None
) -> float:
    """Seconds until the next attempt after `failures` consecutive failures (≥ 1)."""
    if error is ErrorClass.THROTTLE:
        base = policy.backoff_throttle_seconds
    else:
        steps = policy.backoff_steps(lane)
        base = steps[min(max(failures, 1), len(steps)) - 1] if steps else 0.0
    jitter = policy.backoff_jitter
    if jitter == 0 or base == 0:
        return base
    r = (rng or random).uniform(-jitter, jitter)
    return max(0.0, base * (1 + r))


def is_terminal(failures: int, error: ErrorClass, policy: Policy, *,
                lookup: bool = False) -> bool:
    """Not-found is terminal at once; a parking class (ErrorClass.parks) after too many
    consecutive failures; every other class never: it says nothing about the soldier. A
    look-up (no soldier, nothing to park) gives up after too many failures of the classes of
    ErrorClass.gives_up_lookup."""
    if not error.retryable:
        return True
    if not (error.gives_up_lookup if lookup else error.parks):
        return False
    return failures >= policy.max_consecutive_failures
