"""`bf4ps forecast`: the capacity model on the fleet's measured figures (what binds, demand per
class and resource, bootstrap marks, backlog age, what would fit); `--backtest`: the
forecasts the scheduler recorded beside what happened since."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import click

from bf4ps.capacity.forecast import forecast as compute
from bf4ps.cli.common import echo_json, parse_since, run_async, settings_of
from bf4ps.db.connect import connection, resolve_url
from bf4ps.scheduler.forecasting import BACKTEST_DAYS, store_backtest
from bf4ps.views import backtest, forecast_inputs
from bf4ps.views.forecast_report import as_json, render


@click.command(name="forecast")
@click.option("--json", "as_json_flag", is_flag=True, help="One JSON object.")
@click.option("--window", type=click.FloatRange(min=60), default=86_400.0, show_default=True,
              help="Measurement window for request costs, rates and progress, seconds.")
@click.option("--backtest", "backtest_flag", is_flag=True,
              help="Compare the recorded forecasts with what happened since.")
@click.option("--since", default=None,
              help="With --backtest: forecasts recorded since (ISO time or age: 6h, 7d; "
                   "default 7d).")
@click.option("--horizon", type=click.FloatRange(min=1), default=None,
              help="With --backtest: seconds after each record it is judged on (default "
                   "the scheduler's forecast record period).")
@click.pass_context
@run_async
async def forecast(ctx: click.Context, as_json_flag: bool, window: float, backtest_flag: bool,
                   since: str | None, horizon: float | None) -> None:
    """Capacity forecast from measured figures (documented defaults where none yet)."""
    settings = settings_of(ctx)
    async with connection(await resolve_url(settings)) as conn:
        if backtest_flag:
            now = datetime.now(UTC)
            start = parse_since(since) or now - timedelta(days=BACKTEST_DAYS)
            bt = await backtest.run(conn, start, now,
                                    horizon or settings.forecast_record_seconds)
            await store_backtest(conn, bt)
            if as_json_flag:
                echo_json(backtest.as_json(bt))
            else:
                click.echo(backtest.render(bt))
            return
        fc = compute(await forecast_inputs.load(conn, window,
                                                **forecast_inputs.timings(settings)))
    if as_json_flag:
        echo_json(as_json(fc))
    else:
        click.echo(render(fc))


COMMANDS: list[click.Command] = [forecast]
