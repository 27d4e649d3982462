"""History series for the soldier page's charts: one point per successful collection.

The history tables keep a row only when values changed; the collection log (`succeeded`
events) says when each collection happened. A collection that changed nothing becomes a point
carrying the previous values forward, so a soldier collected ten times shows ten points."""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Generic, NamedTuple, TypeVar

from bf4ps.db.connect import Conn
from bf4ps.db.queries import Read, batch, mapped
from bf4ps.domain import Resource
from bf4ps.stats.item_names import display_name
from bf4ps.stats.read import HistoryPoint

SERIES_RESOURCES = (Resource.DETAILED, Resource.WEAPONS, Resource.VEHICLES)  # charted
FETCH_TO_SUCCESS = timedelta(minutes=15)  # a fetch's success event follows within a lease
T = TypeVar("T", bound="HistoryPoint | WeaponPoint | VehiclePoint")
P = TypeVar("P", bound="WeaponPoint | VehiclePoint")


@dataclass(frozen=True, slots=True)
class WeaponPoint:
    fetched_at: datetime
    kills: int | None
    shots_fired: int | None
    shots_hit: int | None
    time_seconds: int | None
    changed: bool = True

    @property
    def accuracy_percent(self) -> float | None:
        if not self.shots_fired or self.shots_hit is None:
            return None
        return round(self.shots_hit / self.shots_fired * 100, 2)


@dataclass(frozen=True, slots=True)
class VehiclePoint:
    fetched_at: datetime
    kills: int | None
    time_seconds: int | None
    destroyed: int | None
    changed: bool = True


@dataclass(frozen=True, slots=True)
class ItemSeries:
    """One weapon's or vehicle's history, oldest first."""

    item_id: int
    name: str
    points: tuple[WeaponPoint | VehiclePoint, ...]


def per_collection(changes: list[T], collected: list[datetime]) -> list[T]:
    """`changes` (oldest first) plus a carried-forward point for each collection in `collected`
    that wrote no change. A collection's change row was fetched shortly before its `succeeded`
    event (within a job's lease) and after the previous collection; a collection with no change
    row in that window found the values unchanged."""
    times = [c.fetched_at for c in changes]
    out = list(changes)
    previous: datetime | None = None
    for at in sorted(collected):
        start = at - FETCH_TO_SUCCESS if previous is None else max(previous,
                                                                    at - FETCH_TO_SUCCESS)
        lo, hi = bisect.bisect_right(times, start), bisect.bisect_right(times, at)
        previous = at
        if hi > lo or hi == 0:  # a change was written, or nothing to carry forward yet
            continue
        out.append(replace(changes[hi - 1], fetched_at=at, changed=False))
    out.sort(key=lambda p: p.fetched_at)
    return out


class Collected(NamedTuple):
    """A collections_of row: when one resource of the soldier was collected."""

    resource: str
    collected_at: datetime


@dataclass(frozen=True, slots=True)
class ItemPoint(Generic[P]):
    """A {item}_history_of row: one weapon's or vehicle's point, with its item."""

    item_id: int
    name: str  # the display name
    point: P


def collected_times(rows: list[Collected],
                    resources: tuple[Resource, ...]) -> dict[Resource, list[datetime]]:
    """The rows of the collections_of query, per resource."""
    collected: dict[Resource, list[datetime]] = {r: [] for r in resources}
    for row in rows:
        collected[Resource(row.resource)].append(row.collected_at)
    return collected


def detailed_points(changes: list[HistoryPoint], collected: list[datetime],
                    limit: int) -> list[HistoryPoint]:
    """The headline history from its change rows, oldest first, one point per collection."""
    return per_collection(sorted(changes, key=lambda p: p.fetched_at), collected)[-limit:]


async def detailed_series(conn: Conn, soldier_id: int, limit: int = 100) -> list[HistoryPoint]:
    """The headline history, oldest first, one point per detailed collection."""
    sid = {"soldier_id": soldier_id, "limit": limit}
    changes = Read(HistoryPoint, "detailed_history_of", sid)
    collections = Read(Collected, "collections_of",
                       {**sid, "resources": [Resource.DETAILED.value]})
    await batch(conn, changes, collections)
    detailed = collected_times(collections.rows, (Resource.DETAILED,))[Resource.DETAILED]
    return detailed_points(changes.rows, detailed, limit)


def weapon_point(r: Mapping[str, Any]) -> ItemPoint[WeaponPoint]:
    return ItemPoint(r["weapon_id"], display_name(r["name"], r["slug"]), WeaponPoint(
        r["fetched_at"], r["kills"], r["shots_fired"], r["shots_hit"],
        r["time_equipped_seconds"]))


def vehicle_point(r: Mapping[str, Any]) -> ItemPoint[VehiclePoint]:
    return ItemPoint(r["vehicle_id"], display_name(r["name"], r["slug"]), VehiclePoint(
        r["fetched_at"], r["kills"], r["time_in_seconds"], r["destroy_x_in_y"]))


def item_series(rows: list[ItemPoint[P]], collected: list[datetime]) -> list[ItemSeries]:
    """Per item (in the rows' order: most kills first), its points, one per collection."""
    grouped: dict[int, tuple[str, list[P]]] = {}
    for r in rows:
        grouped.setdefault(r.item_id, (r.name, []))[1].append(r.point)
    return [ItemSeries(item_id, name, tuple(per_collection(
        sorted(points, key=lambda p: p.fetched_at), collected)))
        for item_id, (name, points) in grouped.items()]


@dataclass(frozen=True, slots=True)
class PageSeries:
    """Everything the soldier page charts."""

    detailed: list[HistoryPoint]
    weapons: list[ItemSeries]
    vehicles: list[ItemSeries]


class PageSeriesReads(NamedTuple):
    """The headline, weapon and vehicle histories and the collection times of the three (for
    db.queries.batch; page_series_from builds the series from them)."""

    detailed: Read[HistoryPoint]
    weapons: Read[ItemPoint[WeaponPoint]]
    vehicles: Read[ItemPoint[VehiclePoint]]
    collections: Read[Collected]


def page_series_reads(soldier_id: int, items: int = 12, limit: int = 100) -> PageSeriesReads:
    sid = {"soldier_id": soldier_id, "limit": limit}
    return PageSeriesReads(
        Read(HistoryPoint, "detailed_history_of", sid),
        Read(mapped(weapon_point), "weapon_history_of", {**sid, "items": items}),
        Read(mapped(vehicle_point), "vehicle_history_of", {**sid, "items": items}),
        Read(Collected, "collections_of",
             {**sid, "resources": [r.value for r in SERIES_RESOURCES]}))


def page_series_from(reads: PageSeriesReads, limit: int = 100) -> PageSeries:
    collected = collected_times(reads.collections.rows, SERIES_RESOURCES)
    return PageSeries(
        detailed=detailed_points(reads.detailed.rows, collected[Resource.DETAILED], limit),
        weapons=item_series(reads.weapons.rows, collected[Resource.WEAPONS]),
        vehicles=item_series(reads.vehicles.rows, collected[Resource.VEHICLES]))
