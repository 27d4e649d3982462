"""bf4stats.com's `playerRankings` (a soldier's place on BF4PS's career leaderboards, over the
soldiers BF4PS knows on his platform: docs/api.md) and `onlinePlayers` (soldiers on a server
now and the day's peak, from BF4SW's sightings as play sessions)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, NamedTuple

from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, one_row
from bf4ps.domain import Platform
from bf4ps.views.soldier import Soldier

Doc = dict[str, Any]
# BF4PS's boards (db/queries.py BOARDS) as bf4stats' player rankings name them
RANKINGS = (("kills", "kills", "Kills", "Kills", "nf"),
            ("skill", "skill", "Skill", "Skill", "nf"),
            ("kdr", "kd", "Kill / Death ratio", "KDr", "kdcol:3"),
            ("spm", "spm", "Score per minute", "Spm", "nf:3"))
LABELS = {"pc": "PC", "ps4": "PS4", "xone": "Xbox One", "ps3": "PS3", "xbox": "Xbox 360"}


class _Place(NamedTuple):
    value: float | None
    total: int
    better: int


async def rankings(conn: Conn, s: Soldier) -> Doc:
    out = []
    for ident, board, label, short, fmt in RANKINGS:
        place = await one_row(conn, _Place, f"community_rank_{board}",
                              {"soldier_id": s.soldier_id, "platform": s.platform.value})
        on_board = place.value is not None
        out.append({"group": "player", "ident": ident,
                    "pid": s.persona_id, "rank": place.better + 1 if on_board else None,
                    "count": place.total, "value": place.value, "url": None,
                    "label": label, "short": short, "format": fmt})
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
