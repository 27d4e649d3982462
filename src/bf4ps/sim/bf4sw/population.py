"""A simulated BF4SW population: generated in memory from a seed (see shape.py for its shape),
bulk-loaded with COPY in BF4SW discovery order (ids follow first_seen, as BF4SW inserts a row
when it first sees a name).

Persona ids are persona_id_for(first alias name, platform), so the Battlelog simulator knows
every soldier BF4SW reports. Timestamps are relative to an anchor (the BF4SW database's clock
at fill time); everything else depends on the seed only.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, q
from bf4ps.domain import Platform
from bf4ps.sim.bf4sw import shape
from bf4ps.sim.bf4sw.names import NameBook
from bf4ps.sim.personas import persona_id_for


@dataclass(frozen=True, slots=True)
class AliasRow:
    platform: str  # BF4SW's string
    persona_id: int
    name: str
    first_seen: datetime
    last_seen: datetime

    def as_tuple(self) -> tuple[str, int, str, datetime, datetime]:
        return (self.platform, self.persona_id, self.name, self.first_seen, self.last_seen)


def generate(n: int, seed: int, anchor: datetime) -> list[AliasRow]:
    """The alias rows of `n` personas, oldest first_seen first."""
    rng = random.Random(seed)
    book = NameBook(random.Random(seed + 1))
    platforms = shape.shuffled_quota(rng, n, shape.PLATFORM_SHARES)
    buckets = shape.shuffled_quota(rng, n, [(b, b[2]) for b in shape.LAST_SEEN_BUCKETS])
    rows: list[AliasRow] = []
    for platform, bucket in zip(platforms, buckets, strict=True):
        rows.extend(_persona(rng, book, platform, bucket, anchor))
    rows.sort(key=lambda r: (r.first_seen, r.platform, r.persona_id, r.name))
    return rows


def _persona(rng: random.Random, book: NameBook, platform: Platform,
             bucket: tuple[float, float, float], anchor: datetime) -> list[AliasRow]:
    raw = shape.raw_string(rng, platform)
    last_age = shape.last_seen_age(rng, bucket)
    first_age = shape.first_seen_age(rng, last_age)
    count = shape.alias_count(rng, first_age - last_age)
    spans = shape.split_span(rng, first_age, last_age, count)
    names = [book.take(platform)] + [book.take(platform, first=False) for _ in spans[1:]]
    persona = persona_id_for(names[0], platform)
    ages = [(raw, name, span) for name, span in zip(names, spans, strict=True)]
    if platform is not Platform.PC and rng.random() < shape.UPGRADE_SHARE:
        ages = _upgraded(rng, ages)
    return [AliasRow(r, persona, name, anchor - timedelta(seconds=fa),
                     anchor - timedelta(seconds=la)) for r, name, (fa, la) in ages]


def _upgraded(rng: random.Random, ages: list[tuple[str, str, tuple[float, float]]],
              ) -> list[tuple[str, str, tuple[float, float]]]:
    """The latest name is also seen under the console's successor string from some point on."""
    raw, name, (first_age, last_age) = ages[-1]
    if first_age - last_age < shape.MIN_RENAME_SPAN or raw not in shape.UPGRADES:
        return ages
    before, after = shape.split_span(rng, first_age, last_age, 2)
    return [*ages[:-1], (raw, name, before), (shape.UPGRADES[raw], name, after)]


# ---------------------------------------------------------------- database


async def ensure_table(conn: Conn) -> None:
    await conn.execute(q("sim_bf4sw_create"))


async def row_count(conn: Conn) -> int:
    cur = await conn.execute(q("sim_bf4sw_count"))
    row = await cur.fetchone()
    return cast(int, row["n"]) if row else 0


async def db_now(conn: Conn) -> datetime:
    cur = await conn.execute(q("sim_bf4sw_now"))
    row = await cur.fetchone()
    assert row is not None
    return cast(datetime, row["now"])


async def load(conn: Conn, rows: list[AliasRow]) -> None:
    """COPY the rows in order (so ids follow it), then refresh the planner's statistics."""
    async with conn.transaction(), conn.cursor() as cur, cur.copy(q("sim_bf4sw_copy")) as copy:
        for row in rows:
            await copy.write_row(row.as_tuple())
    await conn.execute(q("sim_bf4sw_analyze"))


async def fill(conn: Conn, n: int, seed: int, *, reset: bool = False) -> int:
    """Create the table if missing and fill it with `n` personas, unless it already has rows
    (then nothing happens; `reset` empties it first). Returns the rows written."""
    await ensure_table(conn)
    if reset:
        await conn.execute(q("sim_bf4sw_truncate"))
    elif await row_count(conn):
        return 0
    rows = generate(n, seed, await db_now(conn))
    await load(conn, rows)
    return len(rows)


@dataclass(frozen=True, slots=True)
class CensusRow:
    """One platform string's alias rows and personas, and how many were seen lately."""

    platform: str
    aliases: int
    personas: int
    renamed: int  # personas with more than one alias
    seen_1h: int  # personas whose latest sighting is within the hour ...
    seen_24h: int
    seen_7d: int
    seen_30d: int

    def seen(self) -> tuple[tuple[str, int], ...]:
        """(window, personas seen within it), shortest window first."""
        return (("1h", self.seen_1h), ("24h", self.seen_24h), ("7d", self.seen_7d),
                ("30d", self.seen_30d))


async def census(conn: Conn) -> list[CensusRow]:
    return await all_rows(conn, CensusRow, "sim_bf4sw_census")
