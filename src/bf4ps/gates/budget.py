"""Fleet budget arithmetic (pure): which classes may take the next request, and the earliest
slot that keeps every rolling window within N requests.

Soundness: a slot s is accepted on the fast path only when fewer than N ledger slots lie in
(s − W − margin, now + H], where H bounds how far ahead any slot was ever reserved; then every
window containing s (widened by the margin a late send may add) holds at most N slots.
Otherwise s is placed after every existing slot and after the N-th latest + W + margin, so that
windows containing s see fewer than N earlier slots.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from bf4ps.policy import Policy

CLASSES = ("interactive", "active", "recent", "bootstrap", "retry")


@dataclass(frozen=True)
class Window:
    used: dict[str, int]
    last_slot: datetime | None

    @property
    def total(self) -> int:
        return sum(self.used.values())


def allowed_classes(n: int, window: Window, demand: set[str], policy: Policy) -> list[str]:
    """Classes that may take the next request without breaking a cap or another class's
    reserved floor (floors count only for classes with runnable work)."""
    if window.total >= n:
        return []
    floors = {"bootstrap": policy.budget_floor_bootstrap, "retry": policy.budget_floor_retry}
    reserve = {c: max(0.0, f * n - window.used.get(c, 0)) if c in demand else 0.0
               for c, f in floors.items()}
    left_after = n - window.total - 1
    allowed = []
    for cls in CLASSES:
        if cls == "active" and window.used.get("active", 0) >= policy.budget_cap_active * n:
            continue
        others = sum(v for c, v in reserve.items() if c != cls)
        if cls == "interactive" or left_after >= others - 1e-9:
            allowed.append(cls)
    return allowed


def earliest_slot(candidate: datetime, *, n: int, window_seconds: float, in_window: int,
                  last_slot: datetime | None, nth_latest: datetime | None,
                  margin: float) -> datetime:
    """The earliest slot ≥ candidate keeping every rolling window within n requests.
    `in_window`: ledger slots in (candidate − W, now + H]; `nth_latest`: the n-th latest slot."""
    if in_window < n:
        return candidate
    slot = candidate
    if last_slot is not None:
        slot = max(slot, last_slot + timedelta(microseconds=1))
    if nth_latest is not None:
        slot = max(slot, nth_latest + timedelta(seconds=window_seconds + margin))
    return slot
