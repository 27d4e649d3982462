"""The soldier page's reads. Every query is a primary-key lookup or a primary-key prefix range
(one soldier's rows), so the page costs the same at 1M soldiers as at 1k."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from operator import itemgetter
from typing import Any, Generic, TypeVar

from bf4ps.battlelog.models import (
    DetailedStats,
    LinkedSoldier,
    ProfileStats,
    Progress,
    TopItem,
)
from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, batch
from bf4ps.domain import ErrorClass, Resource, StateStatus
from bf4ps.stats.items import ItemKind, ItemT

DETAILED_FIELDS = tuple(f.name for f in fields(DetailedStats))
PROFILE_SCALARS = tuple(f.name for f in fields(ProfileStats)
                        if f.name not in ("top_weapons", "top_vehicles", "progress",
                                          "linked_soldiers"))


StatsT = TypeVar("StatsT", DetailedStats, ProfileStats)


@dataclass(frozen=True, slots=True)
class Stored(Generic[StatsT]):
    """A soldier's stored detailed statistics or profile, and when they were collected."""

    fetched_at: datetime
    stats: StatsT


@dataclass(frozen=True, slots=True)
class ResourceState:
    """Where collection of one resource stands (collection_state)."""

    resource: Resource
    status: StateStatus
    last_success_at: datetime | None
    last_attempt_at: datetime | None
    last_error_class: ErrorClass | None


@dataclass(frozen=True, slots=True)
class SoldierOverview:
    soldier_id: int
    detailed: Stored[DetailedStats] | None
    profile: Stored[ProfileStats] | None
    states: dict[Resource, ResourceState]


@dataclass(frozen=True, slots=True)
class StoredItem(Generic[ItemT]):
    """A soldier's stored weapon or vehicle."""

    item_id: int  # weapon_id / vehicle_id
    fetched_at: datetime  # the collection that last changed this item's values
    item: ItemT


@dataclass(frozen=True, slots=True)
class HistoryPoint:
    """One detailed_stats_history row's headline values."""

    fetched_at: datetime
    kills: int | None
    deaths: int | None
    score: int | None
    time_played_seconds: int | None
    skill: int | None
    rank: int | None
    wins: int | None
    losses: int | None
    shots_fired: int | None
    shots_hit: int | None
    headshots: int | None
    score_per_minute: float | None
    kills_per_minute: float | None
    changed: bool = True  # False: a collection that found the values unchanged


def detailed_from_row(row: dict[str, Any]) -> Stored[DetailedStats]:
    return Stored(row["fetched_at"],
                  DetailedStats(**{name: row[name] for name in DETAILED_FIELDS}))


def profile_from_row(row: dict[str, Any]) -> Stored[ProfileStats]:
    stats = ProfileStats(
        **{name: row[name] for name in PROFILE_SCALARS},
        top_weapons=tuple(TopItem(**x) for x in row["top_weapons"]),
        top_vehicles=tuple(TopItem(**x) for x in row["top_vehicles"]),
        progress=tuple(Progress(**x) for x in row["progress"]),
        linked_soldiers=tuple(LinkedSoldier(**x) for x in row["linked_soldiers"]),
    )
    return Stored(row["fetched_at"], stats)


def state_from_row(row: dict[str, Any]) -> ResourceState:
    error = row["last_error_class"]
    return ResourceState(Resource(row["resource"]), StateStatus(row["status"]),
                         row["last_success_at"], row["last_attempt_at"],
                         ErrorClass(error) if error else None)


def overview_reads(soldier_id: int) -> list[tuple[str, dict[str, Any]]]:
    """The overview's three primary-key reads (for db.queries.batch): detailed, profile,
    collection states."""
    params = {"soldier_id": soldier_id}
    return [("detailed_current_of", params), ("profile_current_of", params),
            ("collection_states_of", params)]


def overview_from(soldier_id: int, detailed: list[dict[str, Any]],
                  profile: list[dict[str, Any]], states: list[dict[str, Any]]) -> SoldierOverview:
    """The overview from the rows of overview_reads."""
    return SoldierOverview(
        soldier_id=soldier_id,
        detailed=detailed_from_row(detailed[0]) if detailed else None,
        profile=profile_from_row(profile[0]) if profile else None,
        states={s.resource: s for s in map(state_from_row, states)},
    )


async def soldier_overview(conn: Conn, soldier_id: int) -> SoldierOverview:
    """Detailed and profile current rows (None until first collected) and the collection state
    of each resource. Three primary-key reads, sent in one pipeline."""
    return overview_from(soldier_id, *await batch(conn, *overview_reads(soldier_id)))


def items_from(kind: ItemKind[ItemT], rows: list[dict[str, Any]]) -> list[StoredItem[ItemT]]:
    item = itemgetter(*kind.fields)  # the item's fields in order (some 170 rows a page)
    make, key = kind.item, kind.id_column
    return [StoredItem(row[key], row["fetched_at"], make(*item(row))) for row in rows]


async def items_of(conn: Conn, kind: ItemKind[ItemT], soldier_id: int) -> list[StoredItem[ItemT]]:
    """The soldier's weapons or vehicles with their catalog names, most kills first."""
    return items_from(kind, await all_rows(conn, kind.of_query, {"soldier_id": soldier_id}))


async def detailed_history(conn: Conn, soldier_id: int, limit: int = 100) -> list[HistoryPoint]:
    """The newest `limit` detailed snapshots that differ from their predecessor, newest first."""
    rows = await all_rows(conn, "detailed_history_of", {"soldier_id": soldier_id, "limit": limit})
    return [HistoryPoint(**row) for row in rows]
