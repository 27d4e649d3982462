"""Last-known-good statistics sampled during the run: a later sample must never have lost a row,
gone back in fetched_at, or (the simulator's counters only grow) decreased a counter."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bf4ps.db.connect import Conn

# cumulative in the simulator (base career x a growth factor that only increases)
COUNTERS = ("kills", "deaths", "score", "time_played_seconds", "num_rounds", "shots_fired",
            "shots_hit", "headshots", "rank_score", "wins", "losses")

DETAILED = (f"SELECT soldier_id, fetched_at, {', '.join(COUNTERS)} "
            "FROM detailed_stats_current")
PROFILE = "SELECT soldier_id, fetched_at FROM profile_current"
ITEMS = ("SELECT soldier_id, count(*) AS n, max(fetched_at) AS fetched_at "
         "FROM {table} GROUP BY soldier_id")

Row = dict[str, Any]


class Sampler:
    def __init__(self, keep: int = 50) -> None:
        self.keep = keep
        self.samples = 0
        self.problems: list[str] = []
        self.problem_count = 0
        self._prev: dict[str, dict[int, Row]] = {}

    def _bad(self, text: str) -> None:
        self.problem_count += 1
        if len(self.problems) < self.keep:
            self.problems.append(text)

    async def sample(self, conn: Conn) -> None:
        """One consistent snapshot (one transaction, repeatable read) compared with the last."""
        async with conn.transaction():
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            now = {
                "detailed": await _rows(conn, DETAILED),
                "profile": await _rows(conn, PROFILE),
                "weapons": await _rows(conn, ITEMS.format(table="soldier_weapon_stats")),
                "vehicles": await _rows(conn, ITEMS.format(table="soldier_vehicle_stats")),
            }
        for what, rows in now.items():
            self._compare(what, self._prev.get(what, {}), rows)
        self._prev = now
        self.samples += 1

    def _compare(self, what: str, before: dict[int, Row], after: dict[int, Row]) -> None:
        for soldier, old in before.items():
            new = after.get(soldier)
            if new is None:
                self._bad(f"{what} of soldier {soldier} disappeared (was {old['fetched_at']})")
                continue
            old_at: datetime = old["fetched_at"]
            new_at: datetime = new["fetched_at"]
            if new_at < old_at:
                self._bad(f"{what} of soldier {soldier} went back: {old_at} -> {new_at}")
            if "n" in old and new["n"] < old["n"]:
                self._bad(f"{what} rows of soldier {soldier}: {old['n']} -> {new['n']}")
            if what == "detailed":
                if new_at == old_at and any(new[c] != old[c] for c in COUNTERS):
                    self._bad(f"detailed of soldier {soldier} changed without a newer fetch")
                for c in COUNTERS:
                    if old[c] is not None and (new[c] is None or new[c] < old[c]):
                        self._bad(f"detailed {c} of soldier {soldier} decreased: "
                                  f"{old[c]} -> {new[c]} ({old_at} -> {new_at})")


async def _rows(conn: Conn, sql: str) -> dict[int, Row]:
    cur = await conn.execute(sql)  # type: ignore[arg-type]
    return {int(r["soldier_id"]): r for r in await cur.fetchall()}
