"""The intervals a snapshot write ends: written with the snapshot, in finalize.succeed's fenced
transaction, so a gain exists exactly when its two snapshots are stored (stats/gains.py has
the arithmetic).

* detailed: from the soldier's newest good history row before this fetch (a partial snapshot
  in between is bridged) to this one, when this one is good and changed something;
* weapons and vehicles: per item whose counters changed, from the stored current row (that
  item's last good snapshot) to the new values.

A failed collection writes nothing, so it never makes a gain; an outdated write (not newer than
what is stored) neither. The checks after storage (progress_check.py) judge each new row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from bf4ps.battlelog.models import DetailedStats, VehicleItem, WeaponItem
from bf4ps.db.connect import Conn
from bf4ps.db.queries import Read, execute, mapped
from bf4ps.stats import gains

ITEM_COLUMNS = ("item_id", "started_at", "kills", "seconds", "headshots", "shots_fired",
                "shots_hit", "stars_from", "stars_to", "reset")


def detailed_snapshot(stats: DetailedStats, at: datetime) -> gains.SoldierSnapshot:
    return gains.SoldierSnapshot(
        at=at, kills=stats.kills, deaths=stats.deaths, score=stats.score,
        seconds=stats.time_played_seconds, headshots=stats.headshots,
        shots_fired=stats.shots_fired, shots_hit=stats.shots_hit, rank=stats.rank)


def history_snapshot(row: Mapping[str, Any]) -> gains.SoldierSnapshot:
    """A detailed_stats_history row (progress_last_good_detailed, the page's history)."""
    return gains.SoldierSnapshot(
        at=row["fetched_at"], kills=row["kills"], deaths=row["deaths"], score=row["score"],
        seconds=row["time_played_seconds"], headshots=row["headshots"],
        shots_fired=row["shots_fired"], shots_hit=row["shots_hit"], rank=row["rank"])


def soldier_params(soldier_id: int, g: gains.SoldierGain) -> dict[str, object]:
    """soldier_interval_insert's named parameters: one interval's gains."""
    return {"soldier_id": soldier_id, "started_at": g.started_at, "ended_at": g.ended_at,
            "kills": g.kills, "deaths": g.deaths, "score": g.score, "seconds": g.seconds,
            "headshots": g.headshots, "shots_fired": g.shots_fired, "shots_hit": g.shots_hit,
            "rank_from": g.rank_from, "rank_to": g.rank_to, "reset": g.reset}


def previous_detailed(soldier_id: int, fetched_at: datetime) -> Read[gains.SoldierSnapshot]:
    """The read of where the interval a detailed write ends starts (record_detailed's)."""
    return Read(mapped(history_snapshot), "progress_last_good_detailed",
                {"soldier_id": soldier_id, "fetched_at": fetched_at})


async def record_detailed(conn: Conn, soldier_id: int, previous: gains.SoldierSnapshot | None,
                          stats: DetailedStats, fetched_at: datetime) -> bool:
    """The interval the detailed write just stored ends (previous: previous_detailed's row,
    read before it); True when one was written."""
    if previous is None:
        return False
    g = gains.soldier_gain(previous, detailed_snapshot(stats, fetched_at))
    if g is None:
        return False
    await execute(conn, "soldier_interval_insert", soldier_params(soldier_id, g))
    return True


def item_snapshot(item: WeaponItem | VehicleItem, at: datetime) -> gains.ItemSnapshot:
    if isinstance(item, WeaponItem):
        return gains.ItemSnapshot(at=at, kills=item.kills, seconds=item.time_equipped_seconds,
                                  headshots=item.headshots, shots_fired=item.shots_fired,
                                  shots_hit=item.shots_hit, stars=item.service_stars)
    return gains.ItemSnapshot(at=at, kills=item.kills, seconds=item.time_in_seconds,
                              stars=item.service_stars)


class StoredItem(NamedTuple):
    """A {item}s_before_write row: a stored item's last good snapshot."""

    guid: str
    item_id: int
    snapshot: gains.ItemSnapshot


def stored_item(row: Mapping[str, Any]) -> StoredItem:
    return StoredItem(row["guid"], row["item_id"], gains.ItemSnapshot(
        at=row["fetched_at"], kills=row["kills"], seconds=row["seconds"],
        headshots=row["headshots"], shots_fired=row["shots_fired"], shots_hit=row["shots_hit"],
        stars=row["stars"]))


def items_before(query: str, soldier_id: int) -> Read[StoredItem]:
    """The read of the stored items an items write replaces (record_items's)."""
    return Read(mapped(stored_item), query, {"soldier_id": soldier_id})


def _moved(g: gains.ItemGain) -> bool:
    return g.reset or any((g.kills, g.seconds, g.headshots, g.shots_fired, g.shots_hit,
                           g.stars))


def item_rows(before: list[StoredItem], items: Sequence[WeaponItem | VehicleItem],
              fetched_at: datetime) -> dict[str, list[Any]]:
    """The item_intervals_insert columns: one entry per item that gained (or reset)."""
    stored = {row.guid: row for row in before}
    cols: dict[str, list[Any]] = {name: [] for name in ITEM_COLUMNS}
    for item in items:
        row = stored.get(item.guid)
        if row is None:
            continue  # first seen: no earlier snapshot, no gain
        g = gains.item_gain(row.snapshot, item_snapshot(item, fetched_at))
        if g is None or not _moved(g):
            continue
        for name, value in zip(ITEM_COLUMNS, (
                row.item_id, g.started_at, g.kills, g.seconds, g.headshots, g.shots_fired,
                g.shots_hit, g.stars_from, g.stars_to, g.reset), strict=True):
            cols[name].append(value)
    return cols


async def record_items(conn: Conn, kind: str, soldier_id: int, before: list[StoredItem],
                       items: Sequence[WeaponItem | VehicleItem], fetched_at: datetime) -> int:
    """The per-item intervals a weapons or vehicles write ends; how many were written."""
    cols = item_rows(before, items, fetched_at)
    if not cols["item_id"]:
        return 0
    return await execute(conn, "item_intervals_insert",
                         {**cols, "soldier_id": soldier_id, "kind": kind,
                          "ended_at": fetched_at})
