"""The fleet's history as chart series: coverage per resource over time with the projected
completion (the forecast's measured bootstrap rate: coverage progress over the window), the
requests per egress over time against its pacing limit, and the backlog age per class. Read
from the scheduler's fleet_history records (a few hundred rows), never from the hot tables."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from bf4ps.capacity.inputs import HOUR, RESOURCES
from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, one
from bf4ps.queue import figures
from bf4ps.views.backlog import CLASSES
from bf4ps.views.forecast_inputs import bootstrap_rate
from bf4ps.views.forecast_rows import HistoryFirstRow

POINTS = 240


@dataclass(frozen=True)
class Projection:
    resource: str
    share_now: float  # attempted, percent
    completes_at: float | None  # epoch seconds; None: no progress measured (or done)
    completes_text: str | None = None  # the same, as people read it


@dataclass
class Series:
    window_seconds: float
    times: list[float] = field(default_factory=list)  # epoch seconds
    coverage: dict[str, list[float | None]] = field(default_factory=dict)  # attempted, %
    requests: dict[str, list[float | None]] = field(default_factory=dict)  # per egress, /h
    limits: dict[str, list[float | None]] = field(default_factory=dict)  # per egress, /h
    backlog: dict[str, list[float | None]] = field(default_factory=dict)  # per class, s
    projections: list[Projection] = field(default_factory=list)


def attempted_percent(counts: dict[str, int]) -> float | None:
    total = sum(counts.values())
    return None if total == 0 else round(100 * (1 - counts.get("never_attempted", 0) / total), 3)


@dataclass(frozen=True, slots=True)
class HistoryRecord:
    """A fleet_history row's charted figures (JSON, as the scheduler recorded them)."""

    recorded_at: datetime
    interval_seconds: float
    coverage: dict[str, dict[str, int]]  # resource -> collection status -> soldiers
    requests: dict[str, dict[str, float]]  # egress -> requests, limit
    backlog_age: dict[str, dict[str, float]]  # class -> resource -> oldest age, s


def series(rows: list[HistoryRecord], window_seconds: float) -> Series:
    out = Series(window_seconds)
    egresses = sorted({e for r in rows for e in r.requests})
    out.coverage = {res: [] for res in RESOURCES}
    out.requests = {e: [] for e in egresses}
    out.limits = {e: [] for e in egresses}
    out.backlog = {k: [] for k in CLASSES}
    for r in rows:
        out.times.append(r.recorded_at.timestamp())
        for res in RESOURCES:
            out.coverage[res].append(attempted_percent(r.coverage.get(res, {})))
        scale = HOUR / float(r.interval_seconds)
        for e in egresses:
            got = r.requests.get(e)
            out.requests[e].append(round(got["requests"] * scale, 1) if got else None)
            out.limits[e].append(round(got["limit"] * scale, 1) if got else None)
        for k in CLASSES:
            ages = r.backlog_age.get(k, {})
            out.backlog[k].append(max(ages.values()) if ages else 0.0)
    return out


def projections(first: HistoryFirstRow | None, coverage: dict[str, dict[str, int]],
                now: datetime) -> list[Projection]:
    rates = bootstrap_rate(first, coverage, now)
    out = []
    for res in RESOURCES:
        counts = coverage.get(res, {})
        share = attempted_percent(counts)
        left = counts.get("never_attempted", 0)
        rate = rates.get(res)
        at = text = None
        if share is not None and left > 0 and rate is not None and rate.value > 0:
            at = now.timestamp() + left / rate.value * HOUR
            text = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")
        out.append(Projection(res, share or 0.0, at, text))
    return out


async def read(conn: Conn, window_seconds: float = 6 * HOUR, points: int = POINTS) -> Series:
    """The fleet-history chart series (coverage, requests per egress, backlog age)."""
    params = {"window_seconds": window_seconds, "points": points}
    out = series(await all_rows(conn, HistoryRecord, "history_window", params), window_seconds)
    first = await one(conn, HistoryFirstRow, "history_first_since", params)
    out.projections = projections(first, await figures.coverage(conn), datetime.now(UTC))
    return out
