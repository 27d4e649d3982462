"""Parking after consecutive failures requires them to be of a parking class (queue/finalize.py
`_parking_streak`, ErrorClass.parks): an outage's failures (5xx, redirects, timeouts ...) and
soft throttles in the streak never count toward parking; only a run of malformed payloads (or
a not-found, at once) parks. The real queue engine on a real PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from bf4ps.db.connect import Conn
from bf4ps.domain import ErrorClass
from bf4ps.policy import Policy
from bf4ps.queue import finalize
from bf4ps.queue.finalize import Attempt
from bf4ps.queue.jobs import CollectorRef
from tests.helpers import make_collector, make_soldier, started_job

POLICY = Policy(max_consecutive_failures=3, backoff_seconds=(1, 1, 1), backoff_jitter=0)


async def attempt(conn: Conn, me: CollectorRef, soldier: int, error: ErrorClass,
                  details: dict[str, object] | None = None) -> str:
    job = await started_job(conn, me, soldier)
    outcome = await finalize.fail(conn, me, job, error, "x", Attempt(500, 5, details), POLICY)
    return outcome.event.value


async def test_outage_failures_in_the_streak_never_count_toward_parking(
        conn: Conn, tmp_path: Path) -> None:
    me = await make_collector(conn, tmp_path, "park-1")
    soldier = await make_soldier(conn, 3_000_001)
    outages = [await attempt(conn, me, soldier, error) for error in
               (ErrorClass.SERVER, ErrorClass.TIMEOUT, ErrorClass.SERVER,
                ErrorClass.UNRECOGNIZED, ErrorClass.IMPLAUSIBLE, ErrorClass.SERVER)]
    assert set(outages) == {"retry_scheduled"}  # six in a row, max 3: nothing parked
    # two malformed after the outage: the last three are not all of a parking class
    assert await attempt(conn, me, soldier, ErrorClass.MALFORMED) == "retry_scheduled"
    assert await attempt(conn, me, soldier, ErrorClass.MALFORMED) == "retry_scheduled"
    soft = {"soft_throttle": 1}  # a soft throttle is a throttle in disguise: it does not count
    assert await attempt(conn, me, soldier, ErrorClass.MALFORMED, soft) == "retry_scheduled"
    assert await attempt(conn, me, soldier, ErrorClass.MALFORMED) == "retry_scheduled"
    assert await attempt(conn, me, soldier, ErrorClass.MALFORMED) == "retry_scheduled"
    assert await attempt(conn, me, soldier, ErrorClass.MALFORMED) == "unavailable"


async def test_a_not_found_parks_at_once(conn: Conn, tmp_path: Path) -> None:
    me = await make_collector(conn, tmp_path, "park-2")
    soldier = await make_soldier(conn, 3_000_002)
    assert await attempt(conn, me, soldier, ErrorClass.SERVER) == "retry_scheduled"
    assert await attempt(conn, me, soldier, ErrorClass.NOT_FOUND) == "unavailable"
