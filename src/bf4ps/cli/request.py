"""`bf4ps request NAME --platform P`: what the website's submit button does."""

from __future__ import annotations

import getpass
from datetime import UTC, datetime

import click

from bf4ps.cli.common import echo_json, fail, run_async, settings_of
from bf4ps.db.connect import connection, resolve_url
from bf4ps.domain import Platform
from bf4ps.interactive.inputs import InputError
from bf4ps.interactive.submit import RateLimited, UnknownSoldier, submit
from bf4ps.interactive.target import parse_target
from bf4ps.settings import SendTimings
from bf4ps.views import request_status
from bf4ps.views.request_status import SubmissionView


def _refusal(exc: InputError, platform: str | None) -> str:
    """An input refusal in the CLI's words (a URL is its NAME argument; --platform an option)."""
    if exc.field == "platform" and platform is None:
        return "platform: --platform is required with a soldier name"
    return f"{'NAME' if exc.field == 'url' else exc.field}: {exc.message}"


def _describe(sub: SubmissionView) -> str:
    target = f"soldier {sub.soldier_id}" if sub.soldier_id else f"lookup of {sub.lookup_name!r}"
    head = f"request {sub.request_id}: {sub.status} ({target})"
    if sub.reused:
        head += ", an open request for it already existed"
    lines = [head]
    if sub.resources:
        lines.append(f"  collects: {', '.join(sub.resources)} ({sub.jobs_created} new jobs)")
    else:
        lines.append("  nothing to collect: every resource is fresh")
    if sub.collector_serving is False:
        lines.append(f"  position {sub.position}; no interactive collector is online right "
                     "now: the request waits in the queue until one is")
    elif sub.eta_at is not None:
        wait = max(0.0, (sub.eta_at - datetime.now(UTC)).total_seconds())
        lines.append(f"  position {sub.position}; first Battlelog request expected at "
                     f"{sub.eta_at:%H:%M:%S} UTC (in ~{wait:.0f} s)")
        if sub.estimated_done_at is not None:
            lines.append(f"  all collected by about {sub.estimated_done_at:%H:%M:%S} UTC")
    lines.append(f"  status: {sub.status_url}")
    return "\n".join(lines)


@click.command(name="request")
@click.argument("name")
@click.option("--platform", "platform", type=click.Choice([p.value for p in Platform]),
              default=None, help="Required unless NAME is a Battlelog soldier URL.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@click.pass_context
@run_async
async def request(ctx: click.Context, name: str, platform: str | None, as_json: bool) -> None:
    """Request a fresh collection of soldier NAME (or a Battlelog soldier URL): queued as
    interactive work, never a synchronous Battlelog call."""
    settings = settings_of(ctx)
    try:
        target = parse_target(name=name, platform=platform)
        gate = SendTimings.from_settings(settings)
        async with connection(await resolve_url(settings)) as conn:
            sub = await submit(conn, target, client_key=f"cli:{getpass.getuser()}", gate=gate)
            view = await request_status.submission(conn, sub, gate)
    except InputError as exc:
        fail(_refusal(exc, platform), 2)
        return
    except (RateLimited, UnknownSoldier) as exc:
        fail(str(exc), 3)
        return
    if as_json:
        echo_json(view)  # the API's 202 body
    else:
        click.echo(_describe(view))


COMMANDS: list[click.Command] = [request]
