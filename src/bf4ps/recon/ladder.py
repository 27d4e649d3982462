"""The reconnaissance plan, pure: the rate ladder's stages, what counts as a throttle sign, the
figures of a set of samples and the recommended pacing (docs/battlelog.md, "Reconnaissance").

The ladder multiplies a conservative interval by ``step`` (< 1) stage by stage, never below the
hard ``floor``, and stops at the first throttle sign (a 403/429 or throttle message, a soft
throttle, or a stage's median latency above ``latency_jump`` times the survey's). A stage's
rate is what it sent: the median spacing of its requests' send instants, short of its target
(interval plus egress margin) by more than ``PACE_TOLERANCE`` is reported. The recommendation
is the fastest clean spacing times ``safety``; a back-off stage of ``verify_requests`` requests
at that spacing verifies it (catching a rolling-window limit the ladder's short stages cannot
show), one step slower each time it is not clean.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from bf4ps.domain import ErrorClass


class PlanError(ValueError):
    """Recon options that cannot make a ladder."""


@dataclass(frozen=True, slots=True)
class Plan:
    start_interval: float = 10.0
    floor: float = 2.0
    step: float = 0.9
    stage_requests: int = 6
    safety: float = 1.1
    latency_jump: float = 3.0
    backoff_pause: float = 120.0
    backoff_tries: int = 3
    verify_requests: int = 12

    def __post_init__(self) -> None:
        if not 0 < self.floor <= self.start_interval:
            raise PlanError("need 0 < floor <= start interval")
        if not 0 < self.step < 1:
            raise PlanError("step must be within (0, 1)")
        if self.stage_requests < 2 or self.verify_requests < 2:
            raise PlanError("a stage (and a back-off stage) needs at least 2 requests")
        if self.safety < 1:
            raise PlanError("the safety factor must be >= 1")
        if self.latency_jump <= 1 or self.backoff_pause < 0 or self.backoff_tries < 1:
            raise PlanError("need latency jump > 1, back-off pause >= 0, tries >= 1")

    def stages(self) -> Iterator[float]:
        """The ladder's intervals, slowest first; the floor's stage is the last."""
        interval = self.start_interval
        while interval > self.floor * (1 + 1e-9):
            yield round(interval, 4)
            interval *= self.step
        yield self.floor


@dataclass(frozen=True, slots=True)
class Sample:
    """One request recon sent: what came back (never the body)."""

    phase: str  # survey | ladder | backoff
    stage: int | None
    interval: float | None
    resource: str
    persona_id: int
    platform: str
    sent_at: float  # epoch seconds
    http_status: int | None
    error_class: str | None
    message: str
    wire_bytes: int
    decoded_bytes: int
    latency_seconds: float
    soft_throttle: bool = False

    @property
    def ok(self) -> bool:
        return self.error_class is None

    @property
    def throttled(self) -> bool:
        return self.error_class == ErrorClass.THROTTLE.value or self.soft_throttle


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """The nearest-rank percentile (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True, slots=True)
class Figures:
    requests: int
    ok: int
    latency_p50: float | None
    latency_p95: float | None
    wire_bytes_p50: float | None
    decoded_bytes_p50: float | None
    failures: dict[str, int] = field(default_factory=dict)


def figures(samples: Sequence[Sample]) -> Figures:
    good = [s for s in samples if s.ok]
    failures: dict[str, int] = {}
    for s in samples:
        if not s.ok:
            key = "soft_throttle" if s.soft_throttle else str(s.error_class)
            failures[key] = failures.get(key, 0) + 1
    return Figures(
        requests=len(samples), ok=len(good),
        latency_p50=percentile([s.latency_seconds for s in samples], 0.5),
        latency_p95=percentile([s.latency_seconds for s in samples], 0.95),
        wire_bytes_p50=percentile([float(s.wire_bytes) for s in good], 0.5),
        decoded_bytes_p50=percentile([float(s.decoded_bytes) for s in good], 0.5),
        failures=failures)


def throttle_sign(stage: Sequence[Sample], baseline_p50: float | None, plan: Plan) -> str | None:
    """Why this stage shows throttling, or None when it is clean."""
    hard = [s for s in stage if s.error_class == ErrorClass.THROTTLE.value]
    if hard:
        return f"throttle ({hard[0].http_status or 'message'}: {hard[0].message[:60]})"
    soft = [s for s in stage if s.soft_throttle]
    if soft:
        return f"soft throttle ({soft[0].message[:60]})"
    p50 = percentile([s.latency_seconds for s in stage], 0.5)
    if baseline_p50 and p50 is not None and p50 > plan.latency_jump * baseline_p50:
        return f"latency jump (median {p50:.3f} s, survey {baseline_p50:.3f} s)"
    return None


PACE_TOLERANCE = 0.1  # a stage's measured spacing this far above its target missed its pace


@dataclass(frozen=True, slots=True)
class Pace:
    """What a stage asked for and what it sent: its target spacing (the gate's interval plus
    the egress margin) and the measured spacing of its send instants."""

    target: float
    p50: float | None
    fastest: float | None
    mean: float | None  # the stage's span over its gaps: what a rolling window judges

    @property
    def reached(self) -> bool:
        return self.p50 is not None and self.p50 <= self.target * (1 + PACE_TOLERANCE)

    def note(self) -> str | None:
        """Why the stage did not reach its target pace, or None when it did."""
        if self.reached:
            return None
        sent = "no two requests" if self.p50 is None else f"{self.p50:.3f} s"
        return f"could not reach its target pace: sent {sent} apart, wanted {self.target:.3f} s"


@dataclass(frozen=True, slots=True)
class StageRow:
    """One stage of the ladder or of the back-off: what it asked for, sent and met."""

    stage: int
    interval_seconds: float
    requests: int
    ok: int
    latency_p50: float | None
    latency_p95: float | None
    target_spacing: float
    spacing_p50: float | None
    spacing_min: float | None
    pace_reached: bool
    pace_note: str | None
    failures: dict[str, int]
    sign: str | None


@dataclass(frozen=True, slots=True)
class Climb:
    """The ladder: its stages, the fastest clean spacing, and what stopped it."""

    stages: list[StageRow]
    threshold: float | None
    stopped_by: str
    signed: bool


@dataclass(frozen=True, slots=True)
class BackOff:
    recommended: float
    checks: list[StageRow]
    verified: bool


@dataclass(frozen=True, slots=True)
class Report:
    """The run's report (`asdict` is its JSON: the summary stored and `--json` printed)."""

    run_id: int
    egress: str
    plan: Plan
    personas: list[tuple[int, str]]
    survey: dict[str, Figures]
    margin_seconds: float
    connect_lead_seconds: float
    ladder: list[StageRow]
    stopped_by: str
    threshold_interval_seconds: float | None
    stages_short_of_pace: list[int]
    backoff: list[StageRow]
    verified: bool
    recommended_interval_seconds: float
    safety_factor: float
    requests: int


def pace(samples: Sequence[Sample], interval: float, margin: float) -> Pace:
    """The measured spacing of a stage (its samples in the order they were sent)."""
    gaps = [b.sent_at - a.sent_at for a, b in pairwise(samples)]
    mean = sum(gaps) / len(gaps) if gaps else None
    return Pace(round(interval + margin, 4), percentile(gaps, 0.5), min(gaps, default=None),
                mean)


def recommend(spacing: float, plan: Plan) -> float:
    """The recommended pacing for the fastest clean spacing measured: never below it."""
    return round_up(spacing * plan.safety)


def verified(recommended: float, check: Pace) -> float:
    """The recommendation a clean back-off stage proved: never faster than that stage really
    sent (a stage slowed by late sends proved only its own, slower, spacing)."""
    return max(recommended, round_up(check.mean)) if check.mean is not None else recommended


JITTER = 0.01  # a send's ordinary lateness on a working host (a few ms a send): 1 % of spacing


def proved(recommended: float, check: Pace) -> bool:
    """Whether a clean back-off stage proved the recommendation: it was sent that fast on the
    wire but for a working host's ordinary lateness (within 1 %; `verified` then keeps the
    spacing really sent), not slower (a host that stalled during the stage is tried again)."""
    return (check.mean is not None
            and check.mean <= recommended * (1 + JITTER) + 1e-4)  # round_up's step


def round_up(seconds: float) -> float:
    return math.ceil(round(seconds * 10_000, 6)) / 10_000


def slower(interval: float, plan: Plan) -> float:
    """One ladder step slower."""
    return round(interval / plan.step, 4)
