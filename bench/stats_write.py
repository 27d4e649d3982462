"""Cost of the statistics writers that run inside finalize.succeed, on real PostgreSQL.

Each write runs in its own transaction (as inside succeed) on one connection; figures are the
median and p95 over many soldiers, in milliseconds:

* ``weapons_first``: a soldier's first 175-weapon list (catalog already known: 175 current rows,
  history for every used weapon);
* ``weapons_unchanged``: the same list again (the common weekly refresh of an idle soldier);
* ``weapons_10pct``: the list with 10% of the weapons' kills changed;
* ``vehicles_first`` / ``vehicles_10pct``: 82 vehicles, likewise;
* ``detailed_changed``, ``profile``: the single-row writers.

``--preload N`` first bulk-loads N other soldiers with 175 weapons each (to see that the cost
does not grow with the tables). Uses ``--url`` (a database to create tables in: it must be
empty or already migrated) or a throwaway embedded server.

Run: ``python bench/stats_write.py [--soldiers 200] [--preload 0] [--url URL]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bf4ps.battlelog.models import VehicleItem, WeaponItem
from bf4ps.battlelog.parse_detailed import parse_detailed
from bf4ps.battlelog.parse_items import parse_vehicles, parse_weapons
from bf4ps.battlelog.parse_profile import parse_profile
from bf4ps.db import embedded, migrate
from bf4ps.db.connect import Conn, connection
from bf4ps.stats.store import write_detailed, write_profile, write_vehicles, write_weapons
from tests import captures

FIXTURES = captures.captures_dir() / "2013-bf4intel"
T0 = datetime(2026, 11, 1, tzinfo=UTC)


def weapons(n: int = 175) -> tuple[WeaponItem, ...]:
    base = parse_weapons((FIXTURES / "weapon-stats.json").read_bytes())
    extra = [replace(base[i % len(base)], guid=f"BENCH-W-{i:04d}") for i in range(n - len(base))]
    return base + tuple(extra)


def vehicles(n: int = 82) -> tuple[VehicleItem, ...]:
    base = parse_vehicles((FIXTURES / "vehicles-stats.json").read_bytes())
    extra = [replace(base[i % len(base)], guid=f"BENCH-V-{i:04d}") for i in range(n - len(base))]
    return base + tuple(extra)


def bump(items: tuple[Any, ...], every: int) -> tuple[Any, ...]:
    return tuple(replace(x, kills=(x.kills or 0) + 1) if i % every == 0 else x
                 for i, x in enumerate(items))


async def make_soldiers(conn: Conn, first_persona: int, n: int) -> list[int]:
    cur = await conn.execute(
        "INSERT INTO soldiers (persona_id, platform, current_name) "
        "SELECT g, 'pc', 'B' || g FROM generate_series(%s::bigint, %s::bigint) g "
        "RETURNING soldier_id", [first_persona, first_persona + n - 1])
    return [int(str(r["soldier_id"])) for r in await cur.fetchall()]


async def preload(conn: Conn, n: int) -> None:
    """n soldiers with a current row per catalog weapon, in bulk SQL."""
    if n <= 0:
        return
    await make_soldiers(conn, 10_000_000, n)
    await conn.execute(
        "INSERT INTO soldier_weapon_stats (soldier_id, weapon_id, fetched_at, kills) "
        "SELECT s.soldier_id, w.weapon_id, now(), s.soldier_id % 100 "
        "FROM soldiers s CROSS JOIN weapon_catalog w WHERE s.persona_id >= 10000000")
    await conn.execute("VACUUM ANALYZE")


Write = Callable[[int], Awaitable[object]]


async def timed(conn: Conn, soldiers: list[int], write: Write) -> list[float]:
    costs = []
    for sid in soldiers:
        start = time.perf_counter()
        async with conn.transaction():
            await write(sid)
        costs.append((time.perf_counter() - start) * 1000)
    return costs


def summary(costs: list[float]) -> dict[str, float]:
    ordered = sorted(costs)
    return {"median": round(statistics.median(ordered), 2),
            "p95": round(ordered[int(len(ordered) * 0.95) - 1], 2)}


async def run(url: str, n_soldiers: int, n_preload: int) -> dict[str, dict[str, float]]:
    await migrate.upgrade(url)
    w, v = weapons(), vehicles()
    detailed = parse_detailed((FIXTURES / "details-stats.json").read_bytes())
    profile = parse_profile((FIXTURES / "soldieroverview.json").read_bytes())
    at = [T0 + timedelta(hours=h) for h in range(4)]
    async with connection(url) as conn:
        await write_weapons(conn, (await make_soldiers(conn, 1, 1))[0], w, at[0])  # catalog
        await preload(conn, n_preload)
        sids = await make_soldiers(conn, 100, n_soldiers)
        w10, v10 = bump(w, 10), bump(v, 10)
        scenarios: list[tuple[str, Write]] = [
            ("weapons_first", lambda s: write_weapons(conn, s, w, at[1])),
            ("weapons_unchanged", lambda s: write_weapons(conn, s, w, at[2])),
            ("weapons_10pct", lambda s: write_weapons(conn, s, w10, at[3])),
            ("vehicles_first", lambda s: write_vehicles(conn, s, v, at[1])),
            ("vehicles_10pct", lambda s: write_vehicles(conn, s, v10, at[2])),
            ("detailed_first", lambda s: write_detailed(conn, s, detailed, at[1])),
            ("detailed_changed", lambda s: write_detailed(
                conn, s, replace(detailed, kills=(detailed.kills or 0) + 1), at[2])),
            ("profile", lambda s: write_profile(conn, s, profile, at[1])),
        ]
        return {name: summary(await timed(conn, sids, write)) for name, write in scenarios}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--soldiers", type=int, default=200)
    parser.add_argument("--preload", type=int, default=0)
    parser.add_argument("--url")
    args = parser.parse_args()
    if args.url:
        figures = asyncio.run(run(args.url, args.soldiers, args.preload))
    else:
        base = Path(tempfile.mkdtemp(prefix="bf4ps-bench-pg-"))
        base.chmod(0o755)
        try:
            url = embedded.start(base / "data", cleanup_mode="delete")
            figures = asyncio.run(run(url, args.soldiers, args.preload))
        finally:
            embedded.stop(base / "data")
            shutil.rmtree(base, ignore_errors=True)
    print(json.dumps({"ms": figures, "soldiers": args.soldiers, "preload": args.preload},
                     indent=1))


if __name__ == "__main__":
    main()
