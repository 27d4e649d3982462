"""Checks after storage (what the peer RaidHub does after storing an activity): each new
interval is judged against the policy ceilings (gains.breaches); an impossible one is flagged
with its reasons, its soldier leaves every gains leaderboard at once and stays off them (and
off the career boards) until an operator clears the flag. Flags and clears are audited events.

Run by the scheduler a few seconds apart, in batches, one transaction per batch: the batch's
rows are locked SKIP LOCKED, so two schedulers (a standby taking over) never judge one twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from bf4ps.db.connect import Conn
from bf4ps.db.queries import Read, batch, execute, one
from bf4ps.domain import Resource
from bf4ps.events import log as events
from bf4ps.events.log import EventType
from bf4ps.policy import Policy
from bf4ps.stats import gains

BATCH = 2000
RESOURCE_OF_KIND = {"soldier": Resource.DETAILED, "weapon": Resource.WEAPONS,
                    "vehicle": Resource.VEHICLES}


def ceilings(policy: Policy) -> gains.Ceilings:
    return gains.Ceilings(
        kpm=policy.progress_ceiling_kpm, spm=policy.progress_ceiling_spm,
        accuracy_percent=policy.progress_ceiling_accuracy_percent,
        accuracy_min_shots=policy.progress_accuracy_min_shots,
        headshots_per_kill=policy.progress_ceiling_headshots_per_kill,
        headshots_min_kills=policy.progress_headshots_min_kills,
        min_seconds=int(policy.progress_check_min_seconds))


@dataclass(frozen=True, slots=True, kw_only=True)
class ItemInterval(gains.ItemGain):
    """An item_intervals row: which weapon or vehicle, and its gain."""

    kind: str
    item_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class _UncheckedSoldier(gains.SoldierGain):
    soldier_id: int
    platform: str


@dataclass(frozen=True, slots=True, kw_only=True)
class _UncheckedItem(ItemInterval):
    soldier_id: int
    platform: str


class _Flagged(NamedTuple):
    flag_id: int


@dataclass(frozen=True, slots=True)
class CheckReport:
    checked: int = 0
    flagged: int = 0


async def _flag(conn: Conn, row: _UncheckedSoldier | _UncheckedItem, kind: str,
                item_id: int | None, reasons: list[str], now: datetime) -> bool:
    reason = "; ".join(reasons)[:500]
    made = await one(conn, _Flagged, "progress_flag_insert", {
        "soldier_id": row.soldier_id, "kind": kind, "item_id": item_id,
        "started_at": row.started_at, "ended_at": row.ended_at, "reason": reason})
    if made is None:
        return False
    await events.record(
        conn, EventType.PROGRESS_FLAGGED, soldier_id=row.soldier_id,
        platform=row.platform, resource=RESOURCE_OF_KIND[kind].value, result="flagged",
        details={"flag_id": made.flag_id, "kind": kind, "item_id": item_id,
                 "reason": reason, "started_at": row.started_at.isoformat(),
                 "ended_at": row.ended_at.isoformat()})
    return True


async def check_pending(conn: Conn, policy: Policy, now: datetime,
                        limit: int = BATCH) -> CheckReport:
    """Judge up to `limit` unchecked soldier intervals and as many item intervals."""
    c = ceilings(policy)
    async with conn.transaction():
        read_soldiers = Read(_UncheckedSoldier, "soldier_intervals_unchecked", {"limit": limit})
        read_items = Read(_UncheckedItem, "item_intervals_unchecked", {"limit": limit})
        await batch(conn, read_soldiers, read_items)
        soldiers, items = read_soldiers.rows, read_items.rows
        flagged: set[int] = set()
        for s in soldiers:
            reasons = gains.breaches(s, c)
            if reasons and await _flag(conn, s, "soldier", None, reasons, now):
                flagged.add(s.soldier_id)
        for i in items:
            reasons = gains.breaches(i, c)
            if reasons and await _flag(conn, i, i.kind, i.item_id, reasons, now):
                flagged.add(i.soldier_id)
        if soldiers:
            await execute(conn, "soldier_intervals_mark_checked", {
                "soldier_id": [r.soldier_id for r in soldiers],
                "ended_at": [r.ended_at for r in soldiers]})
        if items:
            await execute(conn, "item_intervals_mark_checked", {
                "soldier_id": [r.soldier_id for r in items],
                "kind": [r.kind for r in items], "item_id": [r.item_id for r in items],
                "ended_at": [r.ended_at for r in items]})
        if flagged:
            await execute(conn, "gains_boards_drop_soldiers", {"soldier_ids": sorted(flagged)})
    return CheckReport(checked=len(soldiers) + len(items), flagged=len(flagged))
