"""The claim order inside a lane: a job's rank is when it entered the queue, pushed later by its
class's aging offset. Ordering by rank gives FIFO inside a class and class preference between
classes, yet a bootstrap job queued at t outranks every active job queued after
t + aging_bootstrap_seconds: its wait behind higher classes is bounded by the offset."""

from __future__ import annotations

from datetime import datetime, timedelta

from bf4ps.domain import PriorityClass
from bf4ps.policy import Policy

CLASS_ORDER = {
    PriorityClass.INTERACTIVE: 0,
    PriorityClass.ACTIVE: 1,
    PriorityClass.RECENT: 2,
    PriorityClass.BOOTSTRAP: 3,
}


def rank(eligible_since: datetime, klass: PriorityClass, policy: Policy) -> datetime:
    return eligible_since + timedelta(seconds=policy.aging(klass))


def outranks(a: PriorityClass, b: PriorityClass) -> bool:
    """True when class a is strictly higher than class b."""
    return CLASS_ORDER[a] < CLASS_ORDER[b]
