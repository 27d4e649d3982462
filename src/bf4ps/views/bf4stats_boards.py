"""bf4stats.com's `playerRankings` (a soldier's place on BF4PS's career leaderboards, over the
soldiers BF4PS knows on his platform: docs/api.md) and `onlinePlayers` (soldiers on a server
now and the day's peak, from BF4SW's sightings as play sessions)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, NamedTuple

from bf4ps.db.connect import Conn
from bf4ps.db.queries import Read, all_rows, batch, one_row
from bf4ps.domain import Platform
from bf4ps.views.soldier import Soldier

Doc = dict[str, Any]
# BF4PS's boards (db/queries.py BOARDS) as bf4stats' player rankings name them: its ident,
# label, short label and format; the board's place and size queries (community.sql)
RANKINGS = (("kills", "Kills", "Kills", "nf", "community_rank_kills",
             "community_board_size_kills"),
            ("skill", "Skill", "Skill", "nf", "community_rank_skill",
             "community_board_size_skill"),
            ("kdr", "Kill / Death ratio", "KDr", "kdcol:3", "community_rank_kd",
             "community_board_size_kd"),
            ("spm", "Score per minute", "Spm", "nf:3", "community_rank_spm",
             "community_board_size_spm"))
LABELS = {"pc": "PC", "ps4": "PS4", "xone": "Xbox One", "ps3": "PS3", "xbox": "Xbox 360"}


RANK_CAP = 10_000  # a place is counted among the first this many of a board


class _Place(NamedTuple):
    value: float | None
    above: int


class _Size(NamedTuple):
    n: int


async def board_sizes(conn: Conn, platform: Platform) -> dict[str, int]:
    """How many soldiers each board of `platform` has (a count of its whole index: callers
    keep it a while, web/compat/bf4stats.py)."""
    return {ident: (await one_row(conn, _Size, size_query, {"platform": platform.value})).n
            for ident, *_, size_query in RANKINGS}


async def rankings(conn: Conn, s: Soldier, sizes: dict[str, int]) -> Doc:
    """The soldier's place on each board (one pipeline): `rank` null off the board or below
    RANK_CAP."""
    params = {"soldier_id": s.soldier_id, "platform": s.platform.value, "cap": RANK_CAP}
    places = [Read(_Place, place_query, params) for *_, place_query, _ in RANKINGS]
    await batch(conn, *places)
    out = []
    for (ident, label, short, fmt, *_), read in zip(RANKINGS, places, strict=True):
        place = read.first
        counted = place is not None and place.value is not None and place.above < RANK_CAP
        out.append({"group": "player", "ident": ident, "pid": s.persona_id,
                    "rank": place.above + 1 if counted and place else None,
                    "count": sizes.get(ident, 0), "value": place.value if place else None,
                    "url": None, "label": label, "short": short, "format": fmt})
    return {"rankings": out}


class _Online(NamedTuple):
    platform: str
    n: int


class _Peak(NamedTuple):
    platform: str
    peak: int


async def online_players(conn: Conn, codes: dict[Platform, str],
                         now: datetime | None = None) -> Doc:
    when = now or datetime.now(UTC)
    current = {r.platform: r.n for r in await all_rows(conn, _Online, "community_online_now")}
    peaks = {r.platform: r.peak for r in await all_rows(conn, _Peak, "community_online_peak",
                                                        {"now": when})}
    out: Doc = {}
    for platform, code in codes.items():
        count = current.get(platform.value, 0)
        out[code] = {"label": LABELS[code], "count": count,
                     "peak24": max(count, peaks.get(platform.value, 0))}
    return out
