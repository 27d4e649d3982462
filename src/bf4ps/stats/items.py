"""Per-item statistics (weapons, vehicles): catalog, current row per item, compact history.

A write is two statements, one round trip each whatever the number of items (columns sent as
arrays, unnested server-side; stats.sql): `<kind>_catalog_sync` inserts the guids the catalog
lacks, in guid order (concurrent collectors queue instead of deadlocking), and refreshes a
changed or day-old row under SKIP LOCKED; `<kind>_stats_write`, a new statement that sees the
catalog rows committed meanwhile, upserts only new or changed items and appends history for
changed counters (a first-seen item only when a counter is positive: unused weapons have no
history). Items missing from a list are kept, never deleted (a partial answer never erases
last-known-good stats); an unchanged item is not rewritten, so fetched_at is the collection
that last changed it. No backwards: the write is skipped when anything stored is as new.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Generic, NamedTuple, TypeVar

from bf4ps.battlelog.models import VehicleItem, WeaponItem
from bf4ps.db.connect import Conn
from bf4ps.db.queries import FLOAT_COLUMNS, Read, batch, one_row
from bf4ps.domain import Resource
from bf4ps.stats.progress_store import items_before, record_items
from bf4ps.stats.snapshot import Written

CATALOG_FIELDS = ("guid", "name", "slug", "category", "code")
GUID_MAX_LENGTH = 64  # the catalogs' CHECK
ItemT = TypeVar("ItemT", WeaponItem, VehicleItem)


class CatalogMismatch(ValueError):
    """An item's guid was not in the catalog right after the catalog sync (cannot happen unless
    the catalog is edited concurrently); raised so the write is not silently partial."""


@dataclass(frozen=True, slots=True)
class ItemKind(Generic[ItemT]):
    """One item kind, from its queries to its rows: the Battlelog item, the resource and the
    named queries that write and read it."""

    name: str  # weapon | vehicle: item_intervals.kind, and <name>_id names a catalog row
    resource: Resource
    item: type[ItemT]
    catalog_query: str
    stats_query: str
    before_query: str  # the stored items, where each one's next interval starts
    of_query: str  # the soldier's items with their catalog names, most kills first

    @property
    def fields(self) -> tuple[str, ...]:
        """The item's fields, in order (the catalog's, then the counters)."""
        return tuple(f.name for f in fields(self.item))

    @property
    def stat_fields(self) -> tuple[str, ...]:
        """The columns of the stats write: the guid and the counters."""
        return ("guid", *self.fields[len(CATALOG_FIELDS):])

    @property
    def id_column(self) -> str:
        return f"{self.name}_id"


WEAPONS: ItemKind[WeaponItem] = ItemKind(
    "weapon", Resource.WEAPONS, WeaponItem, "weapon_catalog_sync", "weapon_stats_write",
    "weapons_before_write", "weapons_of")
VEHICLES: ItemKind[VehicleItem] = ItemKind(
    "vehicle", Resource.VEHICLES, VehicleItem, "vehicle_catalog_sync", "vehicle_stats_write",
    "vehicles_before_write", "vehicles_of")
KINDS = (WEAPONS, VEHICLES)
WEAPON_STAT_FIELDS = WEAPONS.stat_fields
VEHICLE_STAT_FIELDS = VEHICLES.stat_fields


def unique_by_guid(items: Sequence[WeaponItem | VehicleItem]) -> list[WeaponItem | VehicleItem]:
    """First occurrence of each guid (the parsers already drop repeats; a repeat here would make
    an upsert touch one row twice). ValueError for a guid the catalog cannot hold, before any
    statement runs: a data error, not a database outage to retry."""
    seen: set[str] = set()
    kept = []
    for item in items:
        if not item.guid.strip() or len(item.guid) > GUID_MAX_LENGTH:
            raise ValueError(f"unusable item guid {item.guid[:80]!r}")
        if item.guid not in seen:
            seen.add(item.guid)
            kept.append(item)
    return kept


ItemValue = str | int | float | None  # a field of a WeaponItem or VehicleItem


def column(items: Sequence[WeaponItem | VehicleItem], name: str) -> list[ItemValue]:
    values = [getattr(item, name) for item in items]
    if name in FLOAT_COLUMNS:  # psycopg refuses lists mixing int and float (0 vs 0.5)
        return [None if v is None else float(v) for v in values]
    return values


def columns(items: Sequence[WeaponItem | VehicleItem],
            fields: tuple[str, ...]) -> dict[str, list[ItemValue]]:
    """One array parameter per field: {"kills": [12, None, ...], ...}."""
    return {name: column(items, name) for name in fields}


async def write_items(conn: Conn, kind: ItemKind[ItemT], soldier_id: int,
                      items: Sequence[ItemT], fetched_at: datetime) -> Written:
    """Catalog sync, then current rows and history: two statements, whatever the item count."""
    unique = unique_by_guid(items)
    if not unique:
        return Written()  # an empty list keeps everything stored (last-known-good)
    before = items_before(kind.before_query, soldier_id)  # where the intervals start
    sync = Read(_Synced, kind.catalog_query,
                {**columns(unique, CATALOG_FIELDS), "seen_at": fetched_at})
    await batch(conn, before, sync)
    catalog = sync.rows[0]
    params = {**columns(unique, kind.stat_fields), "soldier_id": soldier_id,
              "fetched_at": fetched_at}
    row = await one_row(conn, _StatsWritten, kind.stats_query, params)
    if row.outdated:
        return Written(catalog_inserted=catalog.catalog_inserted,
                       catalog_refreshed=catalog.catalog_refreshed, outdated=True)
    if row.matched != len(unique):
        raise CatalogMismatch(f"{len(unique) - row.matched} item(s) not in the catalog")
    await record_items(conn, kind.name, soldier_id, before.rows, unique, fetched_at)
    return Written(current_rows=row.current_written, history_rows=row.history_written,
                   catalog_inserted=catalog.catalog_inserted,
                   catalog_refreshed=catalog.catalog_refreshed)


class _Synced(NamedTuple):
    catalog_inserted: int
    catalog_refreshed: int


class _StatsWritten(NamedTuple):
    outdated: bool
    matched: int
    current_written: int
    history_written: int


async def write_weapons(conn: Conn, soldier_id: int, items: Sequence[WeaponItem],
                        fetched_at: datetime) -> Written:
    """Store a soldier's weapon list (catalog, current per weapon, history of changes)."""
    return await write_items(conn, WEAPONS, soldier_id, items, fetched_at)


async def write_vehicles(conn: Conn, soldier_id: int, items: Sequence[VehicleItem],
                         fetched_at: datetime) -> Written:
    """Store a soldier's vehicle list (catalog, current per vehicle, history of changes)."""
    return await write_items(conn, VEHICLES, soldier_id, items, fetched_at)
