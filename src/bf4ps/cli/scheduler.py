"""`bf4ps scheduler run`, `bf4ps retention run`, `bf4ps config show|set|unset`, `bf4ps events`."""

from __future__ import annotations

import asyncio
import signal

import click

from bf4ps import policy as policy_mod
from bf4ps.cli.common import (
    database,
    echo_json,
    echo_listing,
    json_async,
    parse_since,
    run_async,
    settings_of,
)
from bf4ps.db import compat
from bf4ps.db.connect import resolve_url
from bf4ps.domain import JobKind, Platform
from bf4ps.events.log import EVENT_TYPE_NAMES
from bf4ps.interactive.inputs import InputError, parse_name
from bf4ps.logs import setup_logging
from bf4ps.scheduler import history, retention
from bf4ps.scheduler.intake_loop import scheduler_intake
from bf4ps.scheduler.service import Scheduler
from bf4ps.views.events import EventFilter, render, search


@click.group(name="scheduler")
def scheduler_group() -> None:
    """The scheduler (one active, others hot standby)."""


@scheduler_group.command(name="run")
@click.pass_context
def scheduler_run(ctx: click.Context) -> None:
    """Run until SIGTERM/SIGINT."""
    settings = settings_of(ctx)
    setup_logging(settings)

    async def main() -> None:
        await compat.require(await resolve_url(settings))
        sched = Scheduler(settings, intake=scheduler_intake(settings))
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, sched.stop.set)
        await sched.run()

    asyncio.run(main())


@click.group(name="retention")
def retention_group() -> None:
    """Retention: the event log and the request ledger."""


@retention_group.command(name="run")
@click.option("--days", type=click.FloatRange(min=1), default=None,
              help="Override the policy's event horizon.")
@click.option("--ledger-days", type=click.FloatRange(min=1), default=None,
              help="Override the policy's request-ledger horizon.")
@click.pass_context
@run_async
async def retention_run(ctx: click.Context, days: float | None,
                        ledger_days: float | None) -> None:
    """Delete collector events and request-ledger rows past their horizons, once."""
    async with database(ctx) as conn:
        pol = await policy_mod.load(conn)
        report = await retention.run(conn, days if days is not None else
                                     pol.event_retention_days)
        ledger = await retention.prune_ledger(conn, ledger_days if ledger_days is not None
                                              else pol.ledger_retention_days)
        await retention.ensure_partitions(conn)
        records = await history.prune(conn, pol.history_retention_days)
    click.echo(f"events before {report.cutoff:%Y-%m-%d %H:%M} UTC removed: "
               f"{len(report.dropped_partitions)} partitions dropped, "
               f"{report.deleted_rows} rows deleted; {ledger} request-ledger rows deleted; "
               f"{records} fleet-history records deleted")


@click.group(name="config")
def config_group() -> None:
    """Run-time scheduling policy (stored in the database, no restart or migration)."""


@config_group.command(name="show")
@json_async
async def config_show(ctx: click.Context, as_json: bool) -> None:
    """Every policy key with its value in force (stored, else the default); docs/configuration.md
    says what each one does."""
    async with database(ctx) as conn:
        pol = await policy_mod.load(conn)
    data = pol.model_dump(mode="json")
    if as_json:
        echo_json(data)
        return
    for key, value in data.items():
        click.echo(f"{key} = {value}")


@config_group.command(name="set", context_settings={"ignore_unknown_options": True})
@click.argument("key")
@click.argument("value")  # "-5" is a value here, not an option
@click.pass_context
@run_async
async def config_set(ctx: click.Context, key: str, value: str) -> None:
    """Store KEY = VALUE in the database (checked against the key's type and range); the
    scheduler and every collector take it within seconds, no restart. Example:
    bf4ps config set freshness_detailed_seconds 3600"""
    async with database(ctx) as conn:
        try:
            pol = await policy_mod.set_value(conn, key, value, by="cli")
        except policy_mod.PolicyError as exc:
            raise click.ClickException(str(exc)) from None
    click.echo(f"{key} = {getattr(pol, key)}")


@config_group.command(name="unset")
@click.argument("key")
@click.pass_context
@run_async
async def config_unset(ctx: click.Context, key: str) -> None:
    """Remove KEY's stored value: the default applies again."""
    async with database(ctx) as conn:
        try:
            await policy_mod.unset_value(conn, key)
        except policy_mod.PolicyError as exc:
            raise click.ClickException(str(exc)) from None
    click.echo(f"{key} back to its default")


@click.command(name="events")
@click.option("--persona", type=int, default=None)
@click.option("--name", default=None, help="The soldier's name (current or former).")
@click.option("--platform", type=click.Choice([p.value for p in Platform]), default=None)
@click.option("--collector", default=None)
@click.option("--egress", default=None, help="The egress key (rate-limit domain).")
@click.option("--resource", type=click.Choice([kind.value for kind in JobKind]),
              default=None)
@click.option("--type", "event_type", default=None,
              type=click.Choice(EVENT_TYPE_NAMES))
@click.option("--since", default=None, help="ISO time or age: 15m, 6h, 7d")
@click.option("--until", default=None, help="ISO time or age (before now): 15m, 6h, 7d")
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
@json_async
async def events_cmd(ctx: click.Context, persona: int | None, name: str | None,
                     platform: str | None, collector: str | None, egress: str | None,
                     resource: str | None, event_type: str | None, since: str | None,
                     until: str | None, limit: int, as_json: bool) -> None:
    """Search the collector event log (newest first)."""
    try:
        name = parse_name(name, "--name") if name is not None else None
    except InputError as exc:
        raise click.BadParameter(exc.message, param_hint="--name") from None
    flt = EventFilter(persona, platform, collector, resource, event_type, parse_since(since),
                      parse_since(until), limit, name=name, egress=egress)
    async with database(ctx) as conn:
        rows = await search(conn, flt)
    echo_listing(rows, as_json, render,
                 "no events match" + (f" ({flt.describe()})" if flt.describe() else ""))


COMMANDS: list[click.Command] = [scheduler_group, retention_group, config_group, events_cmd]
