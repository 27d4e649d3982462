"""Writing one batch of BF4SW identities into BF4PS, set-based: soldiers, name history,
provenance and collection state, a handful of statements per batch whatever its size.

Each step is a function of the database (db/functions/feeder.sql `bf4ps_intake_*`: at most
10,000 soldiers a batch, no sighting ahead of the database's clock): earlier first_seen and
later last_seen win, the current name follows the newest sighting, so importing the same
identity twice (or in two halves) converges to the same row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, q, scalar
from bf4ps.domain import Platform
from bf4ps.scheduler.intake_source import Identity


@dataclass(frozen=True, slots=True)
class Stored:
    soldier_id: int
    identity: Identity
    inserted: bool


@dataclass(frozen=True, slots=True)
class StoreResult:
    soldiers: list[Stored]  # in the identities' (discovery) order
    names_new: int


SOLDIERS_A_CALL = 10_000  # the functions' bounds (db/functions/feeder.sql bf4ps_intake_*)
NAMES_A_CALL = 100_000


async def store(conn: Conn, identities: list[Identity], now: datetime) -> StoreResult:
    """Upsert the identities and everything that hangs off them (caller's transaction), in
    parts within the functions' bounds (a batch of up to 100,000 aliases is allowed)."""
    soldiers: list[Stored] = []
    names_new = 0
    for at in range(0, len(identities), SOLDIERS_A_CALL):
        part = await _store(conn, identities[at:at + SOLDIERS_A_CALL], now)
        soldiers += part.soldiers
        names_new += part.names_new
    return StoreResult(soldiers, names_new)


async def _store(conn: Conn, identities: list[Identity], now: datetime) -> StoreResult:
    stored = await _soldiers(conn, identities)
    ids = [s.soldier_id for s in stored]
    names_new = await _names(conn, stored)
    await conn.execute(q("intake_upsert_sources"), {
        "soldier_ids": ids, "first_seen": [s.identity.first_seen for s in stored],
        "last_seen": [s.identity.last_seen for s in stored], "now": now})
    return StoreResult(stored, names_new)


class _Upserted(NamedTuple):
    soldier_id: int
    persona_id: int
    platform: str
    inserted: bool


async def _soldiers(conn: Conn, identities: list[Identity]) -> list[Stored]:
    by_key: dict[tuple[int, Platform], tuple[int, bool]] = {}
    for row in await all_rows(conn, _Upserted, "soldiers_upsert", {
        "persona_ids": [i.persona_id for i in identities],
        "platforms": [i.platform.value for i in identities],
        "names": [i.current_name for i in identities],
        "first_seen": [i.first_seen for i in identities],
        "played_at": [i.last_seen for i in identities]}):
        by_key[(row.persona_id, Platform(row.platform))] = (row.soldier_id, row.inserted)
    out: list[Stored] = []
    for identity in identities:
        soldier_id, inserted = by_key[(identity.persona_id, identity.platform)]
        out.append(Stored(soldier_id, identity, inserted))
    return out


async def _names(conn: Conn, stored: list[Stored]) -> int:
    soldier_ids: list[int] = []
    names: list[str] = []
    firsts: list[datetime] = []
    lasts: list[datetime] = []
    for s in stored:
        for name, (first, last) in s.identity.names.items():
            soldier_ids.append(s.soldier_id)
            names.append(name)
            firsts.append(first)
            lasts.append(last)
    added = 0
    for at in range(0, len(soldier_ids), NAMES_A_CALL):
        part = slice(at, at + NAMES_A_CALL)
        added += int(await scalar(conn, "intake_upsert_names", {
            "soldier_ids": soldier_ids[part], "names": names[part], "first_seen": firsts[part],
            "last_seen": lasts[part]}))
    return added
