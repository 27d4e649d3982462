"""The model's typed inputs. Every measured value is a `Figure`: a value with where it came
from (a measured window, or a documented default for a fleet that has not measured it yet).
The loader that reads them from the fleet's tables is views/forecast_inputs.py."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from datetime import datetime

from bf4ps.policy import Policy

RESOURCES = ("detailed", "profile", "weapons", "vehicles")
CLASSES = ("active", "recent", "bootstrap", "retry")  # the feeder's classes, its order
HOUR = 3600.0
DAY = 86_400.0
# The documented census's play sessions (docs/operations.md "Capacity planning"), where the
# fleet has not measured its own: one a day per soldier seen within 24 h (24,897: 1,037 ending
# an hour) and 3,939 seen within the last hour, i.e. the ones ending within it plus the ones on
# a server, 1,037 x (1 h + mean length): a mean of 2.8 h; lengths taken as exponential.
SESSION_MEAN_SECONDS = (3_939 / (24_897 / 24) - 1) * HOUR
SESSION_SHAPE = "default: exponential session lengths, mean 2.8 h (the census)"


@dataclass(frozen=True)
class Figure:
    """One input: its value and where it came from."""

    value: float
    source: str  # "measured: ...", "configured: ..." or "default: ..."

    @property
    def measured(self) -> bool:
        return not self.source.startswith("default")


@dataclass(frozen=True)
class ResourceCost:
    requests_per_attempt: Figure
    success_share: Figure
    duration_seconds: Figure

    @property
    def requests_per_collection(self) -> float:
        return self.requests_per_attempt.value / max(self.success_share.value, 0.01)

    @property
    def ok(self) -> float:
        return min(1.0, max(self.success_share.value, 0.01))


@dataclass(frozen=True)
class Egress:
    key: str
    min_interval_seconds: float
    serving: int  # background collectors serving behind it


@dataclass(frozen=True)
class Population:
    total: Figure
    active: Figure  # seen within the policy's active window
    seen: dict[float, Figure]  # period seconds -> soldiers seen within it
    new_per_day: Figure
    sessions_per_hour: Figure = Figure(0.0, "default: not measured (no play sessions yet)")
    # sessions ending an hour with at least this much play (seconds -> Figure), measured at the
    # policy's minimums; a minimum not measured follows the documented shape
    sessions_with_play: dict[float, Figure] = field(default_factory=dict)

    def sessions_lasting(self, seconds: float) -> Figure:
        """Sessions ending an hour with at least `seconds` of play: measured, or the share of
        `sessions_per_hour` the documented shape gives (SESSION_MEAN_SECONDS)."""
        if seconds in self.sessions_with_play:
            return self.sessions_with_play[seconds]
        if seconds <= 0:
            return self.sessions_per_hour
        return Figure(self.sessions_per_hour.value * math.exp(-seconds / SESSION_MEAN_SECONDS),
                      SESSION_SHAPE)

    def seen_within(self, seconds: float) -> float:
        """Soldiers seen within `seconds`: linear in log time between the measured points,
        extended past the last two the same way, never above the total."""
        points = sorted((k, v.value) for k, v in self.seen.items())
        total = self.total.value
        if not points:
            return min(total, self.active.value)
        if seconds <= points[0][0]:
            return points[0][1] * seconds / points[0][0]
        for (t0, n0), (t1, n1) in itertools.pairwise(points):
            if seconds <= t1:
                return min(total, n0 + (n1 - n0) * math.log(seconds / t0) / math.log(t1 / t0))
        if len(points) < 2:
            return min(total, points[-1][1])
        (t0, n0), (t1, n1) = points[-2], points[-1]
        return min(total, n1 + (n1 - n0) * math.log(seconds / t1) / math.log(t1 / t0))


@dataclass(frozen=True)
class Queued:
    """The jobs of one class in the working set when the forecast is taken (pending, claimed
    or running) and the rank of its first pending one, in seconds from now (negative: already
    passed); `ranks`: the ranks of its pending first attempts (never-attempted work), in
    seconds from now, lowest first."""

    klass: str
    jobs: int
    first: float = 0.0
    ranks: tuple[float, ...] = ()


@dataclass(frozen=True)
class Inputs:
    now: datetime
    window_seconds: float
    policy: Policy
    costs: dict[str, ResourceCost]
    egresses: tuple[Egress, ...]
    egress_source: str
    budget_per_hour: Figure | None  # None: no fleet budget (pacing bounds)
    population: Population
    coverage: dict[str, dict[str, int]]  # resource -> status -> n
    bootstrap_rate: dict[str, Figure]  # first collections per hour per resource (measured)
    fleet_rate: Figure | None  # background requests per hour sent (measured)
    interactive_per_hour: Figure
    missing: tuple[str, ...] = ()
    # never-attempted work per activity class and resource (the feeder's classes); empty:
    # every never-attempted resource of `coverage` counts as the bootstrap class's
    backlog: dict[str, dict[str, int]] = field(default_factory=dict)
    # the fleet had eligible work waiting over the whole window: its measured send rate is
    # what it can send, not what it was asked for
    saturated: bool = False
    sweep_seconds: float = 60.0  # the scheduler's due sweep (refresh work waits up to this)
    tick_seconds: float = 2.0  # the feeder's period
    idle_poll_seconds: float = 2.0  # an idle collector looks for work this often
    # the working set at `now`, per class (empty: nothing queued)
    queued: tuple[Queued, ...] = ()
    connect_lead_seconds: float = 0.0  # a collector's slot is at least this after its claim
    # the feeder's passes as the queue shows them (a pass takes its work's time on top of the
    # tick's sleep): a low quantile of the gaps between consecutive pass times (ranks) of each
    # class's pending jobs; None: not seen, the tick
    pass_seconds: float | None = None
    margin_seconds: float = 0.0  # the gate moves past a slot by its interval plus this

    @property
    def pass_period(self) -> float:
        """Seconds from one feeder pass to the next: the measured period, never below the
        tick (the scheduler sleeps a tick between passes)."""
        return max(self.tick_seconds, self.pass_seconds or 0.0)

    def never_attempted(self) -> dict[str, dict[str, float]]:
        """Never-attempted work per feeder class and resource."""
        if self.backlog:
            return {c: {r: float(self.backlog.get(c, {}).get(r, 0)) for r in RESOURCES}
                    for c in ("active", "recent", "bootstrap")}
        left = {r: float(self.coverage.get(r, {}).get("never_attempted", 0)) for r in RESOURCES}
        return {"active": dict.fromkeys(RESOURCES, 0.0), "recent": dict.fromkeys(RESOURCES, 0.0),
                "bootstrap": left}

    def total(self, resource: str) -> float:
        return float(sum(self.coverage.get(resource, {}).values()))
