"""A login wall (a redirect to login, a 5xx, a timeout) is Battlelog's state, not one
resource's: its failures are counted over the lane (jobs of every resource), they open every
resource's circuit of the lane together, the lane gets one probe per probe interval, and the
probe's success closes every circuit of the lane. A real PostgreSQL, the collector's own
circuit functions, no processes."""

from __future__ import annotations

from pathlib import Path

from bf4ps.db.connect import Conn
from bf4ps.domain import ErrorClass
from bf4ps.gates import circuit
from bf4ps.policy import Policy
from bf4ps.queue import claim as qclaim
from bf4ps.queue import finalize
from bf4ps.queue.finalize import Attempt
from bf4ps.queue.jobs import ClaimedJob, CollectorRef
from tests.helpers import add_job, count, make_collector, make_soldier, set_policy
from tests.helpers import claim_started as claim

POLICY = Policy(circuit_min_soldiers=4, circuit_min_egresses=2, circuit_min_failure_share=0.5,
                circuit_probe_seconds=60, circuit_close_successes=1)
WALL = "unrecognized:login_wall"


async def fail(conn: Conn, me: CollectorRef, job: ClaimedJob, sig: str) -> circuit.Verdict:
    verdict = await circuit.judge(conn, me, job, ErrorClass.UNRECOGNIZED, sig, POLICY)
    await finalize.fail(conn, me, job, ErrorClass.UNRECOGNIZED, "x",
                        Attempt(200, 10, {"signature": sig}), POLICY,
                        hold_seconds=POLICY.circuit_hold_seconds if verdict.hold else None)
    return verdict


def test_which_signatures_are_the_lanes() -> None:
    assert all(circuit.lane_wide(s) for s in (
        "unrecognized:login_wall", "server:login_redirect", "server:http_5xx", "timeout",
        "server", "unrecognized:unknown_page"))
    assert not any(circuit.lane_wide(s) for s in (
        "malformed:soft_throttle", "not_found", "implausible", "unrecognized:unknown_error",
        "malformed", None))


async def test_a_login_wall_opens_every_circuit_of_the_lane_one_probe_closes_them(
        conn: Conn, tmp_path: Path) -> None:
    # the circuit's probe interval and closing count are the database's policy
    await set_policy(conn, circuit_probe_seconds=POLICY.circuit_probe_seconds,
                     circuit_close_successes=POLICY.circuit_close_successes)
    one = await make_collector(conn, tmp_path, "ln-1", egress="ln-egress-1")
    two = await make_collector(conn, tmp_path, "ln-2", egress="ln-egress-2")
    for n in range(2):  # two soldiers, every resource: 8 jobs
        soldier = await make_soldier(conn, 7300 + n)
        for resource in circuit.STATS:
            await add_job(conn, soldier, resource)
    # 4 failing jobs on 2 egresses (only 2 soldiers: jobs count for a lane's outage)
    verdicts = [await fail(conn, (one, two)[n % 2], await claim(conn, (one, two)[n % 2]), WALL)
                for n in range(4)]
    assert [v.hold for v in verdicts] == [False, False, False, True]
    opened = await conn.execute("SELECT resource, signature FROM circuit_breakers "
                                "WHERE state = 'open' ORDER BY resource")
    assert [(r["resource"], r["signature"]) for r in await opened.fetchall()] == [
        (r, WALL) for r in sorted(circuit.STATS)]
    assert await qclaim.claim(conn, one, 60) is None  # every resource's work waits
    assert await count(conn, "SELECT count(*) FROM collection_state "
                             "WHERE status = 'unavailable'") == 0
    # every circuit's probe is due: the lane gets one, not four
    await conn.execute("UPDATE circuit_breakers SET next_probe_at = now()")
    assert await circuit.release_probes(conn, one) == 1
    probe = await claim(conn, one)
    assert await qclaim.claim(conn, two, 60) is None
    assert await circuit.release_probes(conn, two) == 0  # not due again before the interval
    # one circuit came due first: its probe is the lane's, the others wait an interval too
    await conn.execute("UPDATE circuit_breakers SET next_probe_at = now() "
                       "WHERE resource = 'weapons'")
    assert await circuit.release_probes(conn, two) == 1
    assert await count(conn, "SELECT count(*) FROM circuit_breakers WHERE next_probe_at > "
                             "clock_timestamp() + interval '50 seconds'") == 4
    assert await circuit.release_probes(conn, two) == 0
    extra = await claim(conn, two)  # the weapons probe: it fails, and is held again
    await fail(conn, two, extra, WALL)
    await finalize.succeed(conn, one, probe, Attempt(200, 10), POLICY)
    assert await circuit.succeeded(conn, one, probe)
    assert await count(conn, "SELECT count(*) FROM circuit_breakers "
                             "WHERE state = 'open'") == 0
    assert await count(conn, "SELECT count(*) FROM collection_events "
                             "WHERE event_type = 'circuit_closed'") == 4
    assert await count(conn, "SELECT count(*) FROM circuit_holds") == 0
    assert await count(conn, "SELECT count(*) FROM collection_jobs "
                             "WHERE eligible_at <= now()") == 7  # all released at the heal


async def test_a_soft_throttle_run_opens_only_its_resource(conn: Conn, tmp_path: Path) -> None:
    one = await make_collector(conn, tmp_path, "ln-3", egress="ln-egress-3")
    two = await make_collector(conn, tmp_path, "ln-4", egress="ln-egress-4")
    for n in range(4):
        await add_job(conn, await make_soldier(conn, 7400 + n))
    for n in range(4):
        await fail(conn, (one, two)[n % 2], await claim(conn, (one, two)[n % 2]),
                   "malformed:soft_throttle")
    opened = await conn.execute("SELECT resource FROM circuit_breakers WHERE state = 'open'")
    assert [r["resource"] for r in await opened.fetchall()] == ["detailed"]
