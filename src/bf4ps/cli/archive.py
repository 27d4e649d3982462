"""`bf4ps battlelog show` and `bf4ps battlelog replay`: the archived raw answers
(stats/archive.py, views/answers.py).

``show`` prints what Battlelog answered one soldier (newest first: when, HTTP status, outcome,
sizes, and the body, cut unless ``--full``), and the soldier's suspect runs (implausible answers
waiting to be believed as a reset, an unconfirmed first answer of zeros). ``replay`` parses the
answers stored as current since a time with today's parser and reports per row what would
change against the stored current statistics (exit code 0 either way; 3 when a row would
change or the parser now refuses an answer, so a script can gate a deployment on it).
"""

from __future__ import annotations

import click
import orjson

from bf4ps.cli.common import database, echo_json, json_async, parse_since
from bf4ps.domain import Platform, Resource
from bf4ps.views import answers

RESOURCES = [r.value for r in Resource]
BODY_PREVIEW = 600
CHANGES_SHOWN = 8
REPLAY_CHANGED = 3  # exit code: some row would change


@click.command(name="show")
@click.option("--persona", type=int, required=True, help="The soldier's persona id.")
@click.option("--resource", type=click.Choice(RESOURCES), required=True)
@click.option("--platform", type=click.Choice([p.value for p in Platform]), default=None)
@click.option("--limit", type=click.IntRange(1, 100), default=10, show_default=True)
@click.option("--full", is_flag=True, help="Print whole bodies, not their first characters.")
@json_async
async def show_command(ctx: click.Context, persona: int, resource: str, platform: str | None,
                       limit: int, full: bool, as_json: bool) -> None:
    """The archived raw answers of one soldier's resource, newest first."""
    async with database(ctx) as conn:
        found = await answers.show(conn, persona, Resource(resource),
                                   Platform(platform) if platform else None, limit)
    if as_json:
        echo_json(found)
        return
    for s in found.suspects:
        click.echo(f"suspect {s.resource}: {s.kind}, {s.answers} answer(s) "
                   f"{s.first_at:%Y-%m-%d %H:%M:%S} .. {s.last_at:%Y-%m-%d %H:%M:%S} UTC")
    if not found.answers:
        click.echo(f"no archived {resource} answers of persona {persona}")
    for a in found.answers:
        click.echo(f"#{a.answer_id} {a.received_at:%Y-%m-%d %H:%M:%S} UTC  HTTP "
                   f"{a.http_status or '-'}  {a.outcome}  {a.body_bytes} bytes "
                   f"({a.stored_bytes} stored)")
        text = a.body if isinstance(a.body, str) else orjson.dumps(a.body).decode()
        click.echo("  " + (text if full or len(text) <= BODY_PREVIEW
                           else text[:BODY_PREVIEW] + " …"))


@click.command(name="replay")
@click.option("--since", required=True, help="ISO time or age: 15m, 6h, 7d")
@click.option("--resource", type=click.Choice(RESOURCES), default=None)
@json_async
async def replay_command(ctx: click.Context, since: str, resource: str | None,
                         as_json: bool) -> None:
    """Parse the archived answers stored since SINCE with this version's parsers; report per
    soldier and resource what would change against the stored current statistics."""
    when = parse_since(since)
    assert when is not None
    async with database(ctx) as conn:
        report = await answers.replay(conn, when, Resource(resource) if resource else None)
    if as_json:
        echo_json(report)
    else:
        click.echo(f"{report.examined} archived answers since {when:%Y-%m-%d %H:%M:%S} UTC; "
                   f"{len(report.rows)} would change")
        for row in report.rows:
            head = (f"persona {row.persona_id} ({row.platform}) {row.resource} "
                    f"#{row.answer_id}")
            if row.error:
                click.echo(f"{head}: the parser now refuses it: {row.error}")
                continue
            shown = ", ".join(f"{c.field} {c.stored!r} -> {c.replayed!r}"
                              for c in row.changes[:CHANGES_SHOWN])
            more = (f" (+{len(row.changes) - CHANGES_SHOWN} more)"
                    if len(row.changes) > CHANGES_SHOWN else "")
            click.echo(f"{head}: {len(row.changes)} field(s): {shown}{more}")
    if report.rows:
        ctx.exit(REPLAY_CHANGED)


BATTLELOG_COMMANDS = (show_command, replay_command)  # of `bf4ps battlelog` (cli/main.py)
