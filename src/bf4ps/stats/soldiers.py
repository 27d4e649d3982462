"""Soldier identity and provenance: one row per (persona id, platform), with name history."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one_row, q
from bf4ps.domain import Platform, Resource, SourceType

ALL_RESOURCES = [r.value for r in Resource]


@dataclass(frozen=True, slots=True)
class Sighting:
    persona_id: int
    platform: Platform
    name: str
    first_seen: datetime
    last_seen: datetime
    source: SourceType


@dataclass(frozen=True, slots=True)
class Upserted:
    soldier_id: int
    inserted: bool


class _Upserted(NamedTuple):
    soldier_id: int
    inserted: bool


async def upsert(conn: Conn, s: Sighting, *, eligible_since: datetime | None = None) -> Upserted:
    """Record a sighting (identity, name history, provenance) and initialize its collection
    state (never attempted, for every resource) when the soldier is new. Only a BF4SW sighting
    is a time the soldier was seen playing (the soldier's last_seen_at)."""
    row = await one_row(conn, _Upserted, "soldiers_upsert", {
        "persona_ids": [s.persona_id], "platforms": [s.platform.value], "names": [s.name],
        "first_seen": [s.first_seen],
        "played_at": [s.last_seen if s.source is SourceType.BF4SW else None],
        "name_confirmed": s.source is SourceType.BATTLELOG})
    soldier_id = row.soldier_id
    params = {"soldier_id": soldier_id, "name": s.name, "first_seen": s.first_seen,
              "last_seen": s.last_seen, "source": s.source.value}
    await conn.execute(q("soldier_name_upsert"), params)
    await conn.execute(q("soldier_source_upsert"), params)
    await conn.execute(q("state_init"), {"soldier_id": soldier_id, "resources": ALL_RESOURCES,
                                         "eligible_since": eligible_since or s.first_seen})
    return Upserted(soldier_id, row.inserted)
