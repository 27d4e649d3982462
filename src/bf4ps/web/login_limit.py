"""Failed operator logins, limited per client network and per account with a growing delay:
each attempt with wrong credentials is counted before it is answered, a right one only when
it would be refused (`verified`); the first `free` within `forget_after` are answered, the next
is refused and locks that client and that account out (from `delay`), and once a lock is over
one attempt is answered and starts the next, twice as long (up to `max_delay`); while locked,
/ops answers 429 with Retry-After whatever the password, so guessing goes no faster than the
lock allows, however many guesses arrive at once (the count is atomic per key). A success
clears both records. The counts live in the database (ops_login_failures, written only through
bf4ps_ops_login_attempt, db/functions/access.sql), so every web process and a restart share
them; every failure and refusal is one log line (docs/operations.md gives the fail2ban filter)
and counted in a metric."""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import NamedTuple

from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows
from bf4ps.settings import Settings


@dataclass(frozen=True)
class LoginPolicy:
    """The lock-out's figures: the BF4PS_OPS_LOGIN_* settings (defaults there)."""

    free: int
    delay: float
    max_delay: float
    forget_after: float

    @classmethod
    def from_settings(cls, s: Settings) -> LoginPolicy:
        return cls(s.ops_login_free_failures, s.ops_login_delay_seconds,
                   s.ops_login_max_delay_seconds, s.ops_login_forget_seconds)


@dataclass(frozen=True)
class Standing:
    """The worst of the keys: seconds until they may try again (0: now), failures in a row."""

    wait: float
    failures: int


class _Attempt(NamedTuple):
    wait_seconds: float
    failures: int


class LoginLimiter:
    def __init__(self, policy: LoginPolicy,
                 connect: Callable[[], AbstractAsyncContextManager[Conn]]) -> None:
        self.policy = policy
        self._connect = connect

    async def standing(self, *keys: str) -> Standing:
        return await self._attempt(keys, "check")

    async def attempt(self, *keys: str) -> Standing:
        """Count an attempt for each key before its password is compared (in the database,
        each key's row locked: concurrent attempts are counted one after another); a wait
        above 0 refuses it unread. A success is cleared by `succeeded`."""
        return await self._attempt(keys, "attempt")

    async def verified(self, *keys: str) -> Standing:
        """Right credentials: nothing counted and the keys' records cleared, unless an attempt
        now would be refused (a key locked, or past its free attempts): then counted as an
        attempt, and a wait above 0 refuses it. One round trip and, in the common case, no
        write: concurrent right logins (a dashboard polling the console) never add up to a
        lock-out of their own."""
        return await self._attempt(keys, "verified")

    async def succeeded(self, *keys: str) -> None:
        await self._attempt(keys, "succeeded")

    async def _attempt(self, keys: tuple[str, ...], outcome: str) -> Standing:
        p = self.policy
        async with self._connect() as conn:
            rows = await all_rows(conn, _Attempt, "ops_login_attempt", {
                "keys": list(keys), "outcome": outcome, "free": p.free, "delay": p.delay,
                "max_delay": p.max_delay, "forget_after": p.forget_after})
        return Standing(max((r.wait_seconds for r in rows), default=0.0),
                        max((r.failures for r in rows), default=0))


def retry_header(seconds: float) -> str:
    return str(max(1, math.ceil(seconds)))
