"""The scheduler: hot standby takeover, the heartbeat detector, kill -9 mid-feed, fairness with
a bounded bootstrap wait under sustained active demand, the recheck of parked resources,
retention."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bf4ps.db.connect import Conn, connection
from bf4ps.policy import Policy
from bf4ps.queue import claim as qclaim
from bf4ps.queue import finalize
from bf4ps.scheduler import feeder, retention
from tests import load
from tests.db.test_feeder import PARK, population
from tests.helpers import count, make_collector, wait_for
from tests.procs import bf4ps_env, spawn


def scheduler_process(db_url: str, tmp: Path, name: str,
                      **extra: str) -> subprocess.Popen[str]:
    env = bf4ps_env(BF4PS_DATABASE_URL=db_url, BF4PS_SCHEDULER_TICK_SECONDS="0.3",
                    BF4PS_DATA_DIR=str(tmp), **extra)
    log = open(tmp / f"{name}.log", "w")  # noqa: SIM115 - lives as long as the process
    return subprocess.Popen([sys.executable, "-m", "bf4ps.cli.main", "scheduler", "run"],
                            env=env, stdout=log, stderr=subprocess.STDOUT, text=True)


async def log_with(path: Path, text: str, timeout: float = 30) -> str:
    """The log's text once it contains `text` (fails after `timeout` seconds)."""
    deadline = load.deadline(timeout)
    while text not in (found := path.read_text()):
        assert not deadline.expired(), f"{path.name} never said {text!r}: {found}"
        await asyncio.sleep(0.1)
    return found


@pytest.mark.slow
async def test_standby_takes_over_when_the_active_scheduler_dies(db_url: str,
                                                                 tmp_path: Path) -> None:
    a = scheduler_process(db_url, tmp_path, "a")
    async with connection(db_url) as conn:
        await wait_for(conn, "SELECT count(*) FROM collection_events "
                             "WHERE event_type = 'scheduler_started'", timeout=30)
        b = scheduler_process(db_url, tmp_path, "b")
        line = f":{b.pid} is on standby: another scheduler leads"
        standby = await log_with(tmp_path / "b.log", line)  # it says so (it used to be silent)
        assert await count(conn, "SELECT count(*) FROM collection_events "
                                 "WHERE event_type = 'scheduler_started'") == 1  # b waits
        assert standby.count(line) == 1, standby  # once
        a.send_signal(signal.SIGKILL)
        a.wait(10)
        await wait_for(conn, "SELECT count(*) = 2 FROM collection_events "
                             "WHERE event_type = 'scheduler_started'", timeout=30)
        cur = await conn.execute("SELECT details->>'scheduler' AS who FROM collection_events "
                                 "WHERE event_type = 'scheduler_started' ORDER BY event_id")
        who = [r["who"] for r in await cur.fetchall()]
        assert who[0].endswith(f":{a.pid}") and who[1].endswith(f":{b.pid}")
        # the new leader does the work: a silent collector is detected, once
        me = await make_collector(conn, tmp_path, "silent-01")
        await conn.execute("UPDATE collectors SET last_heartbeat_at = now() - interval '5 min'")
        await wait_for(conn, "SELECT count(*) FROM collection_events "
                             "WHERE event_type = 'heartbeat_lost'", timeout=30)
        await asyncio.sleep(1.5)
        assert await count(conn, "SELECT count(*) FROM collection_events "
                                 "WHERE event_type = 'heartbeat_lost'") == 1
        assert await count(conn, "SELECT count(*) FROM collectors WHERE health = 'lost' "
                                 "AND collector_uuid = %(u)s", {"u": me.collector_uuid}) == 1
    b.send_signal(signal.SIGTERM)
    assert b.wait(30) == 0


async def test_the_scheduler_gives_a_parked_resource_of_a_player_one_more_try(
        db_url: str, tmp_path: Path) -> None:
    async with connection(db_url) as conn:
        await population(conn, 3, active=1)
        await conn.execute(PARK, {"ago": "8 days", "resource": "weapons"})
        await conn.execute("UPDATE collection_state SET status = 'current', last_attempt_at = "
                           "now(), last_success_at = now(), next_due_at = now() + interval "
                           "'1 day' WHERE resource <> 'weapons'")  # nothing else to feed
        proc = scheduler_process(db_url, tmp_path, "recheck", BF4PS_SWEEP_SECONDS="0.5")
        try:
            await wait_for(conn, "SELECT count(*) FROM collection_jobs WHERE reason = 'retry' "
                                 "AND resource = 'weapons'", timeout=30)
            assert await count(conn, "SELECT count(*) FROM collection_jobs") == 1
            assert await count(conn, "SELECT count(*) FROM collection_events "
                                     "WHERE event_type = 'recheck_scheduled'") == 1
            assert await count(conn, "SELECT count(*) FROM collection_state WHERE resource = "
                                     "'weapons' AND status = 'unavailable'") == 2
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(30) == 0


@pytest.mark.slow
async def test_kill_9_mid_feed_leaves_no_duplicates_and_feeding_resumes(
        db_url: str, tmp_path: Path) -> None:
    async with connection(db_url) as conn:
        await population(conn, 20_000)
        proc = spawn("feeder_worker.py", db_url)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "feeding"
        await asyncio.sleep(2.5)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert await count(conn, "SELECT count(*) FROM (SELECT soldier_id, resource FROM "
                                 "collection_jobs GROUP BY 1, 2 HAVING count(*) > 1) d") == 0
        # the killed client's backend may still be finishing its (never committed) feed and
        # holding the feeder's lock: wait for it to go away
        await wait_for(conn, "SELECT count(*) = 0 FROM pg_locks WHERE locktype = 'advisory' "
                             "AND objid = 4849502020 %% 4294967296", timeout=60)
        # the killed feeder may have queued every eligible job (a fast machine feeds 20,000
        # soldiers in 2.5 s): take 1,000 off, as its loop did, so there is work to resume
        await conn.execute("DELETE FROM collection_jobs WHERE job_id IN "
                           "(SELECT job_id FROM collection_jobs LIMIT 1000)")
        depth = await count(conn, "SELECT count(*) FROM collection_jobs")
        report = await feeder.replenish(conn, Policy(working_set_background=depth + 500))
        assert report.depth_before == depth and report.total == 500
        assert await count(conn, "SELECT count(*) FROM collection_jobs") == depth + 500
        assert await count(conn, "SELECT count(*) FROM collection_events e WHERE event_type = "
                                 "'created' AND NOT EXISTS (SELECT 1 FROM soldiers s WHERE "
                                 "s.soldier_id = e.soldier_id)") == 0


async def _drain_some(conn: Conn, me, n: int) -> list[tuple[str, float]]:  # type: ignore[no-untyped-def]
    """Claim and finish up to n jobs now; returns (class, seconds queued) per job."""
    served = []
    for _ in range(n):
        job = await qclaim.claim(conn, me, 60)
        if job is None:
            break
        cur = await conn.execute("SELECT created_at FROM collection_jobs WHERE job_id = %s",
                                 [job.job_id])
        created = (await cur.fetchone() or {})["created_at"]
        async with conn.transaction():
            await qclaim.start(conn, job, 60, job.claimed_at)
        await finalize.succeed(conn, me, job, finalize.Attempt(200, 1), Policy())
        served.append((job.priority_class.value, (job.claimed_at - created).total_seconds()))
    return served


@pytest.mark.slow
async def test_bootstrap_keeps_its_share_and_a_bounded_wait_under_active_demand(
        conn: Conn, tmp_path: Path) -> None:
    # 1,500 active soldiers (6,000 never-attempted resources) is far more active demand than
    # the ~2,000 jobs served below; 1,000 old soldiers wait in bootstrap.
    await population(conn, 2_500, active=1_500)
    aging = 1.5
    pol = Policy(working_set_background=20, aging_bootstrap_seconds=aging, share_active=0.75,
                 share_recent=0.0, share_bootstrap=0.20, share_retry=0.05)
    me = await make_collector(conn, tmp_path, "fair-01")
    served: list[tuple[str, float]] = []
    t_end = time.monotonic() + 15
    while time.monotonic() < t_end:
        await feeder.replenish(conn, pol)
        served += await _drain_some(conn, me, 4)
        await asyncio.sleep(0.02)
    boot_waits = [w for c, w in served if c == "bootstrap"]
    share = len(boot_waits) / len(served)
    # the bound: the aging offset, plus draining the working set ahead of it at the rate seen,
    # plus a second of slack for this process being descheduled mid-drain (scaled by the load:
    # a serial run beside other work once saw a 3.26 s wait against a 3.10 s bound, every
    # other wait 1.6 s — a stall adds to one wait but hardly moves the mean rate)
    rate = len(served) / 15
    bound = aging + pol.working_set_background / rate + load.scaled(1.0)
    print(f"served {len(served)}, bootstrap share {share:.2f}, max bootstrap wait "
          f"{max(boot_waits):.2f} s (bound {bound:.2f} s)")
    assert await count(conn, "SELECT count(*) FROM collection_state WHERE "
                             "activity_class = 'active' AND status = 'never_attempted'") > 0
    assert share >= 0.19
    assert max(boot_waits) <= bound


async def test_retention_removes_only_events_past_the_horizon(conn: Conn) -> None:
    now = datetime.now(UTC)
    await conn.execute("SELECT bf4ps_ensure_event_partitions((now() - interval '14 months')::date,"
                       " 13)")
    ages = [400, 250, 200, 181, 179, 100, 10, 0]
    for days in ages:
        await conn.execute("INSERT INTO collection_events (event_type, occurred_at, persona_id) "
                           "VALUES ('created', %s, %s)", [now - timedelta(days=days), days])
    await conn.execute("INSERT INTO soldiers (persona_id, platform, current_name) "
                       "VALUES (1, 'pc', 'Keep')")
    await conn.execute("INSERT INTO detailed_stats_current (soldier_id, fetched_at, kills) "
                       "SELECT soldier_id, now() - interval '2 years', 5 FROM soldiers")
    # gameplay history derived from the snapshots: gains, their flags (cleared long ago) and
    # play sessions are kept as the statistics are
    old = now - timedelta(days=730)
    await conn.execute(
        "INSERT INTO soldier_intervals (soldier_id, platform, started_at, ended_at, kills, "
        "deaths, score, seconds) SELECT soldier_id, 'pc', %(a)s, %(b)s, 1, 1, 1, 60 "
        "FROM soldiers", {"a": old - timedelta(hours=1), "b": old})
    await conn.execute(
        "INSERT INTO progress_flags (soldier_id, kind, started_at, ended_at, reason, flagged_at,"
        " cleared_at) SELECT soldier_id, 'soldier', %(a)s, %(b)s, 'kpm', %(b)s, %(b)s "
        "FROM soldiers", {"a": old - timedelta(hours=1), "b": old})
    await conn.execute(
        "INSERT INTO play_sessions (soldier_id, started_at, last_seen_at, ended_at) "
        "SELECT soldier_id, %(a)s, %(b)s, %(b)s FROM soldiers",
        {"a": old - timedelta(hours=1), "b": old})
    report = await retention.run(conn, 180, batch=2, now=now)
    assert report.dropped_partitions  # whole old months went by DROP, not DELETE
    cur = await conn.execute("SELECT persona_id FROM collection_events ORDER BY persona_id")
    assert [r["persona_id"] for r in await cur.fetchall()] == [0, 10, 100, 179]
    assert await count(conn, "SELECT count(*) FROM detailed_stats_current") == 1
    assert await count(conn, "SELECT count(*) FROM soldiers") == 1
    for kept in ("soldier_intervals", "progress_flags", "play_sessions"):
        assert await count(conn, f"SELECT count(*) FROM {kept}") == 1, kept


async def test_ledger_pruning_keeps_the_horizon_and_every_budget_window(conn: Conn) -> None:
    async def ages() -> list[int]:
        cur = await conn.execute(
            "SELECT round(extract(epoch FROM now() - slot_at) / 86400)::int AS days "
            "FROM request_ledger ORDER BY slot_at")
        return [r["days"] for r in await cur.fetchall()]

    for days in [400, 181, 179, 40, 5, 2, 0]:
        await conn.execute("INSERT INTO request_ledger (slot_at, egress_key, budget_class) "
                           "VALUES (now() - make_interval(days => %s), 'eg-1', 'bootstrap')",
                           [days])
    assert await retention.prune_ledger(conn, 180, batch=2) == 2
    assert await ages() == [179, 40, 5, 2, 0]
    # a fleet window of 3 days protects 6 days of rows, whatever the horizon
    await conn.execute("UPDATE fleet_budget SET window_seconds = 3 * 86400")
    assert await retention.prune_ledger(conn, 1) == 2
    assert await ages() == [5, 2, 0]
    await conn.execute("UPDATE fleet_budget SET window_seconds = 3600")
    assert await retention.prune_ledger(conn, 1) == 2
    assert await ages() == [0]
