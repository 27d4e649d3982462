"""Where the databases are: an explicit URL, or the embedded server under the data directory."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from bf4ps.db import embedded
from bf4ps.settings import Settings

BF4PS_DB = "bf4ps"
BF4SW_DB = "bf4sw"

Conn = psycopg.AsyncConnection[dict[str, Any]]


def with_dbname(url: str, dbname: str) -> str:
    params = conninfo_to_dict(url)
    params["dbname"] = dbname
    return make_conninfo("", **params)


def admin_url(settings: Settings) -> str | None:
    """URL of the embedded server's maintenance database, or None when a URL is configured."""
    if settings.database_url:
        return None
    return embedded.start(settings.pgdata)


async def ensure_database(server_url: str, dbname: str) -> None:
    async with await psycopg.AsyncConnection.connect(server_url, autocommit=True) as conn:
        cur = await conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [dbname])
        if await cur.fetchone() is None:
            with contextlib.suppress(psycopg.errors.DuplicateDatabase):  # made concurrently
                await conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))


async def resolve_url(settings: Settings, dbname: str = BF4PS_DB) -> str:
    """The URL of a BF4PS-side database; on the embedded server it is created on first use."""
    if settings.database_url:
        if dbname == BF4PS_DB:
            return settings.database_url
        await ensure_database(settings.database_url, dbname)
        return with_dbname(settings.database_url, dbname)
    server = admin_url(settings)
    assert server is not None
    await ensure_database(server, dbname)
    return with_dbname(server, dbname)


async def configure(conn: Conn) -> None:
    await conn.execute("SET TIME ZONE 'UTC'")
    if not conn.autocommit:
        await conn.commit()


async def open_pool(url: str, *, max_size: int = 4, min_size: int = 1) -> AsyncConnectionPool[Conn]:
    pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        kwargs={"row_factory": dict_row, "autocommit": True, **KEEPALIVES,
                "application_name": _application()},
        configure=configure,
        open=False,
        reconnect_timeout=3600,
        check=AsyncConnectionPool.check_connection,
    )
    await pool.open(wait=True, timeout=30)
    return pool


# TCP keepalives: a peer whose host died is noticed within about a minute, so a session lock
# (the scheduler's leadership) is released and a standby takes over. Ignored on Unix sockets.
KEEPALIVES: dict[str, Any] = {"keepalives": 1, "keepalives_idle": 30,
                              "keepalives_interval": 10, "keepalives_count": 3}


def _application() -> str:
    from bf4ps.db.compat import application_name  # compat uses this module

    return application_name()


async def connect(url: str, **extra: Any) -> Conn:
    """One configured autocommit connection (the caller closes it)."""
    conn = await psycopg.AsyncConnection.connect(
        url, row_factory=dict_row, autocommit=True, **KEEPALIVES,
        **({"application_name": _application()} | extra))
    await configure(conn)
    return conn


@asynccontextmanager
async def connection(url: str) -> AsyncIterator[Conn]:
    conn = await connect(url)
    try:
        yield conn
    finally:
        await conn.close()
