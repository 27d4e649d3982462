"""`bf4ps forecast`: steady-state demand against the budget, bootstrap completion and the
egresses the policy needs, from the fleet's measured figures."""

from __future__ import annotations

import click

from bf4ps.cli.common import echo_json, run_async, settings_of
from bf4ps.db.connect import connection, resolve_url
from bf4ps.views import forecast_inputs
from bf4ps.views.forecast import forecast as compute
from bf4ps.views.forecast_report import as_json, render


@click.command(name="forecast")
@click.option("--json", "as_json_flag", is_flag=True, help="One JSON object.")
@click.option("--window", type=click.FloatRange(min=60), default=86_400.0, show_default=True,
              help="Measurement window for request costs, rates and progress, seconds.")
@click.pass_context
@run_async
async def forecast(ctx: click.Context, as_json_flag: bool, window: float) -> None:
    """Capacity forecast from measured figures (documented defaults where none yet)."""
    async with connection(await resolve_url(settings_of(ctx))) as conn:
        fc = compute(await forecast_inputs.load(conn, window))
    if as_json_flag:
        echo_json(as_json(fc))
    else:
        click.echo(render(fc))


COMMANDS: list[click.Command] = [forecast]
