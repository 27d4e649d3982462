"""`bf4ps collector run|list|drain|resume|disable|retire`."""

from __future__ import annotations

import asyncio
import socket
import sys

import click

from bf4ps.cli.common import database, echo_listing, run_async, settings_of
from bf4ps.collector.identity import IdentityError
from bf4ps.collector.runner import Collector, wanted
from bf4ps.domain import Lane
from bf4ps.fleet import collectors as control
from bf4ps.logs import setup_logging
from bf4ps.views.fleet_rows import CollectorRow, registry


@click.group(name="collector")
def group() -> None:
    """Battlelog collectors: run one, or act on the registry."""


@group.command()
@click.option("--name", required=True, help="Unique operator-facing name, e.g. mak-01.")
@click.option("--lane", type=click.Choice([lane.value for lane in Lane]), default="background",
              show_default=True)
@click.option("--egress", required=True, help="Rate-limit domain (one per public IP).")
@click.option("--hostname", default=None, help="Host name (default: this machine's).")
@click.option("--source-address", default=None, help="Local IP to send Battlelog requests from.")
@click.option("--replace", is_flag=True, help="Retire the registered incarnation of NAME and "
              "register a new one.")
@click.pass_context
def run(ctx: click.Context, name: str, lane: str, egress: str, hostname: str | None,
        source_address: str | None, replace: bool) -> None:
    """Run a collector until SIGTERM/SIGINT (finishes the request in flight, exits 0)."""
    settings = settings_of(ctx)
    setup_logging(settings)
    try:
        settings.battlelog_session()  # a bad session file stops the start, naming only the file
    except ValueError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    want = wanted(name, Lane(lane), egress, hostname or socket.gethostname(), source_address)
    try:
        code = asyncio.run(Collector(settings, want, replace=replace).run())
    except IdentityError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    sys.exit(code)


@group.command(name="list")
@click.option("--json", "as_json", is_flag=True)
@click.option("--all", "include_retired", is_flag=True, help="Include retired incarnations.")
@click.pass_context
@run_async
async def list_(ctx: click.Context, as_json: bool, include_retired: bool) -> None:
    """The registry: health, last heartbeat, lane, egress, current job, version."""
    async with database(ctx) as conn:
        rows = await registry(conn, include_retired)
    echo_listing(rows, as_json, describe, "no collectors registered")


def describe(r: CollectorRow) -> str:
    age = r.heartbeat_age
    if r.retired_at:
        state = f"retired {r.retired_at:%Y-%m-%d %H:%M:%S} UTC"
    elif r.health == "lost":
        state = f"unavailable since {r.heartbeat_lost_at:%Y-%m-%d %H:%M:%S} UTC"
    elif r.health == "healthy" and age is not None:
        state = f"healthy last heartbeat {age:.0f} sec ago"
    else:
        state = r.health
    if r.drained:
        state += f"  drained ({r.drain_reason or 'operator requested'})"
    if not r.enabled and not r.retired_at:
        state += "  disabled"
    job = f"  job {r.current_job_id} {r.job_resource}" if r.current_job_id else ""
    return (f"{r.collector_name:<18} {state}  [{r.lane}, egress {r.egress_key}, "
            f"host {r.hostname}, v{r.software_version}]{job}")


def _action(name: str, help_text: str) -> click.Command:
    @click.command(name=name, help=help_text)
    @click.argument("collector_name")
    @click.option("--reason", default="operator requested", show_default=True)
    @click.pass_context
    @run_async
    async def command(ctx: click.Context, collector_name: str, reason: str) -> None:
        async with database(ctx) as conn:
            try:
                await control.act(conn, name, collector_name, reason)
            except control.ControlError as exc:
                raise click.ClickException(str(exc)) from None
        click.echo(f"{collector_name}: {name} recorded")

    return command


for _name, _help in (("drain", "Stop claiming new work (keeps heartbeating)."),
                     ("resume", "Undo drain/disable."),
                     ("disable", "Make the collector exit."),
                     ("retire", "End this registration; the name can be registered anew (on the "
                                "same host: collector run --replace).")):
    group.add_command(_action(_name, _help))

COMMANDS: list[click.Command] = [group]
