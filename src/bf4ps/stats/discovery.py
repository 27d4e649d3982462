"""Finding soldiers: the home page's lists (recently collected, playing now), the leaderboards
and the paged search, each one index-ordered query (web.sql; the indexes in db/schema.sql) read into
typed previews: who the soldier is and the headline stats a list shows (rank, K/D, SPM)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from bf4ps.db.connect import Conn
from bf4ps.db.queries import Read, all_rows, batch, mapped
from bf4ps.domain import Platform

BOARD_MIN_SECONDS = 36_000  # the leaderboards' minimum playtime (10 h; the indexes' predicate)
SEARCH_CAP = 1000  # candidates read per name index: a count beyond it reads "1,000 or more"


class Board(StrEnum):
    SPM = "spm"
    KD = "kd"
    SKILL = "skill"
    KILLS = "kills"

    @property
    def label(self) -> str:
        return {"spm": "Score/min", "kd": "K/D", "skill": "Skill", "kills": "Kills"}[self.value]

    @property
    def query(self) -> str:
        """Its named query (web.sql), read in its partial index's order (db/schema.sql)."""
        return {"spm": "web_board_spm", "kd": "web_board_kd", "skill": "web_board_skill",
                "kills": "web_board_kills"}[self.value]


@dataclass(frozen=True, slots=True)
class SoldierPreview:
    soldier_id: int
    persona_id: int
    platform: str
    name: str
    last_seen_at: datetime | None
    collected_at: datetime | None
    rank: int | None
    skill: int | None
    kills: int | None
    deaths: int | None
    spm: float | None
    time_played_seconds: int | None
    exact: bool = False

    @property
    def url(self) -> str:
        return f"/soldiers/{self.platform}/{self.persona_id}"

    @property
    def kd(self) -> float | None:
        if self.kills is None or not self.deaths:
            return None
        return round(self.kills / self.deaths, 2)


@dataclass(frozen=True, slots=True)
class Page:
    soldiers: tuple[SoldierPreview, ...]
    page: int
    per_page: int
    total: int | None  # None: not counted (leaderboards are read page by page)
    capped: bool = False  # the total counted only the first SEARCH_CAP candidates

    @property
    def pages(self) -> int | None:
        return None if self.total is None else max(1, -(-self.total // self.per_page))

    @property
    def has_next(self) -> bool:
        if self.total is None:
            return len(self.soldiers) == self.per_page
        return self.page < (self.pages or 1)


def preview(row: Mapping[str, Any]) -> SoldierPreview:
    spm = row.get("score_per_minute")
    return SoldierPreview(
        soldier_id=int(row["soldier_id"]), persona_id=int(row["persona_id"]),
        platform=str(row["platform"]), name=str(row["current_name"]),
        last_seen_at=row.get("last_seen_at"), collected_at=row.get("collected_at"),
        rank=row.get("rank"), skill=row.get("skill"), kills=row.get("kills"),
        deaths=row.get("deaths"), spm=float(spm) if spm is not None else None,
        time_played_seconds=row.get("time_played_seconds"), exact=bool(row.get("exact")))


PREVIEW = mapped(preview)  # a list's rows as previews


async def leaderboard(conn: Conn, board: Board, platform: Platform, page: int = 1,
                      per_page: int = 25) -> Page:
    rows = await all_rows(conn, PREVIEW, board.query, {
        "platform": platform.value, "limit": per_page, "offset": (page - 1) * per_page})
    return Page(tuple(rows), page, per_page, None)


def _counted(row: Mapping[str, Any]) -> tuple[int, SoldierPreview]:
    """A search row: the count of every match, and the soldier."""
    return int(row["total"]), preview(row)


async def search_page(conn: Conn, prefix: str, exact: str, platform: Platform | None,
                      page: int = 1, per_page: int = 20) -> Page:
    """`prefix`: an escaped LIKE prefix of the lower-cased name; `exact`: the lower-cased name."""
    rows = await all_rows(conn, mapped(_counted), "web_search_page", {
        "prefix": prefix, "exact": exact, "platform": platform.value if platform else None,
        "limit": per_page, "offset": (page - 1) * per_page}, prepare=False)  # a LIKE prefix
    total = rows[0][0] if rows else 0
    return Page(tuple(p for _, p in rows), page, per_page, total, capped=total >= SEARCH_CAP)


@dataclass(frozen=True, slots=True)
class Home:
    recent: list[SoldierPreview]
    playing: list[SoldierPreview]
    boards: dict[Board, Page]


async def home(conn: Conn, platform: Platform, since: datetime, limit: int = 10) -> Home:
    """The home page's lists and one platform's four boards: six reads in one pipeline."""
    board_params = {"platform": platform.value, "limit": limit, "offset": 0}
    recent = Read(PREVIEW, "web_recently_collected", {"limit": limit})
    playing = Read(PREVIEW, "web_playing_now", {"since": since, "limit": limit})
    boards = {b: Read(PREVIEW, b.query, board_params) for b in Board}
    await batch(conn, recent, playing, *boards.values())
    return Home(recent=recent.rows, playing=playing.rows,
                boards={b: Page(tuple(r.rows), 1, limit, None) for b, r in boards.items()})
