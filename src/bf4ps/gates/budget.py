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

BACKGROUND_CLASSES = ("active", "recent", "bootstrap", "retry")
CLASSES = ("interactive", *BACKGROUND_CLASSES)


@dataclass(frozen=True)
class Window:
    used: dict[str, int]
    last_slot: datetime | None

    @property
    def total(self) -> int:
        return sum(self.used.values())


def allowed_classes(n: int, window: Window, demand: set[str], policy: Policy, *,
                    interactive_lane: bool = False) -> list[str]:
    """Classes a collector may take the next request for without breaking a cap or another
    class's reserved floor (floors count only for classes with runnable work; `demand` holds
    the classes with runnable work in any lane). The interactive lane (a player's requests,
    their retries included) waits for no floor; the background lane holds no interactive work."""
    if window.total >= n:
        return []
    if interactive_lane:
        return list(CLASSES)
    floors = {"interactive": policy.budget_floor_interactive,
              "bootstrap": policy.budget_floor_bootstrap, "retry": policy.budget_floor_retry}
    reserve = {c: max(0.0, f * n - window.used.get(c, 0)) if c in demand else 0.0
               for c, f in floors.items()}
    left_after = n - window.total - 1
    allowed = []
    for cls in BACKGROUND_CLASSES:
        if cls == "active" and window.used.get("active", 0) >= policy.budget_cap_active * n:
            continue
        others = sum(v for c, v in reserve.items() if c != cls)
        if left_after >= others - 1e-9:
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
