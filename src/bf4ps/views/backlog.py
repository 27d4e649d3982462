"""Backlog age and refresh lag per class and resource.

Backlog age: how long the oldest eligible work not yet served has waited (never attempted or
due: since it became eligible; a retry: since its wait ended; interactive: since queued). Read
live with one statement of index probes (the first entry per class and resource of the feeder's
own index), so it costs the same at 10k soldiers as at 1M. Refresh lag: p50/p95 of becoming
due -> collected over the trailing hour's successes; the scheduler computes it with each fleet
history record, and readers take the latest record (no per-request join)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, mapped, one
from bf4ps.views.soldier import Model

CLASSES = ("interactive", "active", "recent", "bootstrap", "retry")
RESOURCES = ("detailed", "profile", "weapons", "vehicles")
LAG_WINDOW_SECONDS = 3600.0


class LagFigure(Model):
    p50: float
    p95: float
    n: int


@dataclass(frozen=True)
class Backlog:
    age_seconds: dict[str, dict[str, float]]  # class -> resource -> seconds (0: none waiting)
    lag: dict[str, dict[str, LagFigure]] = field(default_factory=dict)
    lag_window_seconds: float = LAG_WINDOW_SECONDS
    lag_recorded_at: datetime | None = None


def empty_ages() -> dict[str, dict[str, float]]:
    return {k: dict.fromkeys(RESOURCES, 0.0) for k in CLASSES}


class _Age(NamedTuple):
    klass: str
    resource: str
    age_seconds: float


class _Lag(NamedTuple):
    klass: str
    resource: str
    lag: LagFigure


def _lag_row(row: Mapping[str, Any]) -> _Lag:
    return _Lag(row["klass"], row["resource"],
                LagFigure(p50=row["p50"], p95=row["p95"], n=row["n"]))


class _Latest(NamedTuple):
    recorded_at: datetime
    refresh_lag: dict[str, Any]  # the JSON lag_from_json reads


async def ages(conn: Conn) -> dict[str, dict[str, float]]:
    out = empty_ages()
    for row in await all_rows(conn, _Age, "backlog_oldest"):
        out[row.klass][row.resource] = round(row.age_seconds, 1)
    return out


async def refresh_lag(conn: Conn, window_seconds: float = LAG_WINDOW_SECONDS
                      ) -> dict[str, dict[str, LagFigure]]:
    out: dict[str, dict[str, LagFigure]] = {}
    for row in await all_rows(conn, mapped(_lag_row), "refresh_lag",
                              {"window_seconds": window_seconds}):
        out.setdefault(row.klass, {})[row.resource] = row.lag
    return out


def lag_from_json(raw: dict[str, Any]) -> dict[str, dict[str, LagFigure]]:
    return {k: {r: LagFigure.model_validate(v) for r, v in by.items()} for k, by in raw.items()}


async def read(conn: Conn) -> Backlog:
    """Ages now; the lag of the latest fleet-history record (none recorded yet: empty)."""
    latest = await one(conn, _Latest, "history_latest")
    if latest is None:
        return Backlog(await ages(conn))
    return Backlog(await ages(conn), lag_from_json(latest.refresh_lag),
                   LAG_WINDOW_SECONDS, latest.recorded_at)


def render_lines(b: Backlog) -> list[str]:
    lines = ["backlog age (oldest eligible work not yet served), seconds:",
             "  " + " " * 12 + "".join(f"{r:>11}" for r in RESOURCES)]
    for k in CLASSES:
        lines.append(f"  {k:12}" + "".join(f"{b.age_seconds[k][r]:>11,.0f}" for r in RESOURCES))
    if not b.lag:
        lines.append("refresh lag (due -> collected): nothing recorded in the last hour")
        return lines
    lines.append(f"refresh lag (due -> collected, last {b.lag_window_seconds / 60:.0f} min), "
                 "p50 / p95 seconds:")
    for k, by in sorted(b.lag.items()):
        parts = "  ".join(f"{r} {v.p50:,.0f} / {v.p95:,.0f} (n {v.n})"
                          for r, v in sorted(by.items()))
        lines.append(f"  {k:12}{parts}")
    return lines
