"""`bf4ps web run`: the website and JSON API under uvicorn."""

from __future__ import annotations

import asyncio

import click

from bf4ps.cli.common import listen, settings_of
from bf4ps.db import compat
from bf4ps.db.connect import resolve_url
from bf4ps.settings import Settings


@click.group(name="web")
def group() -> None:
    """The website: soldier pages, submissions, the operator console, the JSON API."""


@group.command(name="run")
@click.option("--host", default=None, help="Bind address (default: BF4PS_WEB_HOST).")
@click.option("--port", default=None, type=click.IntRange(1, 65535),
              help="Port (default: BF4PS_WEB_PORT).")
@click.pass_context
def run(ctx: click.Context, host: str | None, port: int | None) -> None:
    """Serve until interrupted (Ctrl-C / SIGTERM stop it cleanly)."""
    import uvicorn

    from bf4ps.web.app import create_app

    settings = settings_of(ctx)
    host = host or settings.web_host
    port = port or settings.web_port
    if not (settings.ops_username and settings.ops_password) and not settings.ops_local_demo:
        click.echo("note: the operator console is disabled until BF4PS_OPS_USERNAME and "
                   "BF4PS_OPS_PASSWORD are set", err=True)
    asyncio.run(require_schema(settings))
    sock = listen(host, port)
    click.echo(f"BF4PS website on http://{host}:{port}/")
    config = uvicorn.Config(create_app(settings, serving=True), host=host, port=port,
                            log_level=settings.log_level.lower(), access_log=False,
                            proxy_headers=True)
    uvicorn.Server(config).run(sockets=[sock])


async def require_schema(settings: Settings) -> None:
    await compat.require(await resolve_url(settings))


COMMANDS: list[click.Command] = [group]
