"""The rest of a soldier's page and API: weapons and vehicles (most kills first), the headline
history (a point per collection, with the ratios the chart plots), the per-item chart series,
and the whole page with the collection under way."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime

from bf4ps.db.connect import Conn
from bf4ps.db.queries import batch
from bf4ps.stats import history as history_series
from bf4ps.stats import read
from bf4ps.stats.history import ItemSeries, WeaponPoint
from bf4ps.stats.read import HistoryPoint, StoredVehicle, StoredWeapon
from bf4ps.views.soldier import (
    Model,
    Overview,
    Soldier,
    category_name,
    item_name,
    overview_of,
    percent,
    ratio,
)


class Weapon(Model):
    weapon_id: int
    name: str
    sid: str
    slug: str | None
    category: str
    kills: int | None
    headshots: int | None
    shots_fired: int | None
    shots_hit: int | None
    accuracy_percent: float | None
    headshot_percent: float | None
    kpm: float | None
    time_seconds: int | None
    service_stars: int | None
    fetched_at: datetime


class Vehicle(Model):
    vehicle_id: int
    name: str
    sid: str
    slug: str | None
    category: str
    kills: int | None
    kpm: float | None
    time_seconds: int | None
    destroyed: int | None
    service_stars: int | None
    fetched_at: datetime


@dataclass(frozen=True, slots=True)
class HistoryRow(HistoryPoint):
    """One collection's headline values (stats/read.py's point), with the ratios the chart
    plots."""

    kd: float | None = None
    accuracy_percent: float | None = None
    wl: float | None = None


class ItemChart(Model):
    """One weapon's or vehicle's series: epoch seconds and the plotted values, oldest first."""

    name: str
    t: list[int]
    kills: list[int | None]
    time_min: list[float | None]
    accuracy: list[float | None]


class Weapons(Model):
    soldier: Soldier
    weapons: list[Weapon]


class Vehicles(Model):
    soldier: Soldier
    vehicles: list[Vehicle]


class History(Model):
    soldier: Soldier
    history: list[HistoryRow]


class SoldierPage(Overview):
    """Everything the soldier page shows."""

    weapons: list[Weapon]
    vehicles: list[Vehicle]
    history: list[HistoryRow]
    weapon_history: list[ItemChart]
    vehicle_history: list[ItemChart]
    open_request: str | None  # the status page of a collection under way


def weapon_row(w: StoredWeapon) -> Weapon:
    i = w.item
    minutes = (i.time_equipped_seconds or 0) / 60
    return Weapon(
        weapon_id=w.weapon_id, name=item_name(i.name, i.slug), sid=i.name, slug=i.slug,
        category=category_name(i.category), kills=i.kills, headshots=i.headshots,
        shots_fired=i.shots_fired, shots_hit=i.shots_hit,
        accuracy_percent=round(i.accuracy_fraction * 100, 2)
        if i.accuracy_fraction is not None else percent(i.shots_hit, i.shots_fired),
        headshot_percent=percent(i.headshots, i.kills),
        kpm=round(i.kills / minutes, 3) if i.kills is not None and minutes else None,
        time_seconds=i.time_equipped_seconds, service_stars=i.service_stars,
        fetched_at=w.fetched_at)


def vehicle_row(v: StoredVehicle) -> Vehicle:
    i = v.item
    minutes = (i.time_in_seconds or 0) / 60
    return Vehicle(
        vehicle_id=v.vehicle_id, name=item_name(i.name, i.slug), sid=i.name, slug=i.slug,
        category=category_name(i.category), kills=i.kills,
        kpm=round(i.kills / minutes, 3) if i.kills is not None and minutes else None,
        time_seconds=i.time_in_seconds, destroyed=i.destroy_x_in_y,
        service_stars=i.service_stars, fetched_at=v.fetched_at)


def history_rows(points: list[HistoryPoint]) -> list[HistoryRow]:
    """Oldest first (as given)."""
    return [HistoryRow(**asdict(p), kd=ratio(p.kills, p.deaths),
                       accuracy_percent=percent(p.shots_hit, p.shots_fired),
                       wl=ratio(p.wins, p.losses)) for p in points]


async def weapons(conn: Conn, s: Soldier) -> Weapons:
    return Weapons(soldier=s, weapons=[weapon_row(w) for w in
                                       await read.weapons_of(conn, s.soldier_id)])


async def vehicles(conn: Conn, s: Soldier) -> Vehicles:
    return Vehicles(soldier=s, vehicles=[vehicle_row(v) for v in
                                         await read.vehicles_of(conn, s.soldier_id)])


async def history(conn: Conn, s: Soldier, limit: int = 100) -> History:
    points = await history_series.detailed_series(conn, s.soldier_id, limit)
    return History(soldier=s, history=history_rows(points))


def item_chart(series: list[ItemSeries]) -> list[ItemChart]:
    out = []
    for item in series:
        pts = item.points
        out.append(ItemChart(
            name=item.name, t=[int(p.fetched_at.timestamp()) for p in pts],
            kills=[p.kills for p in pts],
            time_min=[round(p.time_seconds / 60, 1) if p.time_seconds is not None else None
                      for p in pts],
            accuracy=[p.accuracy_percent if isinstance(p, WeaponPoint) else None
                      for p in pts]))
    return out


async def page(conn: Conn, s: Soldier) -> SoldierPage:
    """All of the page's reads go in one pipeline: one wait for the ten of them."""
    sid = {"soldier_id": s.soldier_id}
    (detailed, profile, states, changes, weapon_changes, vehicle_changes, collections,
     open_requests, weapon_rows, vehicle_rows) = await batch(
        conn, *read.overview_reads(s.soldier_id),
        *history_series.page_series_reads(s.soldier_id),
        ("interactive_open_for_soldier", sid), ("weapons_of", sid), ("vehicles_of", sid))
    ov = overview_of(s, read.overview_from(s.soldier_id, detailed, profile, states))
    series = history_series.page_series_from(changes, weapon_changes, vehicle_changes,
                                             collections)
    return SoldierPage(
        **dict(ov), weapons=[weapon_row(w) for w in read.weapons_from(weapon_rows)],
        vehicles=[vehicle_row(v) for v in read.vehicles_from(vehicle_rows)],
        history=history_rows(series.detailed),
        weapon_history=item_chart(series.weapons), vehicle_history=item_chart(series.vehicles),
        open_request=f"/requests/{open_requests[0]['request_id']}" if open_requests else None)
