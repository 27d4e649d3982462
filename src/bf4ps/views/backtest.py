"""`bf4ps forecast --backtest`: the forecasts the scheduler recorded beside what happened since
(request ledger, fleet history), the error per figure (capacity/backtest.py), and the last
backtest stored for /metrics and the console."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

from bf4ps.capacity.backtest import Figures, Observed, compare, point, summarize
from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, one
from bf4ps.views.forecast_json import BacktestJson


@dataclass(frozen=True)
class Backtest:
    since: datetime
    horizon_seconds: float
    records: int  # recorded forecasts whose horizon has passed
    errors: dict[str, dict[str, float]]  # figure -> {"error", "abs", "n"}
    checked_at: datetime | None = None


class _Recorded(NamedTuple):
    recorded_at: datetime
    figures: Figures  # the forecast's figures as recorded (JSON)


class _Counted(NamedTuple):
    resource: str
    n: int


class _Point(NamedTuple):
    recorded_at: datetime
    coverage: dict[str, dict[str, int]]
    backlog_age: dict[str, dict[str, float]]


class _Stored(NamedTuple):
    checked_at: datetime
    since: datetime
    records: int
    errors: dict[str, dict[str, float]]


async def run(conn: Conn, since: datetime, now: datetime, horizon_seconds: float = 3600.0
              ) -> Backtest:
    records = [r for r in await all_rows(conn, _Recorded, "forecast_records_since",
                                         {"since": since})
               if r.recorded_at + timedelta(seconds=horizon_seconds) <= now]
    errors: list[tuple[str, float]] = []
    for rec in records:
        t0 = rec.recorded_at
        t1 = t0 + timedelta(seconds=horizon_seconds)
        ledger = dict(await all_rows(conn, _Counted, "ledger_between", {"t0": t0, "t1": t1}))
        history = tuple(point(h.recorded_at, h.coverage, h.backlog_age) for h in await all_rows(
            conn, _Point, "history_between", {"t0": t0, "t1": now}))
        errors += compare(t0, rec.figures, Observed(horizon_seconds, ledger, history))
    return Backtest(since, horizon_seconds, len(records), summarize(errors))


async def last(conn: Conn) -> Backtest | None:
    row = await one(conn, _Stored, "backtest_get")
    if row is None:
        return None
    return Backtest(row.since, 0.0, row.records, dict(row.errors), row.checked_at)


def as_json(bt: Backtest) -> BacktestJson:
    return {"since": bt.since, "horizon_seconds": bt.horizon_seconds, "records": bt.records,
            "errors": bt.errors}


def render(bt: Backtest) -> str:
    out = [f"backtest of {bt.records} recorded forecasts since {bt.since:%Y-%m-%d %H:%M:%S} UTC"
           f" (each against the {bt.horizon_seconds:g} s after it):"]
    if not bt.errors:
        out.append("  nothing to compare yet (no recorded forecast whose horizon has passed)")
    for name, e in bt.errors.items():
        out.append(f"  {name:24} error {100 * e['error']:+7.1f} %  (mean absolute "
                   f"{100 * e['abs']:.1f} %, {int(e['n'])} comparisons)")
    return "\n".join(out)
