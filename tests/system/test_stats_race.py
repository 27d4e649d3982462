"""Stats writers in real processes racing on one database: the same new weapons stored without
deadlock (the in-process store tests: tests/db/test_stats_store.py)."""

from __future__ import annotations

import asyncio
import subprocess
from typing import Any

import pytest

from bf4ps.db.connect import Conn, connection
from tests import captures
from tests.helpers import count, make_soldier
from tests.procs import read_json_line, spawn

BARRIER_KEY = 4_246_345  # advisory lock starting a round in every stats worker at once


async def race_round(gate: Conn, procs: list[subprocess.Popen[str]],
                     round_no: int) -> list[dict[str, Any]]:
    """Start one round in every worker at the same instant: they queue on an advisory lock
    this connection holds, and all wake up when it is released."""
    await gate.execute("SELECT pg_advisory_lock(%s)", [BARRIER_KEY])
    for p in procs:
        assert p.stdin is not None
        p.stdin.write(f"{round_no}\n")
        p.stdin.flush()
    for _ in range(500):
        if await count(gate, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                             "AND NOT granted") == len(procs):
            break
        await asyncio.sleep(0.01)
    await gate.execute("SELECT pg_advisory_unlock(%s)", [BARRIER_KEY])
    return list(await asyncio.gather(*(asyncio.to_thread(read_json_line, p) for p in procs)))


@pytest.mark.slow
async def test_concurrent_collectors_store_the_same_new_weapons_without_deadlock(
        db_url: str) -> None:
    workers, per_worker, rounds = 6, 3, 10
    async with connection(db_url) as conn:
        soldiers = [await make_soldier(conn, 20_000 + i) for i in range(workers * per_worker)]
    groups = [soldiers[i::workers] for i in range(workers)]
    weapons = str(captures.capture("2013-bf4intel/weapon-stats.json"))
    procs = [spawn("stats_worker.py", db_url, str(BARRIER_KEY), str(i), ",".join(map(str, g)),
                   weapons, stdin=True) for i, g in enumerate(groups)]
    try:
        assert sorted(read_json_line(p)["ready"] for p in procs) == list(range(workers))
        async with connection(db_url) as gate:
            for round_no in range(1, rounds + 1):
                results = await race_round(gate, procs, round_no)
                for result in results:
                    assert result["errors"] == [], result
                    assert result["round"] == round_no
    finally:
        for p in procs:
            if p.stdin:
                p.stdin.close()
        for p in procs:
            p.wait(30)
    per_soldier = 135 + 40 * rounds  # the base weapons and its slot's new ones, all kept
    catalog = 135 + 40 * rounds * per_worker
    async with connection(db_url) as conn:
        assert await count(conn, "SELECT count(*) FROM weapon_catalog") == catalog
        assert await count(conn, "SELECT count(DISTINCT guid) FROM weapon_catalog") == catalog
        # the renames every worker raced to apply (SKIP LOCKED: one of them did it)
        assert await count(conn, "SELECT count(*) FROM weapon_catalog "
                                 "WHERE name LIKE %(suffix)s", {"suffix": f"%~R{rounds}"}) == 5
        cur = await conn.execute(
            "SELECT s.soldier_id, count(w.weapon_id) AS n FROM soldiers s "
            "LEFT JOIN soldier_weapon_stats w USING (soldier_id) GROUP BY 1")
        assert {r["soldier_id"]: r["n"] for r in await cur.fetchall()} == {
            s: per_soldier for s in soldiers}
        # each round's 40 new weapons were used (kills > 0): one history row each per soldier
        assert await count(conn, "SELECT count(*) FROM soldier_weapon_history "
                                 "WHERE weapon_id IN (SELECT weapon_id FROM weapon_catalog "
                                 "WHERE guid LIKE 'R%%-NEW-%%')") == (
            len(soldiers) * 40 * rounds)
