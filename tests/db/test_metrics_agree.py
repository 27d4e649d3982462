"""/metrics agrees with the event log (web/metrics.py): an event whose transaction commits after
a later-numbered one is still counted (the cursor waits for the settle time), and a web process
started after failures were logged counts them too. The cause of a failures metric reading 111
while 187 were logged: a scrape between a lower id's insert and its commit moved the cursor past
it for good."""

from __future__ import annotations

import asyncio

from bf4ps.db.connect import Conn, connection
from bf4ps.events import log as events
from bf4ps.events.log import EventType
from bf4ps.web.metrics import EventTally
from tests import load

FAILED = {"error_class": "unrecognized", "resource": "detailed", "lane": "background"}


def failures(tally: EventTally) -> int:
    return sum(tally.failures.values())


async def logged(conn: Conn) -> int:
    cur = await conn.execute("SELECT count(*) AS n FROM collection_events "
                             "WHERE event_type = 'failed'")
    row = await cur.fetchone()
    assert row is not None
    return int(row["n"])


async def late_commit(db_url: str, conn: Conn, tally: EventTally) -> None:
    """A failure inserted first (lower id) but committed after a later one, a scrape between."""
    await tally.advance(conn)  # the first scrape: the whole log so far
    async with connection(db_url) as slow, slow.transaction():
        await events.record(slow, EventType.FAILED, **FAILED)  # the lower id, not committed
        await events.record(conn, EventType.FAILED, **FAILED)  # committed at once
        await tally.advance(conn)  # a scrape while the first is still open
    # committed now


async def settled(conn: Conn, tally: EventTally, want: int, timeout: float = 30) -> int:
    deadline = load.deadline(timeout)
    while failures(tally) < want and not deadline.expired():
        await asyncio.sleep(0.2)
        await tally.advance(conn)
    return failures(tally)


async def test_an_event_committed_after_a_later_one_is_counted(db_url: str, conn: Conn) -> None:
    tally = EventTally(lag_seconds=1.0)
    await late_commit(db_url, conn, tally)
    assert await settled(conn, tally, 2) == 2 == await logged(conn)
    await asyncio.sleep(1.5)
    await tally.advance(conn)
    assert failures(tally) == 2  # counted once


async def test_without_the_settle_time_the_late_event_is_lost(db_url: str, conn: Conn) -> None:
    """The failure mode the settle time removes (why the metric read less than the log)."""
    tally = EventTally(lag_seconds=0.0)
    await late_commit(db_url, conn, tally)
    await tally.advance(conn)
    assert await logged(conn) == 2 and failures(tally) == 1


async def test_a_web_process_started_later_counts_the_failures_already_logged(
        db_url: str, conn: Conn) -> None:
    for _ in range(5):
        await events.record(conn, EventType.FAILED, **FAILED)
    tally = EventTally(lag_seconds=0.0)
    await tally.advance(conn)  # its first scrape
    assert failures(tally) == 5 == await logged(conn)
    await events.record(conn, EventType.FAILED, **FAILED)
    await tally.advance(conn)
    assert tally.failures[("unrecognized", "detailed", "background")] == 6
