"""`bf4ps db upgrade|status|vouch|grant` and `bf4ps status`."""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import NamedTuple

import click
import psycopg

from bf4ps.cli.common import database, echo_json, fail, run_async, settings_of
from bf4ps.db import compat, migrate
from bf4ps.db.connect import connection, resolve_url
from bf4ps.db.queries import all_rows, q
from bf4ps.gates import restore
from bf4ps.views.fleet_status import render_status, status_report


@click.group(name="db")
def group() -> None:
    """Database schema: migrations."""


@group.command()
@click.pass_context
@run_async
async def upgrade(ctx: click.Context) -> None:
    """Apply pending migrations, then re-apply the database code files that changed (safe to
    run from several hosts at once)."""
    url = await resolve_url(settings_of(ctx))
    done = await migrate.upgrade_all(url)
    for mig in done.migrations:
        click.echo(f"applied {mig.version:04d}_{mig.name}")
    for f in done.code:
        click.echo(f"applied code {f.name}")
    if not done.migrations and not done.code:
        click.echo("schema is up to date")


@group.command(name="status")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@click.pass_context
@run_async
async def db_status(ctx: click.Context, as_json: bool) -> None:
    """Applied and pending migrations."""
    url = await resolve_url(settings_of(ctx))
    st = await migrate.status(url)
    procs = await connected(url)
    if as_json:
        echo_json({"server_version": st.server_version,
                   "applied": [{"version": v, "name": n, "applied_at": t}
                               for v, n, t in st.applied],
                   "pending": [{"version": m.version, "name": m.name} for m in st.pending],
                   "code_pending": st.code_pending,
                   "processes": [asdict(p) for p in procs]})
        return
    click.echo(f"PostgreSQL {st.server_version}")
    for version, name, at in st.applied:
        click.echo(f"  applied  {version:04d}_{name}  {at:%Y-%m-%d %H:%M:%S} UTC")
    for mig in st.pending:
        click.echo(f"  pending  {mig.version:04d}_{mig.name}")
    for name in st.code_pending:
        click.echo(f"  pending  code {name}")
    if not st.pending:
        click.echo("schema is up to date")
    click.echo(f"connected processes ({len(procs)}):")
    for pr in procs:
        verdict = "compatible" if pr.compatible else f"NOT compatible: {pr.problem}"
        click.echo(f"  bf4ps {pr.build} (schema {pr.schema:04d}) {pr.command or '?'}"
                   f"  from {pr.client or 'local'} as {pr.login}, {pr.sessions} "
                   f"session(s)  {verdict}")


@dataclass(frozen=True, slots=True)
class Process:
    """A BF4PS process connected to the database, and whether its build fits the schema."""

    build: str
    schema: int
    command: str  # "" when the process did not name it
    client: str | None
    login: str
    sessions: int
    since: datetime
    compatible: bool
    problem: str | None


class _Connected(NamedTuple):
    application_name: str
    client_addr: str | None
    login: str
    backend_start: datetime
    sessions: int


async def connected(url: str) -> list[Process]:
    """The BF4PS processes connected to the database (by application_name), each with
    whether its build can work with the schema (bf4ps.db.compat)."""
    async with connection(url) as conn:
        schema = await compat.state(conn)
        rows = await all_rows(conn, _Connected, "connected_processes")
    seen: dict[tuple[str, str | None], Process] = {}
    for row in rows:
        parsed = compat.parse_application(row.application_name)
        if parsed is None or parsed[2] == "db status":
            continue
        build, version, command = parsed
        problem = schema.problem(version, build)
        seen.setdefault((row.application_name, row.client_addr), Process(
            build=build, schema=version, command=command, client=row.client_addr,
            login=row.login, sessions=row.sessions, since=row.backend_start,
            compatible=problem is None, problem=problem))
    return list(seen.values())


@group.command(name="vouch")
@click.option("--reason", required=True,
              help="Why this server start is the database the fleet knew (recorded).")
@click.pass_context
@run_async
async def db_vouch(ctx: click.Context, reason: str) -> None:
    """Vouch, as an operator, that the running server is the database the fleet knew: for a
    server started while every collector was down, which the restore guard otherwise holds one
    budget window. Audited; leaves a detected restore's hold as it is."""
    async with database(ctx) as conn:
        try:
            done = await restore.vouch(conn, reason)
        except (psycopg.errors.InsufficientPrivilege,
                psycopg.errors.InvalidParameterValue) as exc:
            fail(str(exc).splitlines()[0])
    click.echo(vouch_text(done))
    if done.outcome == "no guard":
        sys.exit(1)


def vouch_text(done: restore.Vouch) -> str:
    def at(t: datetime | None) -> str:
        return f"{t:%Y-%m-%d %H:%M:%S} UTC" if t else "?"
    if done.outcome == "no guard":
        return ("no restore guard row: a restore is under way (run `bf4ps db upgrade` after it); "
                "nothing was vouched for")
    lines = [f"vouched for the server started at {at(done.run_started_at)}: the run rule no "
             "longer holds sends (recorded in the settings audit)"
             if done.outcome == "vouched" else
             f"the server started at {at(done.run_started_at)} was already vouched for at "
             f"{at(done.vouched_at)}: nothing changed"]
    if done.remaining is not None:
        lines.append(f"still held until {at(done.remaining.until)} by a detected restore: "
                     f"{done.remaining.reason}")
    return "\n".join(lines)


ROLES = ("bf4ps_collector", "bf4ps_scheduler", "bf4ps_web", "bf4ps_operator")


@group.command()
@click.argument("role", type=click.Choice(ROLES))
@click.argument("login_role")
@click.pass_context
@run_async
async def grant(ctx: click.Context, role: str, login_role: str) -> None:
    """Grant one of BF4PS's group roles to an existing login role (run as the schema owner,
    or as an operator for the three process roles)."""
    async with database(ctx) as conn:
        try:
            await conn.execute(q("grant_role"), {"role": role, "login": login_role})
        except (psycopg.errors.InsufficientPrivilege, psycopg.errors.UndefinedObject,
                psycopg.errors.InvalidParameterValue) as exc:
            fail(str(exc).splitlines()[0])
    click.echo(f"granted {role} to {login_role}")


@click.command(name="status")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@click.option("--window", default=3600.0, show_default=True,
              help="Throughput and budget-use window, seconds.")
@click.pass_context
@run_async
async def status(ctx: click.Context, as_json: bool, window: float) -> None:
    """Fleet health, queue depth (actionable) vs coverage (backlog), throughput."""
    async with database(ctx) as conn:
        report = await status_report(conn, window)
    if as_json:
        echo_json(report)
    else:
        click.echo(render_status(report))


COMMANDS: list[click.Command] = [group, status]
