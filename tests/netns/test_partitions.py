"""The fleet on separate network hosts (tests/netns): one host cut from the database at any
point of a job, cut from Battlelog, or frozen (SIGSTOP) never stalls the other egresses for
longer than the documented bound (docs/architecture.md "Session bounds": B = the idle-in-
transaction timeout, 5 s by default). The other egresses' send gaps are measured in the ledger
(a request is counted there before it is sent) and printed."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta

import pytest

from bf4ps.collector.supervise import EXIT_FAILED
from bf4ps.db.connect import Conn, connection
from bf4ps.settings import Settings
from tests import load
from tests.helpers import count, seed_work, wait_for
from tests.netns.bed import Bed

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("netns")]

BOUND = Settings().db_idle_in_transaction_timeout_seconds  # the documented bound (defaults)
PACING = 1.0
FLEET = {"BF4PS_HEARTBEAT_SECONDS": "1", "BF4PS_LEASE_SECONDS": "6",
         "BF4PS_IDLE_POLL_SECONDS": "0.3", "BF4PS_CLAIM_HORIZON_SECONDS": "0.5",
         "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": str(PACING),
         "BF4PS_EGRESS_SAFETY_MARGIN_SECONDS": "0.1", "BF4PS_BATTLELOG_TIMEOUT_SECONDS": "3",
         # a budget far above use: admission then locks the fleet row too, the path to prove
         "BF4PS_FLEET_BUDGET_REQUESTS": "5000", "BF4PS_FLEET_BUDGET_WINDOW_SECONDS": "60",
         # a cut client notices sooner (the server side keeps the defaults: the bound)
         "BF4PS_DB_TCP_USER_TIMEOUT_SECONDS": "3", "BF4PS_DB_KEEPALIVES_IDLE_SECONDS": "2",
         "BF4PS_DB_KEEPALIVES_INTERVAL_SECONDS": "1"}
OTHERS = {"c2": "e2", "c3": "e3"}
FAST_RETRY = [("backoff_seconds", "[1, 1, 1, 1]"), ("backoff_jitter", "0")]


@asynccontextmanager
async def fleet(bed: Bed, db: str, *, pause: str | None = None,
                jobs: int = 400) -> AsyncIterator[Conn]:
    """c1 (egress e1, maybe with pause points) beside c2 and c3 on e2 and e3; the observer's
    connection. Every collector must exit 0 at the end (SIGTERM), the faulty one too."""
    async with connection(bed.observer_url(db)) as conn:
        await seed_work(conn, jobs)
        for key, value in FAST_RETRY:
            await conn.execute("INSERT INTO scheduler_policy (key, value) VALUES (%s, %s)",
                               [key, value])
        bed.start(1, "c1", "e1", db, FLEET, pause=pause)
        for n, (name, egress) in enumerate(OTHERS.items(), start=2):
            bed.start(n, name, egress, db, FLEET)
        await wait_for(conn, "SELECT count(*) = 3 FROM collectors WHERE health = 'healthy'",
                       timeout=60)
        violations = bed.sim_stats()["violations"]["total"]
        yield conn
        codes = await asyncio.to_thread(bed.stop_collectors)
        assert set(codes.values()) == {0}, {n: bed.log(n)[-1500:] for n in codes}
        assert bed.sim_stats()["violations"]["total"] == violations  # no spacing broken


async def now(conn: Conn) -> datetime:
    cur = await conn.execute("SELECT clock_timestamp() AS t")
    row = await cur.fetchone()
    assert row is not None
    return row["t"]  # type: ignore[no-any-return]


async def until(conn: Conn, when: datetime) -> None:
    await wait_for(conn, "SELECT clock_timestamp() >= %(t)s", {"t": when}, timeout=120)


async def worst_gap(conn: Conn, egress: str, start: datetime, end: datetime) -> float:
    """The longest time in [start, end] with no request counted for the egress."""
    cur = await conn.execute(
        "SELECT slot_at FROM counted_requests WHERE egress_key = %s AND slot_at BETWEEN %s "
        "AND %s ORDER BY slot_at", [egress, start, end])
    times = [start, *(r["slot_at"] for r in await cur.fetchall()), end]
    return max((b - a).total_seconds() for a, b in itertools.pairwise(times))


async def others_never_stalled(conn: Conn, start: datetime, end: datetime, what: str) -> None:
    gaps = {e: await worst_gap(conn, e, start, end) for e in OTHERS.values()}
    span = (end - start).total_seconds()
    print(f"\n{what}: fault {span:.1f} s; worst send gap of the other egresses "
          + ", ".join(f"{e} {g:.2f} s" for e, g in gaps.items())
          + f" (pacing {PACING} s, bound {BOUND} s)")
    stalled = {e: g for e, g in gaps.items() if g > PACING + BOUND}
    if stalled:  # what the stalled egresses' collectors logged meanwhile, to say why
        cur = await conn.execute(
            "SELECT occurred_at, collector_name, event_type, error_class, error_message "
            "FROM collection_events WHERE egress_key = ANY(%s) AND occurred_at BETWEEN %s "
            "AND %s AND event_type NOT IN ('claimed', 'started') ORDER BY event_id",
            [list(stalled), start, end])
        for row in await cur.fetchall():
            print(row)
    assert not stalled, (stalled, what)


async def held_job(conn: Conn, name: str) -> int:
    return await wait_for(conn, "SELECT j.job_id FROM collection_jobs j JOIN collectors c "
                                "USING (collector_uuid) WHERE c.collector_name = %(n)s "
                                "AND j.status IN ('claimed', 'running')", {"n": name})


async def events_of(conn: Conn, kind: str, name: str, job: int | None = None) -> int:
    return await count(conn, "SELECT count(*) FROM collection_events WHERE event_type = %(k)s "
                             "AND collector_name = %(n)s AND (%(j)s::bigint IS NULL "
                             "OR job_id = %(j)s)", {"k": kind, "n": name, "j": job})


@pytest.mark.parametrize("point", ["admission", "fetch", "finalize"])
async def test_a_host_cut_from_the_database(bed: Bed, netdb: str, point: str) -> None:
    """c1 is cut from the database at `point`: a job claimed and its request not yet counted
    (admission), its request about to go out (fetch: it goes out, its answer cannot be
    stored), or its answer in hand (finalize). The other egresses keep sending; c1's job is
    reclaimed when its lease ends; healed, c1's late finalize is rejected by the fence, and it
    reports one heartbeat_lost and one heartbeat_restored."""
    async with fleet(bed, netdb, pause=point) as conn:
        await asyncio.to_thread(bed.paused, "c1", point)
        job = await held_job(conn, "c1")
        bed.cut("c1", "db")
        start = await now(conn)
        bed.go("c1", point)
        await wait_for(conn, "SELECT count(*) FROM collection_events WHERE job_id = %(j)s "
                             "AND event_type = 'reclaimed'", {"j": job}, timeout=60)
        await until(conn, start + timedelta(seconds=3 * BOUND))
        end = await now(conn)
        bed.heal("c1", "db")
        await others_never_stalled(conn, start, end, f"cut from the database at {point}")
        await wait_for(conn, "SELECT count(*) FROM collection_events WHERE job_id = %(j)s "
                             "AND event_type = 'succeeded'", {"j": job}, timeout=60)
        if point == "admission":  # its count never reached the server
            assert await count(conn, "SELECT count(*) FROM request_ledger l JOIN collectors c "
                                     "USING (collector_uuid) WHERE c.collector_name = 'c1' "
                                     "AND l.job_id = %(j)s", {"j": job}) == 0
        else:
            await wait_for(conn, "SELECT count(*) FROM collection_events WHERE job_id = %(j)s "
                                 "AND event_type = 'stale_finalize_rejected' "
                                 "AND collector_name = 'c1'", {"j": job}, timeout=120)
        await wait_for(conn, "SELECT count(*) FROM collection_events WHERE collector_name = "
                             "'c1' AND event_type = 'heartbeat_restored'", timeout=60)
        if point != "admission":  # its lease lapsed after the start: it exits, to be restarted
            await restarted_after_its_lease_lapsed(bed, conn, netdb)
        await wait_for(conn, "SELECT count(*) FROM collection_events WHERE collector_name = "
                             "'c1' AND event_type = 'succeeded' AND occurred_at > %(t)s",
                       {"t": end}, timeout=60)  # back at work
        assert await events_of(conn, "heartbeat_lost", "c1") == 1
        assert await events_of(conn, "heartbeat_restored", "c1") == 1


async def test_a_host_cut_from_battlelog(bed: Bed, netdb: str) -> None:
    """c1 loses its path to Battlelog only: its requests time out (classified), their jobs are
    retried by the others, and every request stays counted, the ones that never arrived too."""
    async with fleet(bed, netdb) as conn:
        await wait_for(conn, "SELECT count(*) FROM collection_events WHERE collector_name = "
                             "'c1' AND event_type = 'succeeded'", timeout=60)
        arrived = bed.arrivals(1)
        bed.cut("c1", "bl")
        start = await now(conn)
        timeouts = "SELECT count(*) FROM collection_events WHERE collector_name = 'c1' " \
                   "AND error_class = 'timeout' AND event_type IN ('retry_scheduled', 'failed')"
        await wait_for(conn, f"{timeouts} AND occurred_at > %(t)s", {"t": start}, timeout=60)
        cur = await conn.execute(
            "SELECT DISTINCT job_id FROM collection_events WHERE collector_name = 'c1' "
            "AND error_class = 'timeout' AND event_type IN ('retry_scheduled', 'failed') "
            "AND occurred_at > %s", [start])  # not its egress's cool-downs: they have no job
        failed = [r["job_id"] for r in await cur.fetchall()]
        for job in failed:  # retried elsewhere
            await wait_for(conn, "SELECT count(*) FROM collection_events WHERE job_id = %(j)s "
                                 "AND event_type = 'succeeded' AND collector_name <> 'c1'",
                           {"j": job}, timeout=60)
        end = await now(conn)
        bed.heal("c1", "bl")
        await others_never_stalled(conn, start, end, "cut from Battlelog")
        assert bed.arrivals(1) == arrived  # nothing of c1's reached Battlelog meanwhile
        counted = await count(conn, "SELECT count(*) FROM counted_requests l JOIN collectors c "
                                    "USING (collector_uuid) WHERE c.collector_name = 'c1' "
                                    "AND l.slot_at > %(t)s", {"t": start})
        assert counted >= len(failed) >= 1  # the requests that never arrived were counted


async def test_a_frozen_collector_stalls_no_other_egress(bed: Bed, netdb: str) -> None:
    """SIGSTOP c1 between claim and count (inside admission), with its slot counted before
    the send, and with its request on the wire; each freeze lasts 3 bounds."""
    async with fleet(bed, netdb, pause="admission,fetch") as conn:
        for point in ("admission", "fetch"):
            await asyncio.to_thread(bed.paused, "c1", point)
            job = await held_job(conn, "c1")
            await frozen(bed, conn, f"frozen at {point}", lambda p=point: bed.go("c1", p))
        # frozen past its lease after its start: if the job went to another collector meanwhile,
        # c1 exits for systemd to restart it (docs/architecture.md "Supervision")
        await restarted_if_its_job_was_taken(bed, conn, netdb, job)
        # on the wire: the simulator counts a request at its arrival; freeze right then
        sent = bed.arrivals(1)
        await asyncio.to_thread(_until, lambda: bed.arrivals(1) > sent)
        job = await held_job(conn, "c1")
        await frozen(bed, conn, "frozen with a request on the wire")
        await restarted_if_its_job_was_taken(bed, conn, netdb, job)
        await wait_for(conn, "SELECT count(*) FROM collection_events WHERE collector_name = "
                             "'c1' AND event_type = 'succeeded' AND occurred_at > now() - "
                             "interval '5 s'", timeout=60)  # and it works again


async def restarted_if_its_job_was_taken(bed: Bed, conn: Conn, db: str, job: int) -> None:
    """Once c1's job is done: if another collector finished it (c1's lease lapsed while c1
    was stalled), c1 has stopped with EXIT_FAILED and is restarted as systemd would; if c1
    finished it (its lease outlived the stall), it carries on."""
    await wait_for(conn, "SELECT count(*) FROM collection_events WHERE job_id = %(j)s AND "
                         "event_type IN ('succeeded', 'failed', 'retry_scheduled')", {"j": job},
                   timeout=60)
    cur = await conn.execute(
        "SELECT collector_name FROM collection_events WHERE job_id = %s AND event_type IN "
        "('succeeded', 'failed', 'retry_scheduled') ORDER BY event_id LIMIT 1", [job])
    row = await cur.fetchone()
    if row is not None and row["collector_name"] == "c1":
        return
    await restarted_after_its_lease_lapsed(bed, conn, db)


async def restarted_after_its_lease_lapsed(bed: Bed, conn: Conn, db: str) -> None:
    """c1, frozen or cut past its lease after its start, exits EXIT_FAILED (its late answer,
    if it sent one, refused by the fence); restarted as systemd would."""
    code = await asyncio.to_thread(bed.procs["c1"].wait, 60)
    assert code == EXIT_FAILED, bed.log("c1")[-1500:]
    assert await count(conn, "SELECT count(*) FROM collection_events WHERE collector_name = "
                             "'c1' AND event_type = 'collector_stopped' AND result = 'failed'")
    bed.start(1, "c1", "e1", db, FLEET)


async def frozen(bed: Bed, conn: Conn, what: str, then: object = None) -> None:
    bed.freeze("c1")
    start = await now(conn)
    if callable(then):
        then()  # released from its pause point, it moves on only when thawed
    await until(conn, start + timedelta(seconds=3 * BOUND))
    end = await now(conn)
    bed.thaw("c1")
    await others_never_stalled(conn, start, end, what)


def _until(check: object, timeout: float = 60) -> None:
    import time

    deadline = load.deadline(timeout)
    while not (callable(check) and check()):
        if deadline.expired():
            raise AssertionError("timed out")
        time.sleep(0.02)


def test_a_host_clock_can_be_skewed(bed: Bed) -> None:
    """The harness's skew parameter: a host's process sees its clock that far off."""
    import subprocess
    import time

    from tests.clocks import libfaketime

    env = {"LD_PRELOAD": str(libfaketime()), "FAKETIME": "+5", "DONT_FAKE_MONOTONIC": "1",
           "PATH": "/usr/bin:/bin"}
    out = subprocess.run([*bed.net.exec_prefix("c1"), "date", "+%s.%N"], env=env,
                         capture_output=True, text=True, timeout=10, check=True).stdout
    assert 4.0 < float(out) - time.time() < 6.0
