"""History series for the soldier page's charts: one point per successful collection.

The history tables keep a row only when values changed; the collection log (`succeeded`
events) says when each collection happened. A collection that changed nothing becomes a point
carrying the previous values forward, so a soldier collected ten times shows ten points."""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, TypeVar

from bf4ps.db.connect import Conn
from bf4ps.db.queries import batch
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


def collected_times(rows: list[dict[str, Any]],
                    resources: tuple[Resource, ...]) -> dict[Resource, list[datetime]]:
    """The rows of the collections_of query, per resource."""
    collected: dict[Resource, list[datetime]] = {r: [] for r in resources}
    for row in rows:
        collected[Resource(row["resource"])].append(row["collected_at"])
    return collected


def detailed_points(changes: list[dict[str, Any]], collected: list[datetime],
                    limit: int) -> list[HistoryPoint]:
    """The headline history from its change rows, oldest first, one point per collection."""
    points = sorted((HistoryPoint(**row) for row in changes), key=lambda p: p.fetched_at)
    return per_collection(points, collected)[-limit:]


async def detailed_series(conn: Conn, soldier_id: int, limit: int = 100) -> list[HistoryPoint]:
    """The headline history, oldest first, one point per detailed collection."""
    sid = {"soldier_id": soldier_id, "limit": limit}
    changes, collections = await batch(
        conn, ("detailed_history_of", sid),
        ("collections_of", {**sid, "resources": [Resource.DETAILED.value]}))
    detailed = collected_times(collections, (Resource.DETAILED,))[Resource.DETAILED]
    return detailed_points(changes, detailed, limit)


def weapon_point(r: dict[str, Any]) -> WeaponPoint:
    return WeaponPoint(r["fetched_at"], r["kills"], r["shots_fired"], r["shots_hit"],
                       r["time_equipped_seconds"])


def vehicle_point(r: dict[str, Any]) -> VehiclePoint:
    return VehiclePoint(r["fetched_at"], r["kills"], r["time_in_seconds"], r["destroy_x_in_y"])


def item_series(rows: list[dict[str, Any]], id_key: str, point: Callable[[dict[str, Any]], P],
                collected: list[datetime]) -> list[ItemSeries]:
    """Per item (in the rows' order: most kills first), its points, one per collection."""
    grouped: dict[int, tuple[str, list[P]]] = {}
    for r in rows:
        grouped.setdefault(r[id_key], (display_name(r["name"], r["slug"]), []))[1].append(
            point(r))
    return [ItemSeries(item_id, name, tuple(per_collection(
        sorted(points, key=lambda p: p.fetched_at), collected)))
        for item_id, (name, points) in grouped.items()]


@dataclass(frozen=True, slots=True)
class PageSeries:
    """Everything the soldier page charts."""

    detailed: list[HistoryPoint]
    weapons: list[ItemSeries]
    vehicles: list[ItemSeries]


def page_series_reads(soldier_id: int, items: int = 12,
                      limit: int = 100) -> list[tuple[str, dict[str, Any]]]:
    """The headline, weapon and vehicle histories and the collection times of the three
    (for db.queries.batch; page_series_from builds the series from their rows)."""
    sid = {"soldier_id": soldier_id, "limit": limit}
    return [("detailed_history_of", sid), ("weapon_history_of", {**sid, "items": items}),
            ("vehicle_history_of", {**sid, "items": items}),
            ("collections_of", {**sid, "resources": [r.value for r in SERIES_RESOURCES]})]


def page_series_from(changes: list[dict[str, Any]], weapons: list[dict[str, Any]],
                     vehicles: list[dict[str, Any]], collections: list[dict[str, Any]],
                     limit: int = 100) -> PageSeries:
    collected = collected_times(collections, SERIES_RESOURCES)
    return PageSeries(
        detailed=detailed_points(changes, collected[Resource.DETAILED], limit),
        weapons=item_series(weapons, "weapon_id", weapon_point, collected[Resource.WEAPONS]),
        vehicles=item_series(vehicles, "vehicle_id", vehicle_point,
                             collected[Resource.VEHICLES]))
