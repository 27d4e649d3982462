"""The search box: known soldiers for a name (prefix of a current or former name) or for a
Battlelog soldier URL, a page at a time, each with how fresh its stats are."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one
from bf4ps.domain import Platform
from bf4ps.interactive.inputs import like_prefix, looks_like_url, parse_name, parse_soldier_url
from bf4ps.stats import discovery
from bf4ps.stats.discovery import SoldierPreview
from bf4ps.views import soldier as soldier_view


class Found(BaseModel):
    """One soldier the search found."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    soldier_id: int
    persona_id: int
    platform: Platform
    name: str
    url: str
    exact: bool  # the name (or URL) names this soldier exactly
    collected_at: datetime | None  # its detailed stats' last collection
    last_seen_at: datetime | None = None  # last seen playing by BF4SW
    rank: int | None = None
    skill: int | None = None
    kills: int | None = None
    deaths: int | None = None
    kd: float | None = None
    spm: float | None = None
    time_played_seconds: int | None = None

    @classmethod
    def of(cls, p: SoldierPreview) -> Found:
        return cls(soldier_id=p.soldier_id, persona_id=p.persona_id,
                   platform=Platform(p.platform), name=p.name, url=p.url, exact=p.exact,
                   collected_at=p.collected_at, last_seen_at=p.last_seen_at, rank=p.rank,
                   skill=p.skill, kills=p.kills, deaths=p.deaths, kd=p.kd, spm=p.spm,
                   time_played_seconds=p.time_played_seconds)


class SearchResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["name", "url"]
    name: str | None  # the name searched for (a URL's name segment, when plausible)
    platform: Platform | None
    persona_id: int | None  # a URL's persona id
    exact: bool  # some soldier matches exactly
    soldiers: list[Found]
    total: int  # matches in all (counted up to discovery.SEARCH_CAP)
    capped: bool  # the total stopped counting at the cap
    page: int
    pages: int
    per_page: int


class _Collected(NamedTuple):
    collected_at: datetime | None

async def search(conn: Conn, text: str, platform: Platform | None, page: int = 1,
                 per_page: int = 20) -> SearchResult:
    """Raises InputError (field q) for text that is neither a name nor a soldier URL."""
    if looks_like_url(text):
        ref = parse_soldier_url(text, "q")
        found = await soldier_view.find(conn, ref.platform, ref.persona_id)
        listed = []
        if found is not None:
            row = await one(conn, _Collected, "web_collected_at",
                            {"soldier_id": found.soldier_id})
            listed = [Found(soldier_id=found.soldier_id, persona_id=found.persona_id,
                            platform=found.platform, name=found.name, url=found.url,
                            exact=True, collected_at=row.collected_at if row else None)]
        return SearchResult(kind="url", name=ref.name, platform=ref.platform,
                            persona_id=ref.persona_id, exact=found is not None,
                            soldiers=listed, total=len(listed), capped=False, page=1, pages=1,
                            per_page=per_page)
    name = parse_name(text, "q")
    listing = await discovery.search_page(conn, like_prefix(name), name.lower(), platform,
                                          page, per_page)
    soldiers = [Found.of(s) for s in listing.soldiers]
    return SearchResult(kind="name", name=name, platform=platform, persona_id=None,
                        exact=any(s.exact for s in soldiers), soldiers=soldiers,
                        total=listing.total or 0, capped=listing.capped, page=listing.page,
                        pages=listing.pages or 1, per_page=per_page)
