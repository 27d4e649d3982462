"""The fleet circuit breaker and the unrecognized class in the database, the status report, the
console and /metrics: a real PostgreSQL and the real web app (ASGI), no collector processes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from psycopg_pool import AsyncConnectionPool

from bf4ps.db.connect import Conn, open_pool
from bf4ps.domain import ErrorClass
from bf4ps.gates import circuit
from bf4ps.policy import Policy
from bf4ps.queue import claim as qclaim
from bf4ps.queue import finalize
from bf4ps.queue.finalize import Attempt
from bf4ps.queue.jobs import ClaimedJob, CollectorRef
from bf4ps.settings import Settings
from bf4ps.views import fleet_status
from bf4ps.web.app import create_app
from tests.helpers import add_job, count, make_collector, make_soldier
from tests.helpers import claim_started as claim

OPS = ("ops", "secret-pass")
SETTINGS = Settings(ops_username=OPS[0], ops_password=OPS[1], secret_key="k",  # type: ignore[arg-type]
                    metrics_settle_seconds=0)
POLICY = Policy(circuit_min_soldiers=4, circuit_min_egresses=2, circuit_min_failure_share=0.5,
                circuit_probe_seconds=0.01, circuit_close_successes=1)
SIG = "unrecognized:unknown_error"  # one resource's (a login wall's is the lane's: below)


@pytest.fixture
async def pool(db_url: str) -> AsyncIterator[AsyncConnectionPool[Conn]]:
    p = await open_pool(db_url, max_size=4)
    yield p
    await p.close()


async def store_policy(conn: Conn) -> None:
    """The circuit's probe interval and closing count are read in the database
    (db/functions/circuit.sql): this test's are stored there, as `bf4ps config set` would."""
    for key in ("circuit_probe_seconds", "circuit_close_successes"):
        await conn.execute("INSERT INTO scheduler_policy (key, value) VALUES (%s, %s::jsonb)",
                           (key, str(getattr(POLICY, key))))


async def fail(conn: Conn, me: CollectorRef, job: ClaimedJob) -> circuit.Verdict:
    verdict = await circuit.judge(conn, me, job, ErrorClass.UNRECOGNIZED, SIG, POLICY)
    await finalize.fail(conn, me, job, ErrorClass.UNRECOGNIZED, "Battlelog error: ERR_NEW",
                        Attempt(200, 10, {"signature": SIG}), POLICY,
                        hold_seconds=POLICY.circuit_hold_seconds if verdict.hold else None)
    return verdict


async def test_mass_unrecognized_failures_open_hold_probe_and_close(
        conn: Conn, tmp_path: Path, pool: AsyncConnectionPool[Conn]) -> None:
    one = await make_collector(conn, tmp_path, "cs-1", egress="cs-egress-1")
    two = await make_collector(conn, tmp_path, "cs-2", egress="cs-egress-2")
    await store_policy(conn)
    for n in range(12):
        await add_job(conn, await make_soldier(conn, 7000 + n))
    verdicts = [await fail(conn, (one, two)[n % 2], await claim(conn, (one, two)[n % 2]))
                for n in range(4)]
    # three soldiers are not "many"; the fourth, on the second egress, opens the circuit
    assert [v.hold for v in verdicts] == [False, False, False, True] and verdicts[3].opened
    assert await count(conn, "SELECT count(*) FROM collection_events "
                             "WHERE event_type = 'circuit_opened'") == 1
    # every pending job is held back: nothing claimable, nothing parked
    assert await qclaim.claim(conn, one, 60) is None
    assert await count(conn, "SELECT count(*) FROM circuit_holds") == 12  # all pending + 4th
    assert await count(conn, "SELECT count(*) FROM collection_state "
                             "WHERE status = 'unavailable'") == 0
    report = await fleet_status.status_report(conn)
    assert report.failures_by_class == {"unrecognized": 4}
    assert "CIRCUIT OPEN background/detailed: unrecognized:unknown_error" in \
        fleet_status.render_status(report)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(
            app=create_app(SETTINGS, pool=pool)), base_url="http://t") as web:
        metrics = (await web.get("/metrics")).text
        assert 'bf4ps_circuit_open{lane="background",resource="detailed"} 1.0' in metrics
        assert 'bf4ps_circuit_open{lane="background",resource="weapons"} 0.0' in metrics
        console = (await web.get("/ops", auth=OPS)).text
        assert "unknown_error" in console and "<strong>open</strong>" in console
        api = (await web.get("/api/ops/circuits", auth=OPS)).json()["circuits"]
        assert api[0]["state"] == "open" and api[0]["held"] == 12
        # a probe: one held job becomes claimable; it succeeds and closes the circuit
        assert await circuit.release_probes(conn, one) == 1
        probe = await claim(conn, one)
        assert await qclaim.claim(conn, two, 60) is None  # only the probe was released
        await finalize.succeed(conn, one, probe, Attempt(200, 10), POLICY)
        assert await circuit.succeeded(conn, one, probe)
        later = await claim(conn, two)  # the four before it and it: the whole event log
        await finalize.fail(conn, two, later, ErrorClass.UNRECOGNIZED, "x", Attempt(), POLICY)
        metrics = (await web.get("/metrics")).text
        assert 'bf4ps_circuit_open{lane="background",resource="detailed"} 0.0' in metrics
        assert ('bf4ps_attempt_failures_total{error_class="unrecognized",lane="background",'
                'resource="detailed"} 5.0') in metrics
    assert await count(conn, "SELECT count(*) FROM circuit_holds") == 0
    assert await count(conn, "SELECT count(*) FROM collection_jobs "
                             "WHERE eligible_at <= now()") == 10  # all released at close
    assert await count(conn, "SELECT count(*) FROM collection_events "
                             "WHERE event_type = 'circuit_closed'") == 1


async def test_a_few_soldiers_or_one_egress_never_open_it(conn: Conn, tmp_path: Path) -> None:
    one = await make_collector(conn, tmp_path, "cs-3", egress="cs-egress-3")
    for n in range(8):
        await add_job(conn, await make_soldier(conn, 7100 + n))
    verdicts = [await fail(conn, one, await claim(conn, one)) for _ in range(8)]
    assert not any(v.hold for v in verdicts)  # 8 soldiers, but all on one egress
    assert await count(conn, "SELECT count(*) FROM circuit_breakers") == 0

async def test_work_that_arrives_after_the_hold_waits_for_the_probe(
        conn: Conn, tmp_path: Path) -> None:
    """The claim itself obeys an open circuit: a job fed after the hold, or a retry that came
    due, is not claimed while the circuit is open (collectors learn of it only at their next
    heartbeat); the probe is the first pending job in claim order, held or not."""
    one = await make_collector(conn, tmp_path, "cl-1", egress="cl-egress-1")
    two = await make_collector(conn, tmp_path, "cl-2", egress="cl-egress-2")
    for n in range(4):
        await add_job(conn, await make_soldier(conn, 7100 + n))
    for n in range(4):
        await fail(conn, (one, two)[n % 2], await claim(conn, (one, two)[n % 2]))
    assert await count(conn, "SELECT count(*) FROM circuit_breakers WHERE state = 'open'") == 1
    late = await add_job(conn, await make_soldier(conn, 7200))  # fed after the hold, unheld
    assert await count(conn, "SELECT count(*) FROM circuit_holds WHERE job_id = %(j)s",
                       {"j": late.job_id}) == 0
    assert await qclaim.claim(conn, one, 60) is None  # open: the unheld job waits too
    await conn.execute("UPDATE circuit_breakers SET next_probe_at = now()")  # probe due
    # the probe picks the first pending job in claim order among held and unheld work
    first = await count(conn, "SELECT job_id FROM collection_jobs WHERE status = 'pending' "
                              "ORDER BY rank, job_id LIMIT 1")
    assert await circuit.release_probes(conn, one) == 1
    probe = await claim(conn, one)
    assert probe.job_id == first
    assert await qclaim.claim(conn, two, 60) is None  # nothing else while open
