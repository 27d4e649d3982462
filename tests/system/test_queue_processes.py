"""Real concurrent processes against one PostgreSQL: exactly-once claims, kill -9 recovery,
zombie fencing."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from bf4ps.db.connect import connection
from tests import load
from tests.helpers import count
from tests.procs import read_json_line, spawn

pytestmark = pytest.mark.slow


async def seed_jobs(url: str, n: int) -> None:
    async with connection(url) as conn:
        await conn.execute(
            "INSERT INTO soldiers (persona_id, platform, current_name) "
            "SELECT g, 'pc', 'S' || g FROM generate_series(1, %s) g", [n])
        await conn.execute(
            "INSERT INTO collection_state (soldier_id, resource) "
            "SELECT soldier_id, 'detailed' FROM soldiers")
        await conn.execute(
            "INSERT INTO collection_jobs (soldier_id, resource, lane, priority_class, rank, "
            "reason) SELECT soldier_id, 'detailed', 'background', 'bootstrap', now(), "
            "'bootstrap' FROM soldiers")


async def test_sixteen_processes_drain_ten_thousand_jobs_exactly_once(
        db_url: str, tmp_path: Path) -> None:
    await seed_jobs(db_url, 10_000)
    procs = [spawn("queue_worker.py", db_url, str(tmp_path), f"w{i:02d}", "drain", "60")
             for i in range(16)]
    outputs = await asyncio.gather(*(asyncio.to_thread(p.communicate, None, load.scaled(600))
                                     for p in procs))
    committed: Counter[int] = Counter()
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err[-2000:]
        for line in out.splitlines():
            row = json.loads(line)
            if "job" in row:
                assert row["committed"] is True
                committed[row["job"]] += 1
    assert len(committed) == 10_000
    assert max(committed.values()) == 1
    async with connection(db_url) as conn:
        assert await count(conn, "SELECT count(*) FROM collection_jobs") == 0
        assert await count(conn, "SELECT count(*) FROM collection_events "
                                 "WHERE event_type = 'succeeded'") == 10_000
        assert await count(conn, "SELECT count(DISTINCT job_id) FROM collection_events_log "
                                 "WHERE event_type = 'claimed'") == 10_000
        assert await count(conn, "SELECT count(*) FROM collection_state "
                                 "WHERE status = 'current'") == 10_000


async def test_kill_9_holder_leaves_job_reclaimable_after_lease(db_url: str,
                                                                tmp_path: Path) -> None:
    await seed_jobs(db_url, 1)
    holder = spawn("queue_worker.py", db_url, str(tmp_path), "victim", "hold", "1.5")
    read_json_line(holder)
    job_id = read_json_line(holder)["holding"]
    assert job_id is not None
    holder.send_signal(signal.SIGKILL)
    holder.wait(load.scaled(10))
    killed_at = time.monotonic()
    rescuer = spawn("queue_worker.py", db_url, str(tmp_path), "rescuer", "drain", "30", "5")
    out, err = await asyncio.to_thread(rescuer.communicate, None, load.scaled(60))
    assert rescuer.returncode == 0, err
    done = [json.loads(x) for x in out.splitlines() if '"job"' in x]
    assert done == [{"job": job_id, "committed": True}]
    assert time.monotonic() - killed_at < load.scaled(30)
    async with connection(db_url) as conn:
        cur = await conn.execute(
            "SELECT event_type, collector_name FROM collection_events_log WHERE job_id = %s "
            "ORDER BY event_id, ord", [job_id])
        rows = [(r["event_type"], r["collector_name"]) for r in await cur.fetchall()]
    assert rows == [("claimed", "victim"), ("started", "victim"), ("lease_expired", "victim"),
                    ("reclaimed", "rescuer"), ("claimed", "rescuer"), ("started", "rescuer"),
                    ("succeeded", "rescuer")]


async def test_zombie_frozen_past_its_lease_cannot_commit(db_url: str, tmp_path: Path) -> None:
    await seed_jobs(db_url, 1)
    zombie = spawn("queue_worker.py", db_url, str(tmp_path), "zombie", "zombie", "1", stdin=True)
    read_json_line(zombie)
    job_id = read_json_line(zombie)["holding"]
    zombie.send_signal(signal.SIGSTOP)
    await asyncio.sleep(1.5)
    rescuer = spawn("queue_worker.py", db_url, str(tmp_path), "rescuer", "drain", "30", "5")
    _, err = await asyncio.to_thread(rescuer.communicate, None, load.scaled(60))
    assert rescuer.returncode == 0, err
    zombie.send_signal(signal.SIGCONT)
    assert zombie.stdin is not None
    zombie.stdin.write("go\n")
    zombie.stdin.flush()
    verdict = read_json_line(zombie)
    zombie.wait(load.scaled(10))
    assert verdict == {"committed": False, "event": "stale_finalize_rejected"}
    async with connection(db_url) as conn:
        assert await count(conn, "SELECT count(*) FROM detailed_stats_current") == 0
        assert await count(conn, "SELECT count(*) FROM collection_events WHERE job_id = %(j)s "
                                 "AND event_type = 'succeeded'", {"j": job_id}) == 1
        assert await count(conn, "SELECT count(*) FROM collection_events WHERE job_id = %(j)s "
                                 "AND event_type = 'stale_finalize_rejected' "
                                 "AND collector_name = 'zombie'", {"j": job_id}) == 1


async def test_concurrent_processes_enqueue_one_pair_once(db_url: str, tmp_path: Path) -> None:
    async with connection(db_url) as conn:
        await conn.execute("INSERT INTO soldiers (persona_id, platform, current_name) "
                           "VALUES (99, 'pc', 'Pair')")
    procs = [spawn("enqueue_worker.py", db_url) for _ in range(8)]
    outs = await asyncio.gather(*(asyncio.to_thread(p.communicate, None, load.scaled(60))
                                  for p in procs))
    actions = Counter(json.loads(o)["action"] for o, _ in outs)
    assert actions["created"] == 1 and sum(actions.values()) == 8
    async with connection(db_url) as conn:
        assert await count(conn, "SELECT count(*) FROM collection_jobs") == 1
        assert await count(conn, "SELECT count(*) FROM collection_events "
                                 "WHERE event_type = 'created'") == 1
