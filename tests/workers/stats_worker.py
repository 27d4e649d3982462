"""A collector-like process storing weapon lists, for the catalog concurrency test.

usage: stats_worker.py DB_URL BARRIER_KEY WORKER_NO SOLDIER_ID[,SOLDIER_ID...]

Prints {"ready": WORKER_NO}, then for every line "ROUND" read on stdin waits at the barrier
(the advisory lock BARRIER_KEY, which the test holds until every worker waits on it), then
stores, for its k-th soldier in its own transaction (as finalize.succeed would), a 175-weapon
list whose last 40 guids are new to the catalog (the same for the k-th soldier of every worker
in that round: every slot is a race) and whose first 5 weapons are renamed in that round, in a
worker-specific shuffled order; holds the transaction open a little longer (finalize's
remaining statements) and prints one JSON line {"round", "written", "errors"}. "errors" names
any exception, deadlocks included.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from bf4ps.battlelog.models import WeaponItem
from bf4ps.battlelog.parse_items import parse_weapons
from bf4ps.db.connect import Conn, connection
from bf4ps.stats.store import write_weapons

BASE_ITEMS = 135
NEW_PER_ROUND = 40
RENAMED_PER_ROUND = 5


def slot_items(round_no: int, slot: int, worker: int) -> list[WeaponItem]:
    base = list(parse_weapons(Path(sys.argv[5]).read_bytes()))[:BASE_ITEMS]
    for i in range(RENAMED_PER_ROUND):  # catalog rows every worker wants to refresh at once
        base[i] = replace(base[i], name=f"{base[i].name}~R{round_no}")
    template = base[-1]
    new = [replace(template, guid=f"R{round_no:04d}-S{slot}-NEW-{i:03d}",
                   name=f"NEW_{round_no}_{slot}_{i}", kills=worker + i + 1)
           for i in range(NEW_PER_ROUND)]
    items = base + new
    random.Random(f"{worker}/{round_no}/{slot}").shuffle(items)
    return items


def round_items(round_no: int, worker: int, slots: int) -> list[list[WeaponItem]]:
    return [slot_items(round_no, slot, worker) for slot in range(slots)]


async def barrier(conn: Conn, key: int) -> None:
    await conn.execute("SELECT pg_advisory_lock_shared(%s)", [key])
    await conn.execute("SELECT pg_advisory_unlock_shared(%s)", [key])


async def store_round(conn: Conn, round_no: int, lists: list[list[WeaponItem]],
                      soldiers: list[int]) -> dict[str, object]:
    written, errors = 0, []
    for soldier_id, items in zip(soldiers, lists, strict=True):
        try:
            async with conn.transaction():
                result = await write_weapons(conn, soldier_id, items, datetime.now(UTC))
                await conn.execute("SELECT pg_sleep(0.01)")
            written += result.current_rows
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
    return {"round": round_no, "written": written, "errors": errors}


async def main() -> None:
    url, key, worker_arg, soldiers_arg = sys.argv[1:5]
    worker = int(worker_arg)
    soldiers = [int(s) for s in soldiers_arg.split(",")]
    async with connection(url) as conn:
        print(json.dumps({"ready": worker}), flush=True)
        round_no = 1
        lists = round_items(round_no, worker, len(soldiers))  # ready before the round starts
        while line := await asyncio.to_thread(sys.stdin.readline):
            assert int(line) == round_no
            await barrier(conn, int(key))
            print(json.dumps(await store_round(conn, round_no, lists, soldiers)), flush=True)
            round_no += 1
            lists = round_items(round_no, worker, len(soldiers))


if __name__ == "__main__":
    asyncio.run(main())
