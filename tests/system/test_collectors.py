"""Collector processes against the Battlelog simulator and one PostgreSQL: shared egress gates,
the fleet budget at the wire, kill -9, SIGTERM, identity, drain."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bf4ps.db.connect import Conn, connection
from bf4ps.db.queries import q
from tests import load
from tests.fleet import Fleet, sim_stats, simulator
from tests.helpers import count, seed_work, wait_for

pytestmark = pytest.mark.slow

FAST = {"BF4PS_HEARTBEAT_SECONDS": "1", "BF4PS_IDLE_POLL_SECONDS": "0.3",
        "BF4PS_CLAIM_HORIZON_SECONDS": "0.5"}


async def test_shared_and_separate_egresses_with_fleet_budget_never_violate(
        db_url: str, tmp_path: Path) -> None:
    async with connection(db_url) as conn:
        await seed_work(conn, 3000)
    # 5 egresses at 1 request/s could send 40 per 8 s: the fleet budget of 12 binds. The 0.3 s
    # margin absorbs the send jitter of 10 processes on 2 shared cores (production: 0.05 s on
    # a 5 s interval).
    with simulator(speed=40, min_interval=1.0, fleet_budget=12, fleet_window=8.0) as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, FAST | {
            "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "1.0", "BF4PS_EGRESS_SAFETY_MARGIN_SECONDS": "0.3",
            "BF4PS_FLEET_BUDGET_REQUESTS": "12", "BF4PS_FLEET_BUDGET_WINDOW_SECONDS": "8"})
        for i in range(4):
            fleet.start(f"shared-{i}", "egress-a", "127.0.0.2")
        for i in range(4):
            fleet.start(f"own-{i}", f"egress-{i}", f"127.0.0.{3 + i}")
        # the run's 26 s count from when all 8 are up (a loaded machine starts them slowly)
        async with connection(db_url) as conn:
            await wait_for(conn, "SELECT count(*) = 8 FROM collectors "
                                 "WHERE last_heartbeat_at IS NOT NULL", timeout=180)
        await asyncio.sleep(26)
        deadline = load.deadline(60)  # and each egress's spacing seen (two requests at least)
        while len(sim_stats(sim)["by_ip"]) < 5 or min(
                p["count"] for p in sim_stats(sim)["by_ip"].values()) < 2:
            assert not deadline.expired(), sim_stats(sim)["by_ip"]
            await asyncio.sleep(0.5)
        codes = fleet.stop_all()
        stats = sim_stats(sim)
    assert set(codes.values()) == {0}, {n: fleet.log(n)[-1500:] for n in codes}
    assert stats["violations"]["total"] == 0, stats["violations"]["recent"][:4]
    for ip, per in stats["by_ip"].items():
        assert per["violations"] == 0, ip
        assert per["min_spacing_seconds"] >= 1.0, (ip, per["min_spacing_seconds"])
    assert stats["fleet"]["violations"] == 0, stats["fleet"]
    # the budget was the binding limit, and it was used to the last request
    assert stats["fleet"]["max_in_window"] == 12, stats["fleet"]
    async with connection(db_url) as conn:
        sent = await count(conn, "SELECT count(*) FROM request_ledger WHERE unsent_at IS NULL")
        assert sent >= stats["requests_total"]  # counted before sent: never fewer counts
        assert await count(conn, "SELECT count(*) FROM collection_events WHERE "
                                 "event_type = 'succeeded'") >= stats["requests_total"] - 8


@contextmanager
def slow_weapons_fleet(db_url: str, tmp_path: Path, lease_seconds: int) -> Iterator[Fleet]:
    """Collectors whose weapons requests take ~3 s (a slow simulator): time to kill one
    mid-request."""
    with simulator(speed=0.4, min_interval=0) as sim:
        yield Fleet(db_url, sim.base_url, tmp_path, FAST | {
            "BF4PS_LEASE_SECONDS": str(lease_seconds),
            "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "0.1"})


async def killed_mid_request(conn: Conn, fleet: Fleet, name: str) -> int:
    """Wait for the collector's request to be in flight, kill -9 it; the job it held."""
    job = await wait_for(conn, "SELECT job_id FROM collection_jobs WHERE status = 'running'",
                         timeout=30)
    fleet.signal(name, signal.SIGKILL)
    fleet.procs[name].wait(10)
    return job


async def reclaim_trail(conn: Conn, job: int, *, timeout: float) -> list[tuple[str, str]]:
    """Once the job succeeded: its lease_expired / reclaimed / succeeded events, by whom."""
    await wait_for(conn, "SELECT count(*) FROM collection_events WHERE job_id = %(j)s "
                         "AND event_type = 'succeeded'", {"j": job}, timeout=timeout)
    cur = await conn.execute(
        "SELECT event_type, collector_name FROM collection_events WHERE job_id = %s "
        "AND event_type IN ('lease_expired', 'reclaimed', 'succeeded') ORDER BY event_id",
        [job])
    return [(r["event_type"], r["collector_name"]) for r in await cur.fetchall()]


async def test_kill_9_mid_request_is_reclaimed_and_identity_survives(
        db_url: str, tmp_path: Path) -> None:
    async with connection(db_url) as conn:
        await seed_work(conn, 3, resources=("weapons",))
    with slow_weapons_fleet(db_url, tmp_path, lease_seconds=4) as fleet:
        fleet.start("victim", "egress-v", "127.0.0.7")
        async with connection(db_url) as conn:
            job = await killed_mid_request(conn, fleet, "victim")
            cur = await conn.execute("SELECT collector_uuid FROM collectors "
                                     "WHERE collector_name = 'victim'")
            first_uuid = (await cur.fetchone() or {})["collector_uuid"]
            fleet.start("rescuer", "egress-r", "127.0.0.8")
            trail = await reclaim_trail(conn, job, timeout=60)
            assert ("lease_expired", "victim") in trail
            assert trail[-1] == ("succeeded", "rescuer")
            fleet.start("victim", "egress-v", "127.0.0.7")  # same data directory
            await wait_for(conn, "SELECT count(*) FROM collectors WHERE collector_name = "
                                 "'victim' AND health = 'healthy' AND pid IS NOT NULL",
                           timeout=30)
            cur = await conn.execute("SELECT collector_uuid FROM collectors "
                                     "WHERE collector_name = 'victim'")
            assert [r["collector_uuid"] for r in await cur.fetchall()] == [first_uuid]
        fleet.stop_all()


async def test_a_collector_restarted_after_kill_9_takes_its_job_back_at_once(
        db_url: str, tmp_path: Path) -> None:
    """With a 60 s lease, the job of a collector killed mid-request used to wait out the whole
    lease although the collector was back in a second (a player's request waited two minutes
    in production). The restart ends its previous process's leases: its own first claim takes
    the job back (lease_expired + reclaimed) and finishes it."""
    async with connection(db_url) as conn:
        await seed_work(conn, 1, resources=("weapons",))
    with slow_weapons_fleet(db_url, tmp_path, lease_seconds=60) as fleet:
        fleet.start("phoenix", "egress-p", "127.0.0.11")
        async with connection(db_url) as conn:
            job = await killed_mid_request(conn, fleet, "phoenix")
            killed_at = asyncio.get_running_loop().time()
            fleet.start("phoenix", "egress-p", "127.0.0.11")
            trail = await reclaim_trail(conn, job, timeout=40)
            assert asyncio.get_running_loop().time() - killed_at < 40  # not the 60 s lease
            assert trail == [("lease_expired", "phoenix"), ("reclaimed", "phoenix"),
                             ("succeeded", "phoenix")]
        fleet.stop_all()
        assert "of the previous process: their leases ended now" in fleet.log("phoenix")


async def test_sigterm_mid_request_finishes_commits_and_exits_zero(
        db_url: str, tmp_path: Path) -> None:
    async with connection(db_url) as conn:
        await seed_work(conn, 2, resources=("weapons",))
    with simulator(speed=0.5, min_interval=0) as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, FAST)
        fleet.start("graceful", "egress-g", "127.0.0.9")
        async with connection(db_url) as conn:
            job = await wait_for(conn, "SELECT job_id FROM collection_jobs "
                                       "WHERE status = 'running'", timeout=30)
            fleet.signal("graceful", signal.SIGTERM)
            code = await asyncio.to_thread(fleet.procs["graceful"].wait, 30)
            assert code == 0, fleet.log("graceful")[-2000:]
            assert await count(conn, "SELECT count(*) FROM collection_events WHERE job_id = "
                                     "%(j)s AND event_type = 'succeeded'", {"j": job}) == 1
            assert await count(conn, "SELECT count(*) FROM collection_jobs") == 1  # 2nd untouched
            cur = await conn.execute(q("collectors_list"), {"include_retired": False})
            row = await cur.fetchone()
            assert row is not None
            assert (row["health"], row["current_job_id"]) == ("stopped", None)


async def test_sigterm_during_a_request_longer_than_the_lease_still_finalizes_it(
        db_url: str, tmp_path: Path) -> None:
    """The heartbeat renews the job in flight after SIGTERM too: a request that outlasts the
    lease (a 6 s timeout against a 3 s lease) still ends in its own fenced finalize and the
    collector exits 0. It used to stop renewing at the signal: the lease lapsed, the finalize
    was refused as stale and the collector exited 70."""
    async with connection(db_url) as conn:
        await seed_work(conn, 2, resources=("weapons",))
    with simulator(min_interval=0, fault_timeout=1.0) as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, FAST | {
            "BF4PS_LEASE_SECONDS": "3", "BF4PS_BATTLELOG_TIMEOUT_SECONDS": "6"})
        fleet.start("slow", "egress-s", "127.0.0.11")
        async with connection(db_url) as conn:
            job = await wait_for(conn, "SELECT job_id FROM collection_jobs "
                                       "WHERE status = 'running'", timeout=30)
            fleet.signal("slow", signal.SIGTERM)
            code = await asyncio.to_thread(fleet.procs["slow"].wait, 30)
            assert code == 0, fleet.log("slow")[-2000:]
            assert await count(conn, "SELECT count(*) FROM collection_events WHERE job_id = "
                                     "%(j)s AND event_type = 'failed'", {"j": job}) == 1
            assert await count(conn, "SELECT count(*) FROM collection_events WHERE "
                                     "event_type IN ('stale_finalize_rejected', "
                                     "'lease_expired')") == 0


async def test_sigterm_while_waiting_for_the_slot_releases_the_job_and_its_slot(
        db_url: str, tmp_path: Path) -> None:
    """A job claimed for a slot 20 s ahead is handed back on SIGTERM, and its ledger row stops
    counting against the budget (it used to keep counting: one request too many per stop)."""
    async with connection(db_url) as conn:
        await seed_work(conn, 2)
    with simulator(speed=50, min_interval=0) as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, FAST | {
            "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "20", "BF4PS_CLAIM_HORIZON_SECONDS": "60"})
        fleet.start("waiter", "egress-w", "127.0.0.10")
        async with connection(db_url) as conn:
            await wait_for(conn, "SELECT count(*) FROM collection_events "
                                 "WHERE event_type = 'succeeded'", timeout=30)
            # waiting for its slot: the claimed job's slot is counted (a busy machine may take
            # a while from the claim to the count)
            job = await wait_for(conn, "SELECT j.job_id FROM collection_jobs j JOIN "
                                       "request_ledger r USING (job_id) "
                                       "WHERE j.status = 'claimed'", timeout=30)
            fleet.signal("waiter", signal.SIGTERM)
            assert await asyncio.to_thread(fleet.procs["waiter"].wait, load.scaled(30)) == 0
            assert await count(conn, "SELECT count(*) FROM collection_events WHERE job_id = "
                                     "%(j)s AND event_type = 'released'", {"j": job}) == 1
            assert await count(conn, "SELECT count(*) FROM collection_jobs WHERE job_id = "
                                     "%(j)s AND status = 'pending'", {"j": job}) == 1
            # two slots: the first job's (sent at once: its request was begun the connect lead
            # ahead, so a cold start no longer missed it) and the released job's, unsent
            assert await count(conn, "SELECT count(*) FROM request_ledger") == 2
            assert await count(conn, "SELECT count(*) FROM counted_requests") == 1
            assert await count(conn, "SELECT count(*) FROM request_ledger WHERE job_id = %(j)s "
                                     "AND unsent_at IS NOT NULL", {"j": job}) == 1
        assert sim_stats(sim)["requests_total"] == 1


async def test_identity_conflicts_are_refused_and_replace_makes_a_new_incarnation(
        db_url: str, tmp_path: Path) -> None:
    with simulator(speed=50, min_interval=0) as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, FAST)
        first = fleet.start("mak-01", "mak-01-public")
        async with connection(db_url) as conn:
            await wait_for(conn, "SELECT count(*) FROM collectors WHERE health = 'healthy'")
            # the same identity started twice: it used to be accepted, and the second one's
            # stop marked the working first one stopped
            twin = Fleet(db_url, sim.base_url, tmp_path, FAST)
            assert twin.start("mak-01", "mak-01-public").wait(30) == 2
            assert f"already running on this host (pid {first.pid}" in twin.log("mak-01")
            cur = await conn.execute("SELECT pid, stopped_at, health FROM collectors")
            assert await cur.fetchall() == [{"pid": first.pid, "stopped_at": None,
                                             "health": "healthy"}]
        fleet.stop_all()
        other = Fleet(db_url, sim.base_url, tmp_path, FAST)
        wrong = other.start("mak-01", "another-egress")  # same data dir, contradicting egress
        assert wrong.wait(30) == 2
        assert "registered differently" in other.log("mak-01")
        elsewhere = Fleet(db_url, sim.base_url, tmp_path / "elsewhere", FAST)
        (tmp_path / "elsewhere").mkdir()
        taken = elsewhere.start("mak-01", "mak-01-public")  # no identity file: name is taken
        assert taken.wait(30) == 2
        assert "belongs to collector" in elsewhere.log("mak-01")
        elsewhere.start("mak-01", "mak-01-public", None, "background", "--replace")
        async with connection(db_url) as conn:
            await wait_for(conn, "SELECT count(*) FROM collectors WHERE retired_at IS NOT NULL "
                                 "AND replaced_by IS NOT NULL")
            assert await count(conn, "SELECT count(*) FROM collectors WHERE "
                                     "collector_name = 'mak-01'") == 2
        elsewhere.stop_all()


async def test_two_starts_of_one_identity_in_the_same_instant_leave_one_running(
        db_url: str, tmp_path: Path) -> None:
    """Both starts are held inside their registration (the registry is locked against writes)
    until both wait: one registers, the other then sees it running and refuses. Without the
    name's lock both read "no registration", and the second failed on the unique name."""
    with simulator(speed=50, min_interval=0) as sim:
        async with connection(db_url) as conn, connection(db_url) as gate:
            async with gate.transaction():
                await gate.execute("LOCK TABLE collectors IN EXCLUSIVE MODE")
                # both must still be waiting when the slower start arrives (a loaded machine
                # starts a process in many seconds): the lock wait outlasts the test's
                held = FAST | {"BF4PS_DB_LOCK_TIMEOUT_SECONDS": str(load.scaled(120))}
                first = Fleet(db_url, sim.base_url, tmp_path, held)
                second = Fleet(db_url, sim.base_url, tmp_path, held)
                procs = [first.start("twin-01", "twin-public"),
                         second.start("twin-01", "twin-public")]
                await wait_for(conn, "SELECT count(*) >= 2 FROM pg_stat_activity "
                                     "WHERE wait_event_type = 'Lock'", timeout=30)
            await wait_for(conn, "SELECT count(*) FROM collectors WHERE health = 'healthy'")
            for _ in range(150):  # the refused start exits; the other keeps running
                if any(p.poll() is not None for p in procs):
                    break
                await asyncio.sleep(0.2)
            exited = [p for p in procs if p.poll() is not None]
            running = [p for p in procs if p.poll() is None]
            assert len(exited) == 1 and len(running) == 1, [p.poll() for p in procs]
            assert exited[0].returncode == 2
            assert f"already running on this host (pid {running[0].pid}" in first.log("twin-01")
            cur = await conn.execute("SELECT pid, stopped_at FROM collectors")
            assert await cur.fetchall() == [{"pid": running[0].pid, "stopped_at": None}]


async def test_drained_collector_heartbeats_but_claims_nothing(db_url: str,
                                                              tmp_path: Path) -> None:
    from bf4ps.fleet import collectors as control

    async with connection(db_url) as conn:
        await seed_work(conn, 5)
    with simulator(speed=50, min_interval=0) as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, FAST | {
            "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "0.5"})
        async with connection(db_url) as conn:
            fleet.start("hnl-01", "hnl")
            await wait_for(conn, "SELECT count(*) FROM collectors WHERE health = 'healthy'")
            await control.act(conn, "drain", "hnl-01")
            await asyncio.sleep(1.5)
            before = await count(conn, "SELECT count(*) FROM request_ledger")
            beat = await count(conn, "SELECT extract(epoch FROM last_heartbeat_at)::bigint "
                                     "FROM collectors")
            await asyncio.sleep(3)
            assert await count(conn, "SELECT count(*) FROM request_ledger") == before
            assert await count(conn, "SELECT extract(epoch FROM last_heartbeat_at)::bigint "
                                     "FROM collectors") > beat
            await control.act(conn, "resume", "hnl-01")
            await wait_for(conn, "SELECT count(*) FROM collection_events "
                                 "WHERE event_type = 'succeeded'", timeout=30)
            await control.act(conn, "disable", "hnl-01")
            assert await asyncio.to_thread(fleet.procs["hnl-01"].wait, 30) == 0


async def test_a_throttle_cools_the_whole_egress_down(db_url: str, tmp_path: Path) -> None:
    """Battlelog (the simulator) allows one request per 2 s per IP with a 1 s penalty; two
    collectors share an egress paced at 0.5 s, so they get throttled. After a 403 nobody on that
    egress may send during the cool-down (2 s, longer than the penalty): the simulator must
    never answer a request inside its penalty, and the throttled jobs are retried, not lost."""
    async with connection(db_url) as conn:
        await seed_work(conn, 40)
    with simulator(speed=50, min_interval=2.0, penalty=1.0) as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, FAST | {
            "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "0.5",
            "BF4PS_THROTTLE_COOLDOWN_SECONDS": "2", "BF4PS_THROTTLE_COOLDOWN_MAX_SECONDS": "8"})
        fleet.start("t-1", "shared-egress", "127.0.0.11")
        fleet.start("t-2", "shared-egress", "127.0.0.11")
        await asyncio.sleep(20)
        codes = fleet.stop_all()
        stats = sim_stats(sim)
    assert set(codes.values()) == {0}
    per = stats["by_ip"]["127.0.0.11"]
    assert stats["by_outcome"]["throttled"] >= 1  # the egress really was throttled
    assert per["penalty_answers"] == 0, per  # and nobody sent into the cool-down
    async with connection(db_url) as conn:
        assert await count(conn, "SELECT count(*) FROM collection_events "
                                 "WHERE event_type = 'egress_throttled'") >= 1
        assert await count(conn, "SELECT count(*) FROM collection_state "
                                 "WHERE status = 'unavailable'") == 0
        assert await count(conn, "SELECT count(*) FROM collection_events WHERE event_type = "
                                 "'failed' AND error_class = 'throttle'") == \
            stats["by_outcome"]["throttled"]
