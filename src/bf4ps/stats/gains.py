"""Progress between snapshots: the arithmetic of gains, pure functions over typed snapshots.

A gain exists only between two consecutive *good* snapshots of one resource (a soldier's
detailed stats, or one weapon or vehicle of his): a failed collection is not a snapshot at all,
and a partial one (`ok=False`, or a required counter missing) is skipped, so the next good
snapshot bridges from the last good one. A counter that went down between two good snapshots
(Battlelog reset the soldier's stats) makes a *reset*: the interval carries no gains at all and
is shown as a reset, never as negative numbers. Hence, over any sequence, the gains of the
non-reset intervals plus the drops of the reset intervals sum to the total change. No
database, no clock: the writers (stats/progress_store.py), the checks after storage
(stats/progress_check.py) and the read side (views/progress.py) all use these.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from typing import Any, TypeVar

SOLDIER_COUNTERS = ("kills", "deaths", "score", "seconds", "headshots", "shots_fired",
                    "shots_hit")
SOLDIER_REQUIRED = ("kills", "deaths", "score", "seconds")
ITEM_COUNTERS = ("kills", "headshots", "shots_fired", "shots_hit", "seconds")
ITEM_REQUIRED = ("kills", "seconds")


@dataclass(frozen=True, slots=True)
class SoldierSnapshot:
    """A soldier's detailed counters at one collection. ok=False: a failed or partial one."""

    at: datetime
    kills: int | None
    deaths: int | None
    score: int | None
    seconds: int | None  # time played
    headshots: int | None = None
    shots_fired: int | None = None
    shots_hit: int | None = None
    rank: int | None = None
    ok: bool = True


@dataclass(frozen=True, slots=True)
class ItemSnapshot:
    """One weapon's or vehicle's counters at one collection (vehicles: no shots/headshots)."""

    at: datetime
    kills: int | None
    seconds: int | None
    headshots: int | None = None
    shots_fired: int | None = None
    shots_hit: int | None = None
    stars: int | None = None
    ok: bool = True


def _rate(a: int | None, b: int | None, scale: float = 1.0) -> float | None:
    if a is None or not b:
        return None
    return a / b * scale


class _Rates:
    """The rates of a gain or of gains summed, from the counters its dataclass declares."""

    __slots__ = ()
    kills: int
    seconds: int

    @property
    def kpm(self) -> float | None:
        return _rate(self.kills, self.seconds, 60)


class _ShotRates(_Rates):
    __slots__ = ()
    headshots: int | None
    shots_fired: int | None
    shots_hit: int | None

    @property
    def accuracy_percent(self) -> float | None:
        return _rate(self.shots_hit, self.shots_fired, 100)

    @property
    def headshots_per_kill(self) -> float | None:
        return _rate(self.headshots, self.kills)


class _ScoreRates(_Rates):
    __slots__ = ()
    deaths: int
    score: int

    @property
    def kd(self) -> float | None:
        return _rate(self.kills, self.deaths)

    @property
    def spm(self) -> float | None:
        return _rate(self.score, self.seconds, 60)


def steps_up(before: int | None, after: int | None, reset: bool) -> int:
    """Ranks or service stars gained from one reading to the next (none across a reset)."""
    if before is None or after is None or reset:
        return 0
    return max(0, after - before)


@dataclass(frozen=True, slots=True)
class Gain(_ShotRates):
    """What a soldier, or one weapon or vehicle of his, gained between two good snapshots (the
    columns of an *_intervals row); all zero when `reset`."""

    started_at: datetime
    ended_at: datetime
    kills: int = 0
    seconds: int = 0
    headshots: int | None = None
    shots_fired: int | None = None
    shots_hit: int | None = None
    reset: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SoldierGain(Gain, _ScoreRates):
    """A soldier's gain: with his deaths, score and ranks."""

    deaths: int = 0
    score: int = 0
    rank_from: int | None = None
    rank_to: int | None = None

    @property
    def rank_ups(self) -> int:
        return steps_up(self.rank_from, self.rank_to, self.reset)


@dataclass(frozen=True, slots=True, kw_only=True)
class ItemGain(Gain):
    """One weapon's or vehicle's gain: with its service stars."""

    stars_from: int | None = None
    stars_to: int | None = None

    @property
    def stars(self) -> int:
        return steps_up(self.stars_from, self.stars_to, self.reset)


S = TypeVar("S", SoldierSnapshot, ItemSnapshot)
G = TypeVar("G", SoldierGain, ItemGain)


def good(s: SoldierSnapshot | ItemSnapshot) -> bool:
    """A snapshot gains may start or end at: a collection that succeeded with every required
    counter present."""
    required = SOLDIER_REQUIRED if isinstance(s, SoldierSnapshot) else ITEM_REQUIRED
    return s.ok and all(getattr(s, name) is not None for name in required)


def _deltas(a: S, b: S, names: Sequence[str],
            required: Sequence[str]) -> dict[str, int | None] | None:
    """The counters' differences; None when one went down (a reset)."""
    out: dict[str, int | None] = {}
    for name in names:
        x, y = getattr(a, name), getattr(b, name)
        if x is None or y is None:
            if name in required:
                return None  # cannot happen between good snapshots
            out[name] = None
            continue
        if y < x:
            return None
        out[name] = y - x
    return out


def soldier_gain(a: SoldierSnapshot, b: SoldierSnapshot) -> SoldierGain | None:
    """The gain from good snapshot `a` to the later good snapshot `b`; None when either is not
    good or `b` is not later."""
    return _gain(a, b, SoldierGain, rank_from=a.rank, rank_to=b.rank)


def item_gain(a: ItemSnapshot, b: ItemSnapshot) -> ItemGain | None:
    """As soldier_gain, for one weapon or vehicle."""
    return _gain(a, b, ItemGain, stars_from=a.stars, stars_to=b.stars)


def _gain(a: S, b: S, cls: type[G], **steps: int | None) -> G | None:
    """The gain of `cls` between two snapshots, with `steps` (ranks or stars: kept on a reset)."""
    if not (good(a) and good(b)) or b.at <= a.at:
        return None
    names, required = ((SOLDIER_COUNTERS, SOLDIER_REQUIRED) if isinstance(a, SoldierSnapshot)
                       else (ITEM_COUNTERS, ITEM_REQUIRED))
    d = _deltas(a, b, names, required)
    fields: dict[str, Any] = dict(steps, reset=True) if d is None else dict(
        steps, **{n: (v or 0) if n in required else v for n, v in d.items()})
    return cls(a.at, b.at, **fields)


def _consecutive(snapshots: Iterable[S], gain: Callable[[S, S], G | None]) -> list[G]:
    """The gains between consecutive good snapshots, oldest first (input in any order)."""
    kept = sorted((s for s in snapshots if good(s)), key=lambda s: s.at)
    return [g for a, b in pairwise(kept) if (g := gain(a, b)) is not None]


def soldier_gains(snapshots: Iterable[SoldierSnapshot]) -> list[SoldierGain]:
    return _consecutive(snapshots, soldier_gain)


def item_gains(snapshots: Iterable[ItemSnapshot]) -> list[ItemGain]:
    return _consecutive(snapshots, item_gain)


@dataclass(frozen=True, slots=True)
class Totals(_ShotRates, _ScoreRates):
    """Gains summed over intervals (a 24 h / 7 d / 30 d window, one weapon's or vehicle's
    week): a soldier's deaths, score and ranks, an item's service stars."""

    intervals: int = 0
    resets: int = 0
    kills: int = 0
    deaths: int = 0
    score: int = 0
    seconds: int = 0
    headshots: int | None = None
    shots_fired: int | None = None
    shots_hit: int | None = None
    rank_ups: int = 0
    stars: int = 0


def _plus(a: int | None, b: int | None) -> int | None:
    if b is None:
        return a
    return b if a is None else a + b


def _own(g: Gain) -> tuple[int, int, int, int]:
    """What only one kind of gain counts: a soldier's deaths, score and ranks, an item's stars."""
    if isinstance(g, SoldierGain):
        return g.deaths, g.score, g.rank_ups, 0
    return 0, 0, 0, g.stars if isinstance(g, ItemGain) else 0


def totals(gains: Iterable[Gain]) -> Totals:
    t = Totals()
    for g in gains:
        deaths, score, rank_ups, stars = _own(g)
        t = Totals(intervals=t.intervals + 1, resets=t.resets + g.reset,
                   kills=t.kills + g.kills, deaths=t.deaths + deaths, score=t.score + score,
                   seconds=t.seconds + g.seconds, headshots=_plus(t.headshots, g.headshots),
                   shots_fired=_plus(t.shots_fired, g.shots_fired),
                   shots_hit=_plus(t.shots_hit, g.shots_hit), rank_ups=t.rank_ups + rank_ups,
                   stars=t.stars + stars)
    return t


def smoothed(amount: float, seconds: float, prior_rate: float, prior_minutes: float) -> float:
    """A per-minute rate pulled toward the population's `prior_rate` as if the soldier had also
    played `prior_minutes` at that rate (a Bayesian prior): a short sample stays near the
    average, a long one keeps its own rate."""
    minutes = seconds / 60
    if minutes + prior_minutes <= 0:
        return prior_rate
    return (amount + prior_rate * prior_minutes) / (minutes + prior_minutes)


@dataclass(frozen=True, slots=True)
class Ceilings:
    """What no honest interval exceeds (policy keys progress_ceiling_*): rates are judged only
    over at least `min_seconds` of play, accuracy only at `accuracy_min_shots` shots,
    headshots per kill only at `headshots_min_kills` kills."""

    kpm: float
    spm: float
    accuracy_percent: float
    accuracy_min_shots: int
    headshots_per_kill: float
    headshots_min_kills: int
    min_seconds: int


def breaches(g: SoldierGain | ItemGain, c: Ceilings) -> list[str]:
    """Why an interval is impossible, as short reasons ('kills per minute 9.20 > 5.00'); empty
    for an honest one. A reset carries no gains and breaches nothing."""
    if g.reset:
        return []
    out: list[str] = []
    if g.seconds >= c.min_seconds:
        if (kpm := g.kpm) is not None and kpm > c.kpm:
            out.append(f"kills per minute {kpm:.2f} > {c.kpm:.2f}")
        spm = g.spm if isinstance(g, SoldierGain) else None
        if spm is not None and spm > c.spm:
            out.append(f"score per minute {spm:.0f} > {c.spm:.0f}")
    if (g.shots_fired or 0) >= c.accuracy_min_shots and (acc := g.accuracy_percent) is not None \
            and acc > c.accuracy_percent:
        out.append(f"accuracy {acc:.1f} % > {c.accuracy_percent:.1f} % over "
                   f"{g.shots_fired} shots")
    if g.kills >= c.headshots_min_kills and (hs := g.headshots_per_kill) is not None \
            and hs > c.headshots_per_kill:
        out.append(f"headshots per kill {hs:.2f} > {c.headshots_per_kill:.2f} over "
                   f"{g.kills} kills")
    return out
