"""Where the databases are: an explicit URL, or the embedded server under the data directory."""

from __future__ import annotations

import contextlib
import time
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from bf4ps.db import embedded, queries
from bf4ps.db.queries import q
from bf4ps.settings import Settings

BF4PS_DB = "bf4ps"
BF4SW_DB = "bf4sw"

Conn = queries.Conn

# the database errors every long-running loop tells apart: any database failure, and the subset
# that is an outage (retry later) rather than a bug or bad data
DB_ERRORS = (psycopg.Error, PoolTimeout, OSError)
OUTAGE_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout, OSError)

SCHEDULER_LOCK = 0x4246_3450_5343_4844  # advisory lock "BF4PSCHD": the leading scheduler's


def _unnamed() -> str | None:
    return None


_session_name: Callable[[], str | None] = _unnamed


def name_sessions(namer: Callable[[], str | None]) -> None:
    """How the sessions this process opens from now on name themselves (`application_name`,
    which `bf4ps db status` reads): asked at each connect. The CLI names them after the
    command it runs (bf4ps.cli.common.session_name); unnamed, libpq's default applies."""
    global _session_name
    _session_name = namer


def _application() -> dict[str, str]:
    name = _session_name()
    return {"application_name": name} if name else {}


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
        cur = await conn.execute(q("database_exists"), {"dbname": dbname})
        if await cur.fetchone() is None:
            with contextlib.suppress(psycopg.errors.DuplicateDatabase):  # made concurrently
                await conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))


@dataclass(frozen=True)
class SessionBounds:
    """How long a session may wait for a lock, sit idle in a transaction, run a statement, and
    how soon either end of its TCP connection gives a silent peer up (docs/architecture.md
    "Session bounds"). Carried by the connection string, so every session opened from it (a
    pool's, the heartbeat's own) has them. Seconds; 0 or None: not set."""

    lock_timeout: float
    idle_in_transaction: float
    statement_timeout: float | None
    keepalives_idle: int
    keepalives_interval: int
    keepalives_count: int
    tcp_user_timeout: float

    @classmethod
    def of(cls, settings: Settings, *, service: bool = False) -> SessionBounds:
        """`service`: a collector's or the website's sessions, whose statements are all short
        (they get the statement timeout); others (scheduler, commands) run long maintenance."""
        return cls(settings.db_lock_timeout_seconds,
                   settings.db_idle_in_transaction_timeout_seconds,
                   settings.db_statement_timeout_seconds if service else None,
                   settings.db_keepalives_idle_seconds, settings.db_keepalives_interval_seconds,
                   settings.db_keepalives_count, settings.db_tcp_user_timeout_seconds)

    def server_options(self) -> dict[str, int]:
        """Session settings for the server (milliseconds and seconds, as PostgreSQL takes
        them): its own keepalives end a vanished client's session and its locks."""
        ms = {"lock_timeout": self.lock_timeout,
              "idle_in_transaction_session_timeout": self.idle_in_transaction,
              "statement_timeout": self.statement_timeout or 0.0,
              "tcp_user_timeout": self.tcp_user_timeout}
        opts = {k: round(v * 1000) for k, v in ms.items() if v}
        return opts | {"tcp_keepalives_idle": self.keepalives_idle,
                       "tcp_keepalives_interval": self.keepalives_interval,
                       "tcp_keepalives_count": self.keepalives_count}

    def client_params(self) -> dict[str, int]:
        """libpq's own keepalives and user timeout (ignored on Unix sockets)."""
        return {"keepalives": 1, "keepalives_idle": self.keepalives_idle,
                "keepalives_interval": self.keepalives_interval,
                "keepalives_count": self.keepalives_count,
                "tcp_user_timeout": round(self.tcp_user_timeout * 1000)}

    def apply(self, url: str) -> str:
        """`url` with these bounds; what the URL itself already sets wins."""
        params = conninfo_to_dict(url)
        for key, value in self.client_params().items():
            params.setdefault(key, str(value))
        ours = " ".join(f"-c {k}={v}" for k, v in self.server_options().items())
        params["options"] = f"{ours} {params['options']}" if params.get("options") else ours
        return make_conninfo("", **params)


def bounded_url(url: str, settings: Settings, *, service: bool = False) -> str:
    return SessionBounds.of(settings, service=service).apply(url)


async def resolve_url(settings: Settings, dbname: str = BF4PS_DB, *,
                      service: bool = False) -> str:
    """The URL of a BF4PS-side database, with the session bounds of the settings (`service`:
    see SessionBounds.of); on the embedded server it is created on first use."""
    return bounded_url(await _plain_url(settings, dbname), settings, service=service)


async def _plain_url(settings: Settings, dbname: str) -> str:
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
    await conn.execute(q("session_utc"))
    if not conn.autocommit:
        await conn.commit()


class IdleCheck:
    """A pool's connection check that pays its round trip only for a connection that sat in
    the pool `after` seconds or more. One that came back within that time worked a moment ago:
    checking it too would cost every request a round trip (the website's ~0.4 ms of CPU a
    request on a 2-core host), and a pool in steady use hands out only such connections. The
    price: a connection the server dropped within `after` seconds of its last use fails the
    request that gets it (and the pool replaces it), where a checked one would be replaced
    first."""

    def __init__(self, after: float) -> None:
        self.after = after
        self._returned: weakref.WeakKeyDictionary[Conn, float] = weakref.WeakKeyDictionary()

    async def returned(self, conn: Conn) -> None:
        """The pool's reset callback: when the connection came back."""
        self._returned[conn] = time.monotonic()

    async def check(self, conn: Conn) -> None:
        at = self._returned.get(conn)
        if at is None or time.monotonic() - at >= self.after:
            await AsyncConnectionPool.check_connection(conn)


async def open_pool(url: str, *, max_size: int = 4, min_size: int = 1,
                    check_idle_after: float | None = None,
                    wait: bool = True,
                    prepare_threshold: int | None = 5) -> AsyncConnectionPool[Conn]:
    """A pool whose connections are checked before each use; with `check_idle_after`, only
    those idle that long (IdleCheck). `wait`: return once its connections are made (else at
    once: a server that is down now is connected to when it is back). `prepare_threshold`:
    the executions of a query on a connection before psycopg makes it a prepared statement
    (psycopg's default 5; 0 at once)."""
    idle = IdleCheck(check_idle_after) if check_idle_after is not None else None
    pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        kwargs={"row_factory": dict_row, "autocommit": True,
                "prepare_threshold": prepare_threshold, **_application()},
        configure=configure,
        open=False,
        reconnect_timeout=3600,
        check=idle.check if idle else AsyncConnectionPool.check_connection,
        reset=idle.returned if idle else None,
    )
    await pool.open(wait=wait, timeout=30)
    return pool


async def connect(url: str, **extra: Any) -> Conn:
    """One configured autocommit connection (the caller closes it). Its session bounds are
    the URL's (resolve_url)."""
    conn = await psycopg.AsyncConnection.connect(
        url, row_factory=dict_row, autocommit=True,
        **(_application() | extra))
    await configure(conn)
    return conn


@asynccontextmanager
async def connection(url: str) -> AsyncIterator[Conn]:
    conn = await connect(url)
    try:
        yield conn
    finally:
        await conn.close()
