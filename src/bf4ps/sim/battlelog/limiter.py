"""Per-source-IP rate limiting as Battlelog would do it, plus fleet-window accounting.

Every arrival counts (throttled ones too: they crossed the wire). An arrival earlier than the
configured limit allows (minimum spacing after the IP's previous arrival, or an N+1-th arrival
within the rolling window), minus `tolerance`, is a VIOLATION: it is answered throttled and
starts (or extends) the IP's penalty cool-down. Arrivals inside a cool-down that are not early
themselves are answered throttled too but counted as "penalty", not as violations.

The fleet budget (at most N arrivals across all IPs in any rolling window) is the operator's own
cap, not a Battlelog limit: arrivals beyond it are counted as fleet violations and still served.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass, field

from bf4ps.sim.battlelog.config import SimConfig


class Window:
    """Arrival times (monotonic seconds, non-decreasing) of one rolling window."""

    def __init__(self) -> None:
        self._times: list[float] = []
        self._head = 0

    def __len__(self) -> int:
        return len(self._times) - self._head

    def add(self, at: float) -> None:
        self._times.append(at)

    def prune(self, older_than: float) -> None:
        """Forget arrivals at or before `older_than`."""
        self._head = bisect_right(self._times, older_than, lo=self._head)
        if self._head > 4096 and self._head * 2 > len(self._times):
            del self._times[: self._head]
            self._head = 0

    def count_after(self, at: float) -> int:
        return len(self._times) - bisect_right(self._times, at, lo=self._head)

    def nth_latest(self, n: int) -> float:
        return self._times[-n]


@dataclass(frozen=True, slots=True)
class Violation:
    rule: str  # "interval" | "window"
    early_by: float  # seconds


@dataclass(frozen=True, slots=True)
class Verdict:
    violation: Violation | None
    penalised: bool  # answered throttled because of an earlier violation's cool-down
    fleet_violation: bool
    spacing: float | None  # seconds since this IP's previous arrival

    @property
    def throttled(self) -> bool:
        return self.violation is not None or self.penalised


@dataclass(slots=True)
class _IpState:
    last: float | None = None
    recent: Window = field(default_factory=Window)
    penalty_until: float = -math.inf


class RateLimiter:
    def __init__(self, config: SimConfig) -> None:
        self._config = config
        self._ips: dict[str, _IpState] = {}
        self._fleet = Window()
        self.fleet_max_in_window = 0
        self.fleet_violations = 0

    def reset(self) -> None:
        self._ips.clear()
        self._fleet = Window()
        self.fleet_max_in_window = 0
        self.fleet_violations = 0

    def check(self, ip: str, now: float) -> Verdict:
        """Account one arrival of `ip` at monotonic time `now` and judge it."""
        cfg = self._config
        state = self._ips.setdefault(ip, _IpState())
        spacing = None if state.last is None else now - state.last
        violation = self._violation(state, now)
        state.last = now
        state.recent.add(now)
        enforce = cfg.throttle_status != "none"
        if violation is not None and enforce:
            state.penalty_until = max(state.penalty_until, now + cfg.penalty)
        penalised = violation is None and enforce and now < state.penalty_until
        return Verdict(violation, penalised, self._fleet_check(now), spacing)

    def _violation(self, state: _IpState, now: float) -> Violation | None:
        cfg = self._config
        early, rule = 0.0, ""
        if cfg.min_interval > 0 and state.last is not None:
            allowed = state.last + cfg.min_interval
            if now < allowed - cfg.tolerance:
                early, rule = allowed - now, "interval"
        state.recent.prune(now - cfg.window_seconds + cfg.tolerance)
        limit = cfg.window_requests
        if limit is not None and len(state.recent) >= limit:
            window_early = state.recent.nth_latest(limit) + cfg.window_seconds - now
            if window_early > early:
                early, rule = window_early, "window"
        return Violation(rule, early) if rule else None

    def _fleet_check(self, now: float) -> bool:
        cfg = self._config
        self._fleet.prune(now - cfg.fleet_window)
        recent = self._fleet.count_after(now - cfg.fleet_window + cfg.tolerance)
        self._fleet.add(now)
        self.fleet_max_in_window = max(self.fleet_max_in_window, len(self._fleet))
        violated = cfg.fleet_budget is not None and recent >= cfg.fleet_budget
        if violated:
            self.fleet_violations += 1
        return violated

    def fleet_in_window(self, now: float) -> int:
        self._fleet.prune(now - self._config.fleet_window)
        return len(self._fleet)
