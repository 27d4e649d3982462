"""`bf4ps demo`: the whole system on its embedded defaults."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

import click

from bf4ps.cli.common import echo_json, settings_of

if TYPE_CHECKING:
    from bf4ps.demo.figures import Summary


@click.command(name="demo")
@click.option("--soldiers", default=3000, show_default=True, type=click.IntRange(10, 500_000))
@click.option("--collectors", default=4, show_default=True, type=click.IntRange(1, 16),
              help="Background collectors, each on its own loopback egress.")
@click.option("--duration", default=None, type=click.FloatRange(min=5),
              help="Run this many seconds, then stop and print a summary.")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535),
              help="Website port (0: any free port).")
@click.option("--speed", default=90.0, show_default=True, type=click.FloatRange(1, 600),
              help="The demo's one time factor: simulated seconds per real second, for BF4SW "
                   "activity, play sessions, Battlelog's counters and BF4PS's refresh policy "
                   "alike (60: an hour a minute). Collector pacing is not scaled.")
@click.option("--json", "as_json", is_flag=True, help="The summary as one JSON object.")
@click.pass_context
def demo(ctx: click.Context, soldiers: int, collectors: int, duration: float | None,
         port: int, speed: float, as_json: bool) -> None:
    """Run everything locally: embedded PostgreSQL, simulated BF4SW and Battlelog, scheduler,
    collectors, the website. Ctrl-C stops it all."""
    from bf4ps.demo.run import DemoError, DemoOptions, run_demo

    opts = DemoOptions(soldiers, collectors, duration, port, speed, as_json)
    try:
        result = run_demo(settings_of(ctx), opts)
    except DemoError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        echo_json(asdict(result))
        return
    click.echo(render_summary(result))


def render_summary(result: Summary) -> str:
    from bf4ps.demo.show import budget_text, outcome_text

    collected = ", ".join(f"{k} {v}" for k, v in result.coverage.collected_end.items())
    violations = result.violations
    progress = result.progress
    return (f"summary: {result.requests.total} Battlelog requests in "
            f"{result.duration_seconds:.0f} s; collected (current): {collected or 'none'}; "
            f"{outcome_text(result.outcomes)}; {budget_text(result.budget)}; violations: "
            f"{violations.per_ip} per IP, {violations.fleet} fleet; "
            f"{progress.soldiers_with_3_snapshots} soldiers with 3 snapshots or more, "
            f"{progress.session_reports} session reports, "
            f"{progress.weapon_board_soldiers} soldiers on the top weapon's weekly board")


COMMANDS: list[click.Command] = [demo]
