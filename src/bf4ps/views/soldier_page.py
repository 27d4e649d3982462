"""The rest of a soldier's page and API: weapons and vehicles (most kills first), the headline
history (a point per collection, with the ratios the chart plots), the per-item chart series,
and the whole page with the collection under way."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import UTC, datetime
from itertools import pairwise
from typing import Any, NamedTuple, TypeVar
from uuid import UUID

from bf4ps.battlelog.models import VehicleItem, WeaponItem
from bf4ps.db.connect import Conn
from bf4ps.db.queries import Read, batch
from bf4ps.stats import gains, read
from bf4ps.stats import history as history_series
from bf4ps.stats.history import ItemSeries, VehiclePoint, WeaponPoint
from bf4ps.stats.items import VEHICLES, WEAPONS
from bf4ps.stats.progress_store import history_snapshot
from bf4ps.stats.read import HistoryPoint, StoredItem
from bf4ps.views import career as career_view
from bf4ps.views import last_session as last_session_view
from bf4ps.views import progress as progress_view
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
    # over the interval ending at this point (None at the first point and after a reset)
    interval_kills: int | None = None
    interval_kd: float | None = None
    interval_kpm: float | None = None
    interval_spm: float | None = None
    reset: bool = False  # a counter went down here: Battlelog reset the stats


class ItemChart(Model):
    """One weapon's or vehicle's series: epoch seconds and the plotted values, oldest first."""

    name: str
    t: list[int]
    kills: list[int | None]
    time_min: list[float | None]
    accuracy: list[float | None]
    interval_kills: list[int | None]  # gained since the previous point
    interval_accuracy: list[float | None]  # accuracy over the interval


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
    career: career_view.Career
    progress: progress_view.Progress
    last_session: last_session_view.PlaySession | None


class SoldierProgress(Model):
    """The progress part of the page (API)."""

    soldier: Soldier
    career: career_view.Career
    progress: progress_view.Progress


RowT = TypeVar("RowT", Weapon, Vehicle)


def item_row(model: type[RowT], s: StoredItem[WeaponItem] | StoredItem[VehicleItem],
             **kind_fields: Any) -> RowT:
    """A weapon's or vehicle's row: what both show, and the kind's own fields (the model
    refuses a field it does not have)."""
    i = s.item
    minutes = (i.seconds or 0) / 60
    return model(
        name=item_name(i.name, i.slug), sid=i.name, slug=i.slug,
        category=category_name(i.category), kills=i.kills,
        kpm=round(i.kills / minutes, 3) if i.kills is not None and minutes else None,
        time_seconds=i.seconds, service_stars=i.service_stars, fetched_at=s.fetched_at,
        **kind_fields)


def weapon_row(w: StoredItem[WeaponItem]) -> Weapon:
    i = w.item
    return item_row(
        Weapon, w, weapon_id=w.item_id, headshots=i.headshots, shots_fired=i.shots_fired,
        shots_hit=i.shots_hit, accuracy_percent=round(i.accuracy_fraction * 100, 2)
        if i.accuracy_fraction is not None else percent(i.shots_hit, i.shots_fired),
        headshot_percent=percent(i.headshots, i.kills))


def vehicle_row(v: StoredItem[VehicleItem]) -> Vehicle:
    return item_row(Vehicle, v, vehicle_id=v.item_id, destroyed=v.item.destroy_x_in_y)


POINT_FIELDS = tuple(f.name for f in fields(HistoryPoint))


def _values(p: HistoryPoint) -> dict[str, Any]:
    """The point's fields, shallow (dataclasses.asdict deep-copies every value: a third of
    the page's history work)."""
    return {name: getattr(p, name) for name in POINT_FIELDS}


def history_rows(points: list[HistoryPoint]) -> list[HistoryRow]:
    """Oldest first (as given), each with the rates over the interval that ends at it."""
    rows = []
    previous: gains.SoldierSnapshot | None = None
    for p in points:
        values = _values(p)
        g = None
        if p.changed:
            snap = history_snapshot(values)
            g = gains.soldier_gain(previous, snap) if previous is not None else None
            previous = snap
        rate = g if g is not None and not g.reset else None
        rows.append(HistoryRow(
            **values, kd=ratio(p.kills, p.deaths),
            accuracy_percent=percent(p.shots_hit, p.shots_fired), wl=ratio(p.wins, p.losses),
            interval_kills=rate.kills if rate else (0 if not p.changed else None),
            interval_kd=_round(rate.kd, 2) if rate else None,
            interval_kpm=_round(rate.kpm, 2) if rate else None,
            interval_spm=_round(rate.spm, 0) if rate else None,
            reset=bool(g and g.reset)))
    return rows


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


async def weapons(conn: Conn, s: Soldier) -> Weapons:
    return Weapons(soldier=s, weapons=[weapon_row(w) for w in
                                       await read.items_of(conn, WEAPONS, s.soldier_id)])


async def vehicles(conn: Conn, s: Soldier) -> Vehicles:
    return Vehicles(soldier=s, vehicles=[vehicle_row(v) for v in
                                         await read.items_of(conn, VEHICLES, s.soldier_id)])


async def history(conn: Conn, s: Soldier, limit: int = 100) -> History:
    points = await history_series.detailed_series(conn, s.soldier_id, limit)
    return History(soldier=s, history=history_rows(points))


def _item_snapshot(p: WeaponPoint | VehiclePoint) -> gains.ItemSnapshot:
    return gains.ItemSnapshot(
        at=p.fetched_at, kills=p.kills, seconds=p.time_seconds,
        shots_fired=p.shots_fired if isinstance(p, WeaponPoint) else None,
        shots_hit=p.shots_hit if isinstance(p, WeaponPoint) else None)


def _interval_gains(pts: tuple[WeaponPoint | VehiclePoint, ...]
                    ) -> list[gains.ItemGain | None]:
    """Per point, the gain over the interval that ends at it (None at the first point)."""
    snaps = [_item_snapshot(p) for p in pts]
    return [None, *(gains.item_gain(a, b) for a, b in pairwise(snaps))][:len(snaps)]


def item_chart(series: list[ItemSeries]) -> list[ItemChart]:
    """The charted items, the soldier's top item (most kills now) first: the chart opens on
    it."""
    out = []
    for item in sorted(series, key=lambda i: -(i.points[-1].kills or 0) if i.points else 0):
        pts = item.points
        interval = _interval_gains(pts)
        out.append(ItemChart(
            name=item.name, t=[int(p.fetched_at.timestamp()) for p in pts],
            kills=[p.kills for p in pts],
            time_min=[round(p.time_seconds / 60, 1) if p.time_seconds is not None else None
                      for p in pts],
            accuracy=[p.accuracy_percent if isinstance(p, WeaponPoint) else None
                      for p in pts],
            interval_kills=[None if g is None or g.reset else g.kills for g in interval],
            interval_accuracy=[None if g is None or g.reset else _round(g.accuracy_percent, 1)
                               for g in interval]))
    return out


class _OpenRequest(NamedTuple):
    request_id: UUID


async def page(conn: Conn, s: Soldier, now: datetime | None = None) -> SoldierPage:
    """All of the page's reads go in one pipeline: one wait for the fourteen of them."""
    sid = {"soldier_id": s.soldier_id}
    now = now or datetime.now(UTC)
    overview = read.overview_reads(s.soldier_id)
    charts = history_series.page_series_reads(s.soldier_id)
    open_request = Read(_OpenRequest, "interactive_open_for_soldier", sid)
    weapon_items = Read(read.stored_items(WEAPONS), WEAPONS.of_query, sid)
    vehicle_items = Read(read.stored_items(VEHICLES), VEHICLES.of_query, sid)
    progress_reads = progress_view.reads(s.soldier_id, now)
    session = last_session_view.read(s.soldier_id)
    await batch(conn, *overview, *charts, open_request, weapon_items, vehicle_items,
                *progress_reads, session)
    stored = read.overview_from(s.soldier_id, overview)
    ov = overview_of(s, stored)
    series = history_series.page_series_from(charts)
    opened = open_request.first
    return SoldierPage(
        **dict(ov), weapons=[weapon_row(w) for w in weapon_items.rows],
        vehicles=[vehicle_row(v) for v in vehicle_items.rows],
        history=history_rows(series.detailed),
        weapon_history=item_chart(series.weapons), vehicle_history=item_chart(series.vehicles),
        open_request=f"/requests/{opened.request_id}" if opened else None,
        career=career_view.career(s, stored),
        progress=progress_view.progress_from(progress_reads, now, ov.detailed_fetched_at),
        last_session=session.first)


async def progress(conn: Conn, s: Soldier, now: datetime | None = None) -> SoldierProgress:
    """The soldier's progress and career, in one pipeline."""
    now = now or datetime.now(UTC)
    overview = read.overview_reads(s.soldier_id)
    progress_reads = progress_view.reads(s.soldier_id, now)
    await batch(conn, *overview, *progress_reads)
    stored = read.overview_from(s.soldier_id, overview)
    return SoldierProgress(
        soldier=s, career=career_view.career(s, stored),
        progress=progress_view.progress_from(
            progress_reads, now, stored.detailed.fetched_at if stored.detailed else None))
