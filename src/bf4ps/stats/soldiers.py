"""Soldier identity and provenance: one row per (persona id, platform), with name history."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple
from uuid import UUID

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one_row
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


async def upsert(conn: Conn, s: Sighting, *, eligible_since: datetime | None = None,
                 lease: tuple[int, UUID] | None = None) -> Upserted:
    """Record a sighting (identity, name history, provenance) and initialize its collection
    state (never attempted, for every resource) when the soldier is new, in one call
    (bf4ps_soldier_sighted, db/functions/soldiers.sql). The website's sightings are `manual`;
    a look-up's are `battlelog` and need the look-up job's (job id, lease token). BF4SW's
    sightings (which make a soldier active) are the scheduler's intake, not this. The sighting's
    times are the database's clock."""
    job_id, token = lease if lease is not None else (None, None)
    row = await one_row(conn, _Upserted, "soldier_sighted", {
        "persona_id": s.persona_id, "platform": s.platform.value, "name": s.name,
        "source": s.source.value, "eligible_since": eligible_since or s.first_seen,
        "job_id": job_id, "lease_token": token})
    return Upserted(row.soldier_id, row.inserted)
