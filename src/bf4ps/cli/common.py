"""Helpers shared by the command modules: settings from the click context, async running,
JSON output."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import wraps
from ipaddress import IPv4Address, IPv4Interface, IPv6Address, IPv6Interface
from typing import Any, Concatenate, NoReturn, ParamSpec, TypeVar
from uuid import UUID

import click
from pydantic import BaseModel

from bf4ps.db.compat import application_name
from bf4ps.db.connect import Conn, connection, resolve_url
from bf4ps.settings import Settings

P = ParamSpec("P")
R = TypeVar("R")


def settings_of(ctx: click.Context) -> Settings:
    obj = ctx.find_root().obj
    if not isinstance(obj, Settings):
        raise click.UsageError("internal: settings were not built by main()")
    return obj


def session_name() -> str:
    """The `application_name` of the running command's sessions (bf4ps.db.connect's
    name_sessions): `bf4ps/<build> schema=<K> <command>`, e.g. `... collector run`."""
    names: list[str] = []
    ctx = click.get_current_context(silent=True)
    while ctx is not None and ctx.parent is not None:  # the root's name is how it was run
        names.insert(0, ctx.info_name or "")
        ctx = ctx.parent
    return application_name(" ".join(names))


def run_async(fn: Callable[P, Awaitable[R]]) -> Callable[P, R]:
    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        return asyncio.run(fn(*args, **kwargs))  # type: ignore[arg-type]

    return wrapper


def json_async(fn: Callable[Concatenate[click.Context, P], Awaitable[R]]) -> Callable[P, R]:
    """An async command's body, given the click context and `--json` (its `as_json`)."""
    return click.option("--json", "as_json", is_flag=True)(click.pass_context(run_async(fn)))


@asynccontextmanager
async def database(ctx: click.Context) -> AsyncIterator[Conn]:
    """A connection to the BF4PS database of the command's settings."""
    async with connection(await resolve_url(settings_of(ctx))) as conn:
        yield conn


def _default(value: Any) -> Any:
    if isinstance(value, BaseModel):  # the read side's models (bf4ps.views)
        return value.model_dump()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # typed rows
        return dataclasses.asdict(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, UUID | IPv4Address | IPv6Address | IPv4Interface | IPv6Interface):
        return str(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def to_json(data: Any) -> str:
    return json.dumps(data, default=_default, sort_keys=True)


def echo_json(data: Any) -> None:
    click.echo(to_json(data))


def echo_listing(rows: Sequence[R], as_json: bool, line: Callable[[R], str], empty: str) -> None:
    """A listing command's output: the rows as JSON, else a line each (`empty` for none)."""
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        click.echo(line(row))
    if not rows:
        click.echo(empty)


def parse_since(value: str | None) -> datetime | None:
    """An ISO time (UTC unless it says otherwise) or an age (15m, 6h, 7d) before now."""
    if value is None:
        return None
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    if value[-1:] in units and value[:-1].isdigit():
        return datetime.now(UTC) - timedelta(seconds=int(value[:-1]) * units[value[-1]])
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(
            "use an ISO time (2026-11-30T12:00) or an age (15m, 6h, 7d)") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def fail(message: str, code: int = 1) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def listen(host: str, port: int) -> socket.socket:
    """A bound TCP socket for a server on host:port, made before any start-up work, so that an
    address in use (or a bad host) ends the command at once with one line naming the address
    instead of after the banner and the application's start-up."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)  # as uvicorn
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    return sock
