"""The soldier page's reads. Every query is a primary-key lookup or a primary-key prefix range
(one soldier's rows), so the page costs the same at 1M soldiers as at 1k."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from psycopg.rows import BaseRowFactory, RowMaker, no_result

from bf4ps.battlelog.models import (
    DetailedStats,
    LinkedSoldier,
    ProfileStats,
    Progress,
    TopItem,
)
from bf4ps.db.connect import Conn
from bf4ps.db.queries import Read, all_rows, batch, column_names, mapped
from bf4ps.domain import ErrorClass, Resource, StateStatus
from bf4ps.stats.items import ItemKind, ItemT

if TYPE_CHECKING:
    from psycopg._cursor_base import BaseCursor

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


def detailed_from_row(row: Mapping[str, Any]) -> Stored[DetailedStats]:
    return Stored(row["fetched_at"],
                  DetailedStats(**{name: row[name] for name in DETAILED_FIELDS}))


def profile_from_row(row: Mapping[str, Any]) -> Stored[ProfileStats]:
    stats = ProfileStats(
        **{name: row[name] for name in PROFILE_SCALARS},
        top_weapons=tuple(TopItem(**x) for x in row["top_weapons"]),
        top_vehicles=tuple(TopItem(**x) for x in row["top_vehicles"]),
        progress=tuple(Progress(**x) for x in row["progress"]),
        linked_soldiers=tuple(LinkedSoldier(**x) for x in row["linked_soldiers"]),
    )
    return Stored(row["fetched_at"], stats)


def state_from_row(row: Mapping[str, Any]) -> ResourceState:
    error = row["last_error_class"]
    return ResourceState(Resource(row["resource"]), StateStatus(row["status"]),
                         row["last_success_at"], row["last_attempt_at"],
                         ErrorClass(error) if error else None)


class OverviewReads(NamedTuple):
    """The overview's three primary-key reads (for db.queries.batch)."""

    detailed: Read[Stored[DetailedStats]]
    profile: Read[Stored[ProfileStats]]
    states: Read[ResourceState]


def overview_reads(soldier_id: int) -> OverviewReads:
    params = {"soldier_id": soldier_id}
    return OverviewReads(Read(mapped(detailed_from_row), "detailed_current_of", params),
                         Read(mapped(profile_from_row), "profile_current_of", params),
                         Read(mapped(state_from_row), "collection_states_of", params))


def overview_from(soldier_id: int, reads: OverviewReads) -> SoldierOverview:
    """The overview from overview_reads, run."""
    return SoldierOverview(
        soldier_id=soldier_id, detailed=reads.detailed.first, profile=reads.profile.first,
        states={s.resource: s for s in reads.states.rows})


async def soldier_overview(conn: Conn, soldier_id: int) -> SoldierOverview:
    """Detailed and profile current rows (None until first collected) and the collection state
    of each resource. Three primary-key reads, sent in one pipeline."""
    reads = overview_reads(soldier_id)
    await batch(conn, *reads)
    return overview_from(soldier_id, reads)


def stored_items(kind: ItemKind[ItemT]) -> BaseRowFactory[StoredItem[ItemT]]:
    """The row factory of `kind`'s item rows (of_query): each a StoredItem, built from the
    row's values by position (some 170 rows a page)."""

    def factory(cursor: BaseCursor[Any, Any]) -> RowMaker[StoredItem[ItemT]]:
        names = column_names(cursor)
        if names is None:
            return no_result
        at = {name: i for i, name in enumerate(names)}
        item = itemgetter(*(at[f] for f in kind.fields))  # the item's fields in order
        make, key, fetched = kind.item, at[kind.id_column], at["fetched_at"]
        return lambda values: StoredItem(values[key], values[fetched], make(*item(values)))

    return factory


async def items_of(conn: Conn, kind: ItemKind[ItemT], soldier_id: int) -> list[StoredItem[ItemT]]:
    """The soldier's weapons or vehicles with their catalog names, most kills first."""
    return await all_rows(conn, stored_items(kind), kind.of_query, {"soldier_id": soldier_id})


async def detailed_history(conn: Conn, soldier_id: int, limit: int = 100) -> list[HistoryPoint]:
    """The newest `limit` detailed snapshots that differ from their predecessor, newest first."""
    return await all_rows(conn, HistoryPoint, "detailed_history_of",
                          {"soldier_id": soldier_id, "limit": limit})
