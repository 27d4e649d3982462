"""The website's read replica (BF4PS_READ_DATABASE_URL): which reads may go to it, how stale it
is, and what happens when it lags or is down (docs/operations.md "Read replica").

How stale: every check interval the watcher notes the primary's WAL position with the time,
then asks the replica how far it has replayed. The replica holds everything the primary had
committed at the newest noted time whose position it has replayed past, so its staleness is at
most the time since then (plus the time since the check: a watcher that stalls makes the replica
look staler, never fresher). A read goes to the replica only while that bound is within
BF4PS_READ_MAX_LAG_SECONDS; otherwise, and while the replica cannot be reached, it goes to the
primary. A read whose replica connection fails midway raises ReplicaLost, and ReplicaRetry runs
the (GET) request again, on the primary.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import NamedTuple

import psycopg
from prometheus_client.core import GaugeMetricFamily, Metric
from psycopg_pool import AsyncConnectionPool, PoolTimeout
from starlette.datastructures import MutableHeaders
from starlette.types import Message, Receive, Scope, Send

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one_row
from bf4ps.web.security import HttpMiddleware

log = logging.getLogger(__name__)

READ_SOURCE = "bf4ps.read_source"  # scope key: "replica" or "primary", for the response header
READ_PRIMARY = "bf4ps.read_primary"  # scope key: this request's reads go to the primary
HEADER = "x-bf4ps-read-source"
CHECK_TIMEOUT_SECONDS = 2.0  # a replica that takes longer to answer its check is down
REACHED = (psycopg.Error, PoolTimeout, TimeoutError, OSError)


class ReplicaLost(Exception):
    """The replica's connection failed during a read: the request is run again (ReplicaRetry)."""


class ReplicaMiss(ReplicaLost):
    """What the request asks for is not on the replica (yet: a soldier found a moment ago):
    the request is run again, its reads on the primary."""


def missing(scope: Scope) -> None:
    """A read found nothing: if it was the replica's, ask the primary (ReplicaMiss)."""
    if scope.get(READ_SOURCE) == "replica":
        raise ReplicaMiss


def staleness(samples: Iterable[tuple[float, int]], replayed: int,
              now: float) -> tuple[float, bool] | None:
    """How old the replica's data is at `now`, and whether that is an upper bound: the age of
    the newest (time, primary WAL position) sample it has replayed past (True); behind every
    sample kept, the age of the oldest (a lower bound: False). None: no sample."""
    newest, oldest = None, None
    for at, lsn in samples:
        oldest = at if oldest is None else oldest
        if replayed >= lsn:
            newest = at
    if newest is not None:
        return now - newest, True
    return None if oldest is None else (now - oldest, False)


class _Lsn(NamedTuple):
    lsn: Decimal  # bytes of WAL since 0/0


class _Replay(NamedTuple):
    standby: bool
    lsn: Decimal | None


@dataclass
class ReadReplica:
    pool: AsyncConnectionPool[Conn]
    primary: AsyncConnectionPool[Conn]
    max_lag: float
    samples: deque[tuple[float, int]] = field(default_factory=deque)
    lag: float | None = None  # at the last check; None: down or not a replica
    bounded: bool = False  # lag is an upper bound (else a lower one: behind every sample)
    checked_at: float = 0.0
    state: str = "unknown"  # up | behind | down | not a replica

    @property
    def interval(self) -> float:
        return min(1.0, self.max_lag / 4)

    def bound(self, now: float | None = None) -> float | None:
        """How stale the replica's reads may be now (None: unknown, not to be used)."""
        if self.lag is None:
            return None
        return self.lag + ((time.monotonic() if now is None else now) - self.checked_at)

    def fresh(self) -> bool:
        bound = self.bound()
        return self.bounded and bound is not None and bound <= self.max_lag

    async def watch(self) -> None:
        while True:
            await self.check()
            await asyncio.sleep(self.interval)

    async def check(self) -> None:
        try:
            async with self.primary.connection(timeout=CHECK_TIMEOUT_SECONDS) as conn:
                lsn = int((await one_row(conn, _Lsn, "replica_primary_lsn")).lsn)
        except REACHED:
            return  # the primary's own trouble: the replica's state stays as it was
        now = time.monotonic()
        self.samples.append((now, lsn))
        while self.samples and now - self.samples[0][0] > 2 * self.max_lag + self.interval:
            self.samples.popleft()
        try:
            async with asyncio.timeout(CHECK_TIMEOUT_SECONDS):
                async with self.pool.connection(timeout=CHECK_TIMEOUT_SECONDS) as conn:
                    row = await one_row(conn, _Replay, "replica_replay_lsn")
        except REACHED as exc:
            self._set(None, "down", str(exc).splitlines()[0] if str(exc) else repr(exc))
            return
        if not row.standby or row.lsn is None:
            self._set(None, "not a replica", "it is not in recovery")
            return
        found = staleness(self.samples, int(row.lsn), time.monotonic())
        assert found is not None  # a sample was just added
        lag, bounded = found
        up = bounded and lag <= self.max_lag
        self._set(lag, "up" if up else "behind",
                  f"{'' if bounded else 'over '}{lag:.1f} s behind", bounded=bounded)

    def _set(self, lag: float | None, state: str, why: str, *, bounded: bool = False) -> None:
        self.lag, self.bounded, self.checked_at = lag, bounded, time.monotonic()
        if state != self.state:
            level = logging.INFO if state == "up" else logging.WARNING
            log.log(level, "read replica %s (%s): reads go to the %s", state, why,
                    "replica" if state == "up" else "primary")
            self.state = state

    def lost(self) -> None:
        """A read failed on the replica: nothing more goes to it until a check succeeds."""
        self._set(None, "down", "a read failed")

    def families(self) -> list[Metric]:
        lag = GaugeMetricFamily("bf4ps_read_replica_lag_seconds", "How stale the read "
                                "replica's data may be (at least this, when it is behind "
                                "every check kept; NaN: down or not a replica)")
        bound = self.bound()
        lag.add_metric([], float("nan") if bound is None else bound)
        up = GaugeMetricFamily("bf4ps_read_replica_up", "1 while the website's public reads "
                               "go to the read replica (reachable and within the bound)")
        up.add_metric([], 1.0 if self.fresh() else 0.0)
        return [lag, up]


class ReplicaRetry(HttpMiddleware):
    """Runs a GET or HEAD request again (its reads then on the primary) when a read on the
    replica failed or missed before the response began, and names the server its reads came
    from in a header. Other methods read nothing that may be stale (db(), never read_db())."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] in ("GET", "HEAD"):
            await self._read(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _read(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def send_with_source(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if source := scope.get(READ_SOURCE):
                    MutableHeaders(scope=message).append(HEADER, source)
            await send(message)

        try:
            await self.app(scope, receive, send_with_source)
        except ReplicaLost:
            if started:
                raise
            scope.pop(READ_SOURCE, None)
            scope[READ_PRIMARY] = True
            await self.app(scope, receive, send_with_source)
