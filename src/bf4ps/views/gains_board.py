"""The "this week" gains leaderboards as the website and API show them: one page of a
precomputed board (stats/gains_boards.py), per platform, for the soldiers' kill or score rate
or one weapon's or vehicle's kill rate ("best FAMAS players this week")."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import NamedTuple

from bf4ps.db.connect import Conn
from bf4ps.db.queries import Read, all_rows, batch
from bf4ps.domain import Platform
from bf4ps.policy import Policy
from bf4ps.views.soldier import Model, item_name


class GainsBoardKind(StrEnum):
    KPM = "kpm"
    SPM = "spm"
    WEAPON = "weapon"
    VEHICLE = "vehicle"

    @property
    def board(self) -> str:
        """gains_boards.board."""
        return {"weapon": "weapon_kpm", "vehicle": "vehicle_kpm"}.get(self.value, self.value)

    @property
    def label(self) -> str:
        return {"kpm": "Kills/min", "spm": "Score/min", "weapon": "Weapon kills/min",
                "vehicle": "Vehicle kills/min"}[self.value]

    @property
    def per_item(self) -> bool:
        return self in (GainsBoardKind.WEAPON, GainsBoardKind.VEHICLE)


class GainsEntry(Model):
    position: int
    soldier_id: int
    persona_id: int
    platform: str
    name: str
    url: str
    value: float  # smoothed toward the population average: what the board ranks by
    raw: float | None  # the soldier's own rate over the week
    kills: int
    score: int | None
    seconds: int


class BoardItem(Model):
    item_id: int
    name: str
    soldiers: int


class GainsBoard(Model):
    kind: GainsBoardKind
    platform: Platform
    item_id: int | None
    item_name: str | None
    items: list[BoardItem]  # the weapons (vehicles) that have a board, most soldiers first
    entries: list[GainsEntry]
    page: int
    per_page: int
    window_seconds: float
    min_seconds: float
    prior_minutes: float
    refreshed_at: datetime | None

    @property
    def has_next(self) -> bool:
        return len(self.entries) == self.per_page


class _BoardItemRow(NamedTuple):
    item_id: int
    name: str | None
    slug: str | None
    rows: int


class _EntryRow(NamedTuple):
    soldier_id: int
    persona_id: int
    platform: str
    current_name: str
    value: float
    raw: float | None
    kills: int
    score: int | None
    seconds: int
    refreshed_at: datetime


async def board(conn: Conn, policy: Policy, kind: GainsBoardKind, platform: Platform,
                item_id: int | None = None, page: int = 1, per_page: int = 25) -> GainsBoard:
    """One page; for an item board without `item_id`, the item with the most soldiers."""
    items: list[BoardItem] = []
    if not kind.per_item:
        item_id = None  # the soldier boards have no item
    else:
        items = [BoardItem(item_id=r.item_id, name=item_name(r.name, r.slug), soldiers=r.rows)
                 for r in await all_rows(conn, _BoardItemRow, "gains_board_items",
                                         {"platform": platform.value, "kind": kind.value})]
        if item_id is None and items:
            item_id = items[0].item_id
    read = Read(_EntryRow, "gains_board_page", {
        "board": kind.board, "platform": platform.value, "item_id": item_id or 0,
        "limit": per_page, "offset": (page - 1) * per_page})
    await batch(conn, read)
    rows = read.rows
    first = (page - 1) * per_page
    entries = [GainsEntry(
        position=first + i + 1, soldier_id=r.soldier_id, persona_id=r.persona_id,
        platform=r.platform, name=r.current_name,
        url=f"/soldiers/{r.platform}/{r.persona_id}", value=round(r.value, 2),
        raw=None if r.raw is None else round(r.raw, 2), kills=r.kills,
        score=r.score, seconds=r.seconds) for i, r in enumerate(rows)]
    return GainsBoard(
        kind=kind, platform=platform, item_id=item_id if kind.per_item else None,
        item_name=next((i.name for i in items if i.item_id == item_id), None),
        items=items, entries=entries, page=page, per_page=per_page,
        window_seconds=policy.gains_window_seconds,
        min_seconds=policy.gains_board_item_min_seconds if kind.per_item
        else policy.gains_board_min_seconds,
        prior_minutes=policy.gains_prior_minutes,
        refreshed_at=rows[0].refreshed_at if rows else None)
