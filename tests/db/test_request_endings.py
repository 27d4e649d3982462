"""How a look-up's request ends, against real PostgreSQL (migration 0016's triggers), and which
stored soldier checks an empty search answer (the canary query): "no such soldier" only after a
believed not-found, a look-up that gave up otherwise is failed with its reason, and a done
request says how much of it was collected."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from bf4ps.db.connect import Conn
from bf4ps.db.queries import Record, one
from bf4ps.domain import ErrorClass, Lane, Platform, SourceType
from bf4ps.interactive.submit import submit
from bf4ps.interactive.target import parse_target
from bf4ps.policy import Policy
from bf4ps.queue import claim as qclaim
from bf4ps.queue import finalize
from bf4ps.queue.finalize import Attempt
from bf4ps.queue.jobs import CollectorRef
from bf4ps.stats import soldiers
from tests.helpers import make_collector, make_soldier

POLICY = Policy(max_consecutive_failures=1)


async def ended(conn: Conn, request_id: object) -> dict[str, object]:
    cur = await conn.execute("SELECT status, message, finished_at IS NOT NULL AS finished "
                             "FROM interactive_requests WHERE request_id = %s", [request_id])
    row = await cur.fetchone()
    assert row is not None
    return dict(row)


async def fail_lookup(conn: Conn, me: CollectorRef, name: str, error: ErrorClass,
                      message: str) -> object:
    sub = await submit(conn, parse_target(platform="pc", name=name), client_key="t", policy=POLICY)
    job = await qclaim.claim(conn, me, 60)
    assert job is not None and job.is_lookup and job.lookup_name == name
    await finalize.fail(conn, me, job, error, message, Attempt(200, 5, {}), POLICY)
    return sub.request_id


async def test_a_look_up_that_gave_up_is_failed_never_no_such_soldier(
        conn: Conn, tmp_path: Path) -> None:
    me = await make_collector(conn, tmp_path, "int-end-1", Lane.INTERACTIVE, "int-end")
    gave_up = await fail_lookup(conn, me, "Broken.Search", ErrorClass.SERVER,
                                "HTTP 500: server error")
    assert await ended(conn, gave_up) == {
        "status": "failed", "finished": True,
        "message": "gave up after 1 attempt: HTTP 500: server error"}
    believed = await fail_lookup(conn, me, "Nobody.Here", ErrorClass.NOT_FOUND,
                                 "no BF4 soldier named 'Nobody.Here' on pc")
    assert await ended(conn, believed) == {
        "status": "not_found", "finished": True,
        "message": "no BF4 soldier named 'Nobody.Here' on pc"}
    # an unavailable search is retried: the request stays open, saying why it waits
    waiting = await fail_lookup(conn, me, "Walled.Off", ErrorClass.UNRECOGNIZED,
                                "search unavailable (retried later): an empty answer")
    assert await ended(conn, waiting) == {
        "status": "queued", "finished": False, "message": "search unavailable, retried later"}


async def test_a_done_request_says_how_much_was_collected(conn: Conn, tmp_path: Path) -> None:
    me = await make_collector(conn, tmp_path, "int-end-2", Lane.INTERACTIVE, "int-end-2")
    await make_soldier(conn, 4711, name="Collected")
    sub = await submit(conn, parse_target(platform="pc", persona_id=4711), client_key="t",
                       policy=POLICY)
    # a parking class: an outage's 5xx never parks a resource (issue 35, item 2), it retries
    outcomes = {"detailed": None, "profile": None, "weapons": ErrorClass.MALFORMED,
                "vehicles": None}
    for _ in outcomes:
        job = await qclaim.claim(conn, me, 60)
        assert job is not None and job.request_id == sub.request_id
        error = outcomes[job.resource]
        if error is None:
            await qclaim.start(conn, job, 60, datetime.now(UTC))
            assert (await finalize.succeed(conn, me, job, Attempt(200, 5, {}), POLICY)
                    ).committed
        else:
            await finalize.fail(conn, me, job, error, "HTTP 500", Attempt(500, 5, {}), POLICY)
    assert await ended(conn, sub.request_id) == {
        "status": "done", "finished": True,
        "message": "finished: 3 of 4 collected; not collected: weapons"}


async def test_the_canary_is_a_stored_soldier_never_the_name_looked_up(conn: Conn) -> None:
    assert await one(conn, Record, "search_canary", {"name": "Anyone"}) is None  # nobody stored
    seen = datetime(2026, 11, 30, tzinfo=UTC)
    await make_soldier(conn, 11, name="PlayedLately", seen=seen)
    assert await one(conn, Record, "search_canary", {"name": "Anyone"}) == {"name": "PlayedLately"}
    assert await one(conn, Record, "search_canary", {"name": "playedlately"}) is None
    # a soldier Battlelog's own search found comes first
    await soldiers.upsert(conn, soldiers.Sighting(12, Platform.PC, "FoundBySearch", seen, seen,
                                                  SourceType.BATTLELOG))
    assert await one(conn, Record, "search_canary", {"name": "Anyone"}) == {"name": "FoundBySearch"}
    assert await one(conn, Record, "search_canary", {"name": "FOUNDBYSEARCH"}) == {
        "name": "PlayedLately"}
