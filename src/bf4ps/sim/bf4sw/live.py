"""`bf4ps simulate bf4sw --live`: BF4SW keeps watching servers. Every tick some personas are
seen (last_seen moves to now), a few new soldiers appear, now and then one changes name.

At full scale (190,000 soldiers) and rate 1 the volumes follow the census (upstream-facts §3):
~25,000 distinct soldiers seen per 24 h from ~45,000 sightings, ~2,400 new per day. Half the
sightings re-sight someone already seen today; the rest bring back soldiers last seen 1-7 days
(35 %), 7-30 days (12 %) or longer (3 %) ago. Everything scales with soldiers / 190,000 and
with `rate` (a demo at rate 60 lives an hour a minute). Session players (a `schedule.players`
share, sim/play.py) are never sighted at random: every tick those whose schedule has a session
on are seen on its server (alias last_seen and bf4_server_players), at the same `rate`.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

from bf4ps.db.connect import Conn
from bf4ps.db.queries import q
from bf4ps.domain import bf4sw_platform
from bf4ps.sim.bf4sw.names import NameBook
from bf4ps.sim.bf4sw.shape import DAY, HISTORY, PLATFORM_SHARES, raw_string
from bf4ps.sim.personas import persona_id_for
from bf4ps.sim.play import Schedule
from bf4ps.waiting import sleep_unless_stopped

FULL_SCALE = 190_000
SIGHTING_TIERS: tuple[tuple[float, float, float], ...] = (  # (min age, max age, share)
    (0.0, DAY, 0.50), (DAY, 7 * DAY, 0.35), (7 * DAY, 30 * DAY, 0.12),
    (30 * DAY, 2 * HISTORY, 0.03))


@dataclass(frozen=True, slots=True)
class LiveRates:
    sightings_per_day: float = 45_000.0
    new_per_day: float = 2_400.0
    renames_per_day: float = 60.0

    def scaled(self, factor: float) -> LiveRates:
        return LiveRates(self.sightings_per_day * factor, self.new_per_day * factor,
                         self.renames_per_day * factor)


@dataclass(slots=True)
class LiveCounts:
    ticks: int = 0
    sightings: int = 0
    new_soldiers: int = 0
    renames: int = 0
    play_sightings: int = 0
    carry: dict[str, float] = field(default_factory=dict)

    def due(self, what: str, expected: float) -> int:
        """Whole events due this tick; the fractions carry over to the next ones."""
        total = self.carry.get(what, 0.0) + expected
        whole = int(total)
        self.carry[what] = total - whole
        return whole


class Live:
    def __init__(self, conn: Conn, book: NameBook, rng: random.Random, soldiers: int,
                 rate: float, rates: LiveRates | None = None,
                 schedule: Schedule | None = None) -> None:
        self.conn, self.book, self.rng = conn, book, rng
        self.scale = max(soldiers, 1) / FULL_SCALE * rate
        self.rates = rates or LiveRates()
        self.counts = LiveCounts()
        self.schedule = schedule or Schedule(speed=rate)
        self.players: list[tuple[str, int]] = []  # (BF4SW platform string, persona id)

    async def load_players(self) -> None:
        """The personas of the table that play sessions (none when the share is 0)."""
        if self.schedule.players <= 0:
            return
        cur = await self.conn.execute(q("sim_bf4sw_personas"))
        self.players = [(str(r["platform"]), cast(int, r["persona_id"]))
                        for r in await cur.fetchall()
                        if self.schedule.plays(cast(int, r["persona_id"]))]

    async def play(self) -> int:
        """Sight the players whose session is on now, on its server."""
        now = time.time()
        on = [(raw, pid, s) for raw, pid in self.players
              if (s := self.schedule.at(pid, now)) is not None]
        if not on:
            return 0
        await self.conn.execute(q("sim_bf4sw_play"), {
            "platforms": [raw for raw, _, _ in on], "persona_ids": [pid for _, pid, _ in on],
            "guids": [s.server_guid for _, _, s in on],
            "names": [s.server_name for _, _, s in on]})
        return len(on)

    async def tick(self, seconds: float) -> None:
        share = self.scale * seconds / DAY
        c = self.counts
        c.play_sightings += await self.play()
        for i, (lo, hi, tier_share) in enumerate(SIGHTING_TIERS):
            n = c.due(f"sight{i}", self.rates.sightings_per_day * share * tier_share)
            if n:
                c.sightings += await self._sight(lo, hi, n)
        new = c.due("new", self.rates.new_per_day * share)
        if new:
            c.new_soldiers += await self._new_soldiers(new)
        renames = c.due("rename", self.rates.renames_per_day * share)
        if renames:
            c.renames += await self._renames(renames)
        c.ticks += 1

    async def _sight(self, min_age: float, max_age: float, n: int) -> int:
        cur = await self.conn.execute(q("sim_bf4sw_sight"), {
            "min_age": min_age, "max_age": max_age, "n": n,
            "players": [pid for _, pid in self.players]})
        return len(await cur.fetchall())

    async def _new_soldiers(self, n: int) -> int:
        platforms = self.rng.choices([p for p, _ in PLATFORM_SHARES],
                                     [w for _, w in PLATFORM_SHARES], k=n)
        names = [self.book.take(p) for p in platforms]
        return await self._insert([raw_string(self.rng, p) for p in platforms],
                                  [persona_id_for(m, p) for m, p in zip(names, platforms,
                                                                        strict=True)], names)

    async def _renames(self, n: int) -> int:
        cur = await self.conn.execute(q("sim_bf4sw_pick_recent"), {"n": n})
        picked = [(str(r["platform"]), cast(int, r["persona_id"])) for r in await cur.fetchall()]
        known = [(raw, persona, bf4sw_platform(raw)) for raw, persona in picked]
        chosen = [(raw, persona, p) for raw, persona, p in known if p is not None]
        names = [self.book.take(p, first=False) for _, _, p in chosen]
        return await self._insert([raw for raw, _, _ in chosen],
                                  [persona for _, persona, _ in chosen], names)

    async def _insert(self, platforms: list[str], personas: list[int], names: list[str]) -> int:
        if not names:
            return 0
        cur = await self.conn.execute(q("sim_bf4sw_insert"), {
            "platforms": platforms, "persona_ids": personas, "names": names})
        return len(await cur.fetchall())


async def name_book(conn: Conn, rng: random.Random) -> NameBook:
    """A name book that knows every name and persona already in the table."""
    book = NameBook(rng)
    cur = await conn.execute(q("sim_bf4sw_names"))
    for row in await cur.fetchall():
        platform = bf4sw_platform(str(row["platform"]))
        if platform is not None:
            book.remember(str(row["player_name"]), platform, cast(int, row["persona_id"]))
    return book


async def run(conn: Conn, *, soldiers: int, rate: float, tick: float, seed: int,
              stop: asyncio.Event, report: Callable[[LiveCounts], None],
              report_every: float = 10.0, schedule: Schedule | None = None,
              rates: LiveRates | None = None) -> LiveCounts:
    """Tick until `stop` is set; `report` gets the running totals every `report_every` s."""
    rng = random.Random(seed ^ 0x5EED)
    live = Live(conn, await name_book(conn, random.Random(seed + 2)), rng, soldiers, rate,
                rates, schedule)
    await live.load_players()
    last_report = time.monotonic()
    while not stop.is_set():
        started = time.monotonic()
        await live.tick(tick)
        if time.monotonic() - last_report >= report_every:
            report(live.counts)
            last_report = time.monotonic()
        await sleep_unless_stopped(stop, tick - (time.monotonic() - started))
    return live.counts


