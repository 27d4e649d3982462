"""`bf4ps forecast --backtest`: recorded forecasts against the ledger and the fleet history,
errors that match a hand computation; the last backtest in /metrics and on the console; the
scheduler's record is the model's own figures."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from psycopg.types.json import Jsonb

from bf4ps.capacity.forecast import forecast
from bf4ps.cli.main import cli
from bf4ps.db.connect import Conn, connection, open_pool
from bf4ps.scheduler import forecasting
from bf4ps.settings import Settings
from bf4ps.views import backtest, forecast_inputs
from bf4ps.web.app import create_app
from bf4ps.web.metrics import Metrics
from tests.db.test_capacity import gauge
from tests.db.test_web_api import OPS, SETTINGS, client_for


def cov(never: int) -> Jsonb:
    return Jsonb({"detailed": {"never_attempted": never, "current": 1000 - never}})


async def seed(conn: Conn, now: datetime) -> None:
    """Two records: at t0 (bootstrap 0 %: throughput 100/h, 10 % at +30 min, 25 % at +60 min)
    and at t1 = t0 + 30 min, in steady state (active backlog age 10 s). What happened: 80
    detailed requests in the hour after t0; coverage 0 % at t0, 10 % at +40 min, 30 % at
    +80 min; active backlog age 8 s at +40 min and 4 s at +80 min."""
    t0 = now - timedelta(hours=2)
    first = {"throughput": {"detailed": 100.0, "total": 100.0},
             "marks": {"detailed": {"0.1": (t0 + timedelta(minutes=30)).isoformat(),
                                    "0.25": (t0 + timedelta(minutes=60)).isoformat(),
                                    "0.5": None}},
             "left": {"detailed": 1000}, "steady": False, "backlog_age": {}}
    second = {"throughput": {}, "marks": {}, "left": {"detailed": 0}, "steady": True,
              "backlog_age": {"active": 10.0, "retry": None}}
    for at, fig in ((t0, first), (t0 + timedelta(minutes=30), second)):
        await conn.execute("INSERT INTO forecast_records (recorded_at, figures) VALUES (%s, %s)",
                           [at, Jsonb(fig)])
    for minutes, never, age in ((0, 1000, 0.0), (40, 900, 8.0), (80, 700, 4.0)):
        await conn.execute(
            "INSERT INTO fleet_history (recorded_at, interval_seconds, soldiers, coverage, "
            "finished, requests, backlog_age, refresh_lag) VALUES (%s, 60, 1000, %s, '{}', "
            "'{}', %s, '{}')",
            [t0 + timedelta(minutes=minutes), cov(never),
             Jsonb({"active": {"detailed": age, "profile": 0.0}})])
    await conn.execute(
        "INSERT INTO request_ledger (slot_at, egress_key, budget_class, resource) "
        "SELECT %s + g * interval '40 s', 'eg-1', 'bootstrap', 'detailed' "
        "FROM generate_series(1, 80) g", [t0])  # 80 slots within the hour after t0


async def _seed(db_url: str) -> None:
    async with connection(db_url) as conn:
        await seed(conn, datetime.now(UTC))


def test_backtest_errors_match_a_hand_computation(db_url: str, tmp_path: Path) -> None:
    """Sync on purpose: each command runs its own event loop, as from a shell."""
    asyncio.run(_seed(db_url))
    settings = Settings(database_url=db_url, data_dir=tmp_path)
    result = CliRunner().invoke(cli, ["forecast", "--backtest", "--since", "3h", "--json"],
                                obj=settings, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    errors = data["errors"]
    assert data["records"] == 2
    # throughput: predicted 100/h, 80 in the hour: (100 - 80) / 80
    assert errors["throughput"]["error"] == pytest.approx(0.25)
    assert errors["throughput_detailed"]["error"] == pytest.approx(0.25)
    # 10 %: reached at +40 min (the record at +40 shows exactly 10 %), predicted +30
    assert errors["bootstrap_10"]["error"] == pytest.approx((30 - 40) / 40, abs=1e-5)
    # 25 %: between 10 % at +40 and 30 % at +80, linearly at +70; predicted +60
    assert errors["bootstrap_25"]["error"] == pytest.approx((60 - 70) / 70, abs=1e-5)
    assert "bootstrap_50" not in errors  # never reached: not judged
    # steady-state age: predicted 10 s, the hour after t1 saw 8 s and 4 s: mean 6 s
    assert errors["backlog_age_active"]["error"] == pytest.approx((10 - 6) / 6, abs=1e-5)
    assert "backlog_age_retry" not in errors  # None: not predicted
    text = CliRunner().invoke(cli, ["forecast", "--backtest", "--since", "3h"],
                              obj=settings, catch_exceptions=False).output
    assert "backtest of 2 recorded forecasts" in text
    assert "throughput               error   +25.0 %" in text, text
    assert "bootstrap_25             error   -14.3 %" in text, text
    asyncio.run(_shown(db_url))


async def _shown(db_url: str) -> None:
    """The stored last backtest in /metrics and on the console."""
    async with connection(db_url) as conn:
        scraped = (await Metrics().render(conn)).decode()
    assert gauge(scraped, "bf4ps_forecast_backtest_error_ratio", figure="throughput",
                 stat="mean") == pytest.approx(0.25)
    pool = await open_pool(db_url, max_size=2)
    try:
        async with client_for(create_app(SETTINGS, pool=pool)) as c:
            page = await c.get("/ops", auth=OPS)
            assert page.status_code == 200
            assert 'id="backtest"' in page.text and "bootstrap_25" in page.text
            assert "-14.3 %" in page.text
    finally:
        await pool.close()


async def test_the_scheduler_records_the_models_figures_and_backtests(conn: Conn) -> None:
    fc = forecast(await forecast_inputs.load(conn, 3600))
    # no background collector has served: the capacity check waits (defaults are not a fleet)
    assert not forecasting.served_a_window(fc)
    await forecasting.record_and_backtest(conn, fc, 3600)
    cur = await conn.execute("SELECT figures FROM forecast_records")
    rows = await cur.fetchall()
    assert len(rows) == 1
    fig = rows[0]["figures"]
    assert fig["throughput"]["total"] == pytest.approx(fc.throughput_per_hour, rel=1e-3)
    assert fig["binding"] == fc.capacity.binding and fig["fits"] == fc.fits
    last = await backtest.last(conn)
    assert last is not None and last.records == 0 and last.errors == {}  # horizon not passed
    assert await forecasting.prune(conn, 180) == 0
