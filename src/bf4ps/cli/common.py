"""Helpers shared by the command modules: settings from the click context, async running,
JSON output."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from datetime import datetime
from decimal import Decimal
from functools import wraps
from ipaddress import IPv4Address, IPv4Interface, IPv6Address, IPv6Interface
from typing import Any, ParamSpec, TypeVar
from uuid import UUID

import click

from bf4ps.settings import Settings

P = ParamSpec("P")
R = TypeVar("R")


def settings_of(ctx: click.Context) -> Settings:
    obj = ctx.find_root().obj
    if not isinstance(obj, Settings):
        raise click.UsageError("internal: settings were not built by main()")
    return obj


def run_async(fn: Callable[P, Awaitable[R]]) -> Callable[P, R]:
    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        return asyncio.run(fn(*args, **kwargs))  # type: ignore[arg-type]

    return wrapper


def _default(value: Any) -> Any:
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


def fail(message: str, code: int = 1) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)
