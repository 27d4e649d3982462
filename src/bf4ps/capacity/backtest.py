"""Backtest arithmetic (pure): what a recorded forecast predicted beside what happened since.

Per record made at t0 and a horizon H:
- throughput (total and per resource): predicted requests per hour against the ledger's count
  in (t0, t0 + H], per hour; error = (predicted - actual) / actual.
- bootstrap_10/25/50/90: the share of the never-attempted work at t0 that is done, the
  predicted time against the time the fleet history first shows it (linear between records),
  relative to the time it took from t0; a mark not reached yet is not compared.
- backlog_age_<class>: for a record made in steady state, the predicted age against the mean
  of the fleet history's ages (oldest over resources) in (t0, t0 + H].
The summary per figure: mean signed error, mean absolute error, and the comparisons made.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TypedDict

from bf4ps.capacity.forecast import Forecast
from bf4ps.capacity.inputs import RESOURCES

MARK_NAMES = {0.10: "bootstrap_10", 0.25: "bootstrap_25", 0.50: "bootstrap_50",
              0.90: "bootstrap_90"}


def never(coverage: dict[str, dict[str, int]]) -> dict[str, int]:
    return {r: int(coverage.get(r, {}).get("never_attempted", 0)) for r in RESOURCES}


class Figures(TypedDict):
    """What a forecast record keeps (JSON: times as ISO strings)."""

    throughput: dict[str, float]  # requests per hour per resource and "total"
    marks: dict[str, dict[str, str | None]]  # resource -> mark ("0.1") -> ISO time
    left: dict[str, int]  # never attempted per resource at the record
    steady: bool  # no bootstrap left: its backlog ages are steady state's
    backlog_age: dict[str, float | None]  # class -> seconds (None: grows)
    fits: bool
    binding: str
    capacity_per_hour: float
    demand_per_hour: float


def figures(fc: Forecast) -> Figures:
    """What a forecast record keeps."""
    steady = all(b.remaining == 0 for b in fc.bootstrap)
    return {
        "throughput": {**{r: round(v, 3) for r, v in fc.per_resource().items()},
                       "total": round(fc.throughput_per_hour, 3)},
        "marks": {b.resource: {f"{m:g}": (None if at is None else at.isoformat())
                               for m, at in b.marks.items() if m in MARK_NAMES}
                  for b in fc.bootstrap},
        "left": {b.resource: b.remaining for b in fc.bootstrap},
        "steady": steady,
        "backlog_age": {k: a.seconds for k, a in fc.backlog_age.items()},
        "fits": fc.fits, "binding": fc.capacity.binding,
        "capacity_per_hour": round(fc.capacity.per_hour, 3),
        "demand_per_hour": round(fc.demand_per_hour, 3),
    }


@dataclass(frozen=True)
class Point:
    """One fleet-history record: when, never-attempted work per resource, oldest age per
    class."""

    at: datetime
    never: dict[str, int]
    age: dict[str, float]


def point(at: datetime, coverage: dict[str, dict[str, int]],
          backlog_age: dict[str, dict[str, float]]) -> Point:
    return Point(at, never(coverage),
                 {k: max(by.values(), default=0.0) for k, by in backlog_age.items()})


@dataclass(frozen=True)
class Observed:
    horizon_seconds: float
    ledger: dict[str, int]  # requests per resource in (t0, t0 + H]
    history: tuple[Point, ...]  # the fleet history from t0 on


def _rel(predicted: float, actual: float) -> float | None:
    return None if actual <= 0 else (predicted - actual) / actual


def _reached(history: tuple[Point, ...], resource: str, left: int, mark: float
             ) -> datetime | None:
    """When the record's never-attempted work was `mark` done (between records: linear)."""
    prev: tuple[datetime, float] | None = None
    for p in history:
        share = 1 - p.never.get(resource, 0) / left
        if share >= mark:
            if prev is None:
                return p.at
            before = prev[1]
            frac = (mark - before) / (share - before) if share > before else 1.0
            return prev[0] + (p.at - prev[0]) * frac
        prev = (p.at, share)
    return None


def compare(t0: datetime, fig: Figures, obs: Observed) -> list[tuple[str, float]]:
    """(figure, relative error) for everything this record can be judged on."""
    out: list[tuple[str, float]] = []
    hours = obs.horizon_seconds / 3600
    actual = {r: obs.ledger.get(r, 0) / hours for r in RESOURCES}
    actual["total"] = sum(obs.ledger.values()) / hours
    for key, predicted in fig["throughput"].items():
        name = "throughput" if key == "total" else f"throughput_{key}"
        e = _rel(float(predicted), actual.get(key, 0.0))
        if e is not None:
            out.append((name, e))
    for r, marks in fig["marks"].items():
        for m_txt, at_txt in marks.items():
            m = float(m_txt)
            left = int(fig["left"].get(r, 0))
            if at_txt is None or left <= 0:
                continue
            real = _reached(obs.history, r, left, m)
            if real is None or real <= t0:
                continue
            took = (real - t0).total_seconds()
            err = (datetime.fromisoformat(at_txt) - real).total_seconds() / took
            out.append((MARK_NAMES[m], err))
    if fig.get("steady"):
        end = t0.timestamp() + obs.horizon_seconds
        window = [p for p in obs.history if t0 < p.at and p.at.timestamp() <= end]
        for klass, age in fig["backlog_age"].items():
            if age is None or not window:
                continue
            e = _rel(float(age), sum(p.age.get(klass, 0.0) for p in window) / len(window))
            if e is not None:
                out.append((f"backlog_age_{klass}", e))
    return out


def summarize(errors: list[tuple[str, float]]) -> dict[str, dict[str, float]]:
    by: dict[str, list[float]] = {}
    for name, e in errors:
        by.setdefault(name, []).append(e)
    return {name: {"error": round(sum(v) / len(v), 6),
                   "abs": round(sum(abs(x) for x in v) / len(v), 6), "n": len(v)}
            for name, v in sorted(by.items())}
