"""Backtest arithmetic (pure): what a recorded forecast predicted beside what happened since.

Per record made at t0 and a horizon H:
- throughput (total and per resource): predicted requests per hour against the ledger's count
  in (t0, t0 + H], per hour; error = (predicted - actual) / actual.
- bootstrap_10/25/50/90: for a mark not yet passed at t0, the predicted time against the time
  the fleet history first shows the attempted share at the mark (between two records: linear),
  relative to the time it took from t0; a mark not reached yet is not compared.
- backlog_age_<class>: for a record made in steady state (nothing left to bootstrap), the
  predicted age against the mean of the fleet history's ages (oldest over resources) in
  (t0, t0 + H].
The summary per figure: mean signed error, mean absolute error, and the comparisons made.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bf4ps.capacity.forecast import Forecast
from bf4ps.capacity.inputs import RESOURCES

MARK_NAMES = {0.10: "bootstrap_10", 0.25: "bootstrap_25", 0.50: "bootstrap_50",
              0.90: "bootstrap_90"}


def attempted(coverage: dict[str, dict[str, int]]) -> dict[str, float]:
    out = {}
    for r in RESOURCES:
        counts = coverage.get(r, {})
        total = sum(int(v) for v in counts.values())
        out[r] = 1.0 if total == 0 else 1 - int(counts.get("never_attempted", 0)) / total
    return out


def figures(fc: Forecast) -> dict[str, Any]:
    """What a forecast record keeps (JSON: times as ISO strings)."""
    steady = all(b.remaining == 0 for b in fc.bootstrap)
    return {
        "throughput": {**{r: round(v, 3) for r, v in fc.per_resource().items()},
                       "total": round(fc.throughput_per_hour, 3)},
        "marks": {b.resource: {f"{m:g}": (None if at is None else at.isoformat())
                               for m, at in b.marks.items() if m in MARK_NAMES}
                  for b in fc.bootstrap},
        "attempted": attempted(fc.inputs.coverage),
        "steady": steady,
        "backlog_age": {k: a.seconds for k, a in fc.backlog_age.items()},
        "fits": fc.fits, "binding": fc.capacity.binding,
        "capacity_per_hour": round(fc.capacity.per_hour, 3),
        "demand_per_hour": round(fc.demand_per_hour, 3),
    }


@dataclass(frozen=True)
class Point:
    """One fleet-history record: when, attempted share per resource, oldest age per class."""

    at: datetime
    attempted: dict[str, float]
    age: dict[str, float]


def point(at: datetime, coverage: dict[str, dict[str, int]],
          backlog_age: dict[str, dict[str, float]]) -> Point:
    return Point(at, attempted(coverage),
                 {k: max(by.values(), default=0.0) for k, by in backlog_age.items()})


@dataclass(frozen=True)
class Observed:
    horizon_seconds: float
    ledger: dict[str, int]  # requests per resource in (t0, t0 + H]
    history: tuple[Point, ...]  # the fleet history from t0 on


def _rel(predicted: float, actual: float) -> float | None:
    return None if actual <= 0 else (predicted - actual) / actual


def _reached(history: tuple[Point, ...], resource: str, mark: float) -> datetime | None:
    prev: Point | None = None
    for p in history:
        share = p.attempted.get(resource, 0.0)
        if share >= mark:
            if prev is None:
                return p.at
            before = prev.attempted.get(resource, 0.0)
            frac = (mark - before) / (share - before) if share > before else 1.0
            return prev.at + (p.at - prev.at) * frac
        prev = p
    return None


def compare(t0: datetime, fig: dict[str, Any], obs: Observed) -> list[tuple[str, float]]:
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
            if at_txt is None or fig["attempted"].get(r, 1.0) >= m:
                continue
            real = _reached(obs.history, r, m)
            if real is None or real <= t0:
                continue
            took = (real - t0).total_seconds()
            err = (datetime.fromisoformat(at_txt) - real).total_seconds() / took
            out.append((MARK_NAMES[m], err))
    if fig.get("steady"):
        end = t0.timestamp() + obs.horizon_seconds
        window = [p for p in obs.history if t0 < p.at and p.at.timestamp() <= end]
        for klass, predicted in fig["backlog_age"].items():
            if predicted is None or not window:
                continue
            e = _rel(float(predicted), sum(p.age.get(klass, 0.0) for p in window) / len(window))
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
