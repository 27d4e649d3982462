"""Starting against a database that is briefly away: a process whose first connections meet a
PostgreSQL that refuses them, is shutting down or is starting up (a restart, a fail-over)
waits it out with a bounded backoff and one log line per attempt, instead of exiting and
waiting for its unit's restart delay. Everything else — a wrong password, a role or database
that does not exist, pg_hba.conf, TLS — is a configuration problem and is raised at once."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import psycopg
from psycopg_pool import PoolTimeout

from bf4ps.waiting import sleep_unless_stopped

log = logging.getLogger(__name__)
T = TypeVar("T")

# libpq's and the server's words for "not now" (lower case): a connection attempt these end is
# worth repeating. An authentication, a missing role or database, pg_hba.conf or a certificate
# problem is not among them.
TRANSIENT = (
    "connection refused",
    "the database system is shutting down",
    "the database system is starting up",
    "the database system is in recovery mode",
    "the database system is not yet accepting connections",
    "the database system is not accepting connections",
    "server closed the connection unexpectedly",
    "terminating connection due to administrator command",
    "consuming input failed",
    "could not receive data from server",
    "ssl connection has been closed unexpectedly",
    "ssl syscall error",
    "on socket",  # a Unix socket gone while the server restarts ("No such file or directory")
)
NOT_TRANSIENT = ("password authentication failed", "does not exist", "pg_hba.conf",
                 "no encryption", "certificate", "ssl error", "sslmode", "permission denied")
FIRST_DELAY = 0.5
MAX_DELAY = 10.0


def transient(exc: BaseException) -> bool:
    """True for a database that is away for a moment, False for any other failure."""
    if isinstance(exc, PoolTimeout):
        return True
    if not isinstance(exc, psycopg.OperationalError):
        return False
    text = str(exc).lower()
    if any(word in text for word in NOT_TRANSIENT):
        return False
    return any(word in text for word in TRANSIENT)


def first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0].strip() if lines else type(exc).__name__


async def retrying(start: Callable[[], Awaitable[T]], stop: asyncio.Event, *,
                   give_up_after: float, what: str = "start") -> T | None:
    """`start()`, repeated while it fails with a transient database error, the delay doubling
    from FIRST_DELAY to MAX_DELAY, for at most `give_up_after` seconds (then the last error is
    raised). None when `stop` is set meanwhile. Other errors are raised at once."""
    deadline = time.monotonic() + give_up_after
    delay = FIRST_DELAY
    attempt = 1
    while True:
        try:
            return await start()
        except Exception as exc:
            left = deadline - time.monotonic()
            if not transient(exc) or left <= 0:
                raise
            wait = min(delay, MAX_DELAY, left)
            log.warning("database unavailable at %s (attempt %d: %s): retrying in %.1f s, "
                        "for up to %.0f s more", what, attempt, first_line(exc), wait, left)
        if not await sleep_unless_stopped(stop, wait):
            return None
        delay *= 2
        attempt += 1
