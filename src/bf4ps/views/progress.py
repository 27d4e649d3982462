"""A soldier's progress as the page and the API show it: since the last collection, the gains
over 24 h / 7 d / 30 d, the recent intervals (flagged ones with their reason, resets as resets),
and each weapon's and vehicle's gains over 7 days. The arithmetic is stats/gains.py; the rows
come from the intervals written with each snapshot (the *_intervals tables, db/schema.sql)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

from bf4ps.db.queries import Read
from bf4ps.stats import gains
from bf4ps.stats.progress_check import ItemInterval
from bf4ps.views.soldier import Model

WINDOWS = (("24 h", timedelta(days=1)), ("7 d", timedelta(days=7)),
           ("30 d", timedelta(days=30)))
ITEM_WINDOW = timedelta(days=7)
RECENT_INTERVALS = 10
INTERVAL_ROWS = 500  # a soldier collected every few minutes for 30 days still fits
ITEM_ROWS = 3000


def _r(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


class Interval(Model):
    """One interval between two good snapshots."""

    started_at: datetime
    ended_at: datetime
    kills: int
    deaths: int
    score: int
    seconds: int
    kd: float | None
    kpm: float | None
    spm: float | None
    accuracy_percent: float | None
    rank_from: int | None
    rank_to: int | None
    rank_ups: int
    reset: bool  # Battlelog reset the stats: no gains, shown as a reset
    flag: str | None  # the open flag's reason: kept off every leaderboard


class Window(Model):
    label: str
    intervals: int
    resets: int
    kills: int
    deaths: int
    score: int
    seconds: int
    kd: float | None
    kpm: float | None
    spm: float | None
    rank_ups: int
    flagged: int


class ItemProgress(Model):
    """One weapon's or vehicle's gains over ITEM_WINDOW."""

    item_id: int
    kills: int
    seconds: int
    kpm: float | None
    accuracy_percent: float | None
    headshots: int | None
    stars: int
    resets: int


class Flag(Model):
    flag_id: int
    kind: str
    item_id: int | None
    started_at: datetime
    ended_at: datetime
    reason: str
    flagged_at: datetime


class Progress(Model):
    since_last: Interval | None  # the interval the newest detailed collection ended
    last_collected_at: datetime | None
    windows: list[Window]
    intervals: list[Interval]  # newest first
    flags: list[Flag]
    weapons: dict[int, ItemProgress]
    vehicles: dict[int, ItemProgress]
    stars: int  # service stars earned with weapons and vehicles over ITEM_WINDOW


@dataclass(frozen=True, slots=True, kw_only=True)
class IntervalRow(gains.SoldierGain):
    """A soldier_intervals_of row: the interval's gain and its open flag's reason."""

    flag_reason: str | None


def interval(g: IntervalRow) -> Interval:
    return Interval(
        started_at=g.started_at, ended_at=g.ended_at, kills=g.kills, deaths=g.deaths, score=g.score,
        seconds=g.seconds, kd=_r(g.kd, 2), kpm=_r(g.kpm, 2), spm=_r(g.spm, 0),
        accuracy_percent=_r(g.accuracy_percent, 1), rank_from=g.rank_from,
        rank_to=g.rank_to, rank_ups=g.rank_ups, reset=g.reset, flag=g.flag_reason)


def window(label: str, rows: list[IntervalRow]) -> Window:
    t = gains.totals(rows)
    return Window(label=label, intervals=t.intervals, resets=t.resets, kills=t.kills,
                  deaths=t.deaths, score=t.score, seconds=t.seconds, kd=_r(t.kd, 2),
                  kpm=_r(t.kpm, 2), spm=_r(t.spm, 0), rank_ups=t.rank_ups,
                  flagged=sum(1 for r in rows if r.flag_reason))


def item_progress(rows: Iterable[ItemInterval], kind: str) -> dict[int, ItemProgress]:
    grouped: dict[int, list[gains.ItemGain]] = {}
    for r in rows:
        if r.kind == kind:
            grouped.setdefault(r.item_id, []).append(r)
    out = {}
    for item_id, gs in grouped.items():
        t = gains.totals(gs)
        out[item_id] = ItemProgress(
            item_id=item_id, kills=t.kills, seconds=t.seconds, kpm=_r(t.kpm, 2),
            accuracy_percent=_r(t.accuracy_percent, 1), headshots=t.headshots,
            stars=t.stars, resets=t.resets)
    return out


class ProgressReads(NamedTuple):
    """The progress reads (for db.queries.batch; progress_from builds the model)."""

    intervals: Read[IntervalRow]
    items: Read[ItemInterval]
    flags: Read[Flag]


def reads(soldier_id: int, now: datetime) -> ProgressReads:
    sid = {"soldier_id": soldier_id}
    return ProgressReads(
        Read(IntervalRow, "soldier_intervals_of",
             {**sid, "since": now - WINDOWS[-1][1], "limit": INTERVAL_ROWS}),
        Read(ItemInterval, "item_intervals_of",
             {**sid, "since": now - ITEM_WINDOW, "limit": ITEM_ROWS}),
        Read(Flag, "progress_flags_open_of", sid))


def progress_from(reads: ProgressReads, now: datetime,
                  last_collected_at: datetime | None) -> Progress:
    intervals = reads.intervals.rows
    newest = intervals[0] if intervals else None
    since_last = (interval(newest) if newest is not None and last_collected_at is not None
                  and newest.ended_at >= last_collected_at else None)
    return Progress(
        since_last=since_last, last_collected_at=last_collected_at,
        windows=[window(label, [r for r in intervals if r.ended_at > now - span])
                 for label, span in WINDOWS],
        intervals=[interval(r) for r in intervals[:RECENT_INTERVALS]],
        flags=reads.flags.rows,
        weapons=(weapons := item_progress(reads.items.rows, "weapon")),
        vehicles=(vehicles := item_progress(reads.items.rows, "vehicle")),
        stars=sum(i.stars for i in (*weapons.values(), *vehicles.values())))
