"""`bf4ps flags list|clear`: the progress flags the checks after storage raised (an interval
over the policy ceilings keeps its soldier off every leaderboard) and an operator's clear."""

from __future__ import annotations

import getpass

import click

from bf4ps.cli.common import database, echo_json, fail, run_async
from bf4ps.stats import progress_flags
from bf4ps.views import flags as flags_view


@click.group(name="flags")
def group() -> None:
    """Progress flags: impossible interval rates kept off the leaderboards."""


@group.command(name="list")
@click.option("--all", "include_cleared", is_flag=True, help="Cleared flags too.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=200, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@click.pass_context
@run_async
async def list_flags(ctx: click.Context, include_cleared: bool, limit: int,
                     as_json: bool) -> None:
    """The open flags, newest first (with --all, cleared ones and who cleared them)."""
    async with database(ctx) as conn:
        found = await flags_view.flags(conn, include_cleared=include_cleared, limit=limit)
    if as_json:
        echo_json(found)
        return
    if not found.flags:
        click.echo("no open flags" if not include_cleared else "no flags")
        return
    for f in found.flags:
        item = f" {f.kind} {f.item_id}" if f.item_id is not None else ""
        state = (f"cleared {f.cleared_at:%Y-%m-%d %H:%M} by {f.cleared_by}"
                 if f.cleared_at else "open")
        click.echo(f"{f.flag_id:>6}  {f.name} ({f.platform} {f.persona_id}){item}  "
                   f"{f.started_at:%Y-%m-%d %H:%M}–{f.ended_at:%H:%M} UTC  {f.reason}  [{state}]")
    click.echo(f"{found.open} open")


@group.command(name="clear")
@click.argument("flag_id", type=click.IntRange(1))
@click.option("--note", default=None, help="Why (kept on the flag and in its event).")
@click.option("--by", "by", default=None, help="Who clears it (default: the OS user).")
@click.pass_context
@run_async
async def clear(ctx: click.Context, flag_id: int, note: str | None, by: str | None) -> None:
    """Clear flag FLAG_ID: its soldier is back on the leaderboards once no open flag is left
    (the boards are rebuilt at once)."""
    who = by or f"cli:{getpass.getuser()}"
    async with database(ctx) as conn:
        try:
            done = await progress_flags.clear(conn, flag_id, by=who, note=note)
        except progress_flags.FlagNotOpen as exc:
            fail(str(exc), 3)
    click.echo(f"flag {done.flag_id} cleared by {who}; gains boards rebuilt "
               f"({done.board_rows} rows)")


COMMANDS = [group]
