"""The scheduler's forecasts: the capacity check once collectors have served a window (so it
judges the live fleet, not defaults), one forecast record an hour, and a backtest of the
records after each (stored for /metrics and the console)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from psycopg.types.json import Jsonb

from bf4ps.capacity.backtest import figures
from bf4ps.capacity.forecast import Forecast, forecast
from bf4ps.db.connect import Conn
from bf4ps.db.queries import q
from bf4ps.scheduler import retention
from bf4ps.views import backtest, forecast_inputs

log = logging.getLogger(__name__)

BACKTEST_DAYS = 7.0


async def take(conn: Conn, window_seconds: float, timings: dict[str, float]
               ) -> Forecast | None:
    """`timings`: forecast_inputs.timings of the scheduler's settings."""
    try:
        return forecast(await forecast_inputs.load(conn, window_seconds, **timings))
    except (ArithmeticError, ValueError) as exc:
        log.warning("forecast: none made: %s", exc)
        return None


def served_a_window(fc: Forecast) -> bool:
    """Background collectors serve and the ledger measured them (no default egresses)."""
    return fc.inputs.fleet_rate is not None and not any(
        m.startswith("egresses") for m in fc.inputs.missing)


async def record(conn: Conn, fc: Forecast) -> None:
    await conn.execute(q("forecast_record_insert"), {"figures": Jsonb(figures(fc))})


async def store_backtest(conn: Conn, bt: backtest.Backtest) -> None:
    await conn.execute(q("backtest_set"), {"since": bt.since, "records": bt.records,
                                           "errors": Jsonb(bt.errors)})


async def record_and_backtest(conn: Conn, fc: Forecast, horizon_seconds: float) -> None:
    await record(conn, fc)
    now = datetime.now(UTC)
    bt = await backtest.run(conn, now - timedelta(days=BACKTEST_DAYS), now, horizon_seconds)
    await store_backtest(conn, bt)
    if bt.errors:
        worst = max(bt.errors.items(), key=lambda kv: kv[1]["abs"])
        log.info("forecast backtest: %d records, worst figure %s off by %.1f %% on average",
                 bt.records, worst[0], 100 * worst[1]["abs"])


async def prune(conn: Conn, retention_days: float, *, batch: int = 5000) -> int:
    cutoff = datetime.now(UTC) - timedelta(days=retention_days)
    return await retention.delete_in_batches(conn, "forecast_records_delete_batch", cutoff,
                                             batch)

