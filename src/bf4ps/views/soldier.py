"""A soldier as people read it, on the page and in the API: who it is, its headline stats (with
the derived ratios) and the freshness of each resource, with an honest note when the last
attempt failed and older data is shown. Its weapons, vehicles and history: soldier_page.py."""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one
from bf4ps.domain import Platform, Resource
from bf4ps.stats import rank_titles, read
from bf4ps.stats.item_names import category_display, display_name
from bf4ps.stats.read import SoldierOverview

CLASSES = ("assault", "engineer", "support", "recon", "commander")
ERROR_WORDS = {"throttle": "Battlelog asked us to slow down", "timeout": "Battlelog timed out",
               "server": "Battlelog answered with a server error",
               "not_found": "Battlelog does not know this soldier",
               "malformed": "Battlelog sent an incomplete answer",
               "internal": "BF4PS failed to store the answer",
               "unrecognized": "Battlelog sent an answer BF4PS does not recognize"}


class Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def ratio(a: float | None, b: float | None, digits: int = 2) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return round(a / b, digits + 2)


def percent(a: float | None, b: float | None) -> float | None:
    value = ratio(a, b, 4)
    return None if value is None else round(value * 100, 2)


@lru_cache(maxsize=4096)
def item_name(name: str | None, slug: str | None) -> str:
    """BF4's display name of an item ('scar-h' -> 'SCAR-H'), from stats/item_names.py."""
    return display_name(name, slug)


@lru_cache(maxsize=512)
def category_name(category: str | None) -> str:
    """'Vehicle Air Jet Stealth' -> 'Stealth Jets'."""
    return category_display(category)


class Soldier(Model):
    soldier_id: int
    persona_id: int
    platform: Platform
    name: str
    url: str
    battlelog_url: str


class ClassScore(Model):
    name: str
    score: int | None
    time_seconds: int | None


class Headline(Model):
    """Detailed stats first, the profile overview where they lack; the detailed-only figures
    are None until detailed stats are collected."""

    rank: int | None
    skill: int | None
    score: int | None
    kills: int | None
    deaths: int | None
    kd: float | None
    kpm: float | None
    spm: float | None
    accuracy_percent: float | None
    headshot_percent: float | None
    wins: int | None
    losses: int | None
    wl: float | None
    time_played_seconds: int | None
    clan_tag: str | None
    rank_name: str | None
    classes: list[ClassScore]
    revives: int | None = None
    heals: int | None = None
    repairs: int | None = None
    resupplies: int | None = None
    kill_assists: int | None = None
    headshots: int | None = None
    longest_headshot: float | None = None
    highest_kill_streak: int | None = None
    rounds: int | None = None
    vehicles_destroyed: int | None = None
    dogtags_taken: int | None = None


class Freshness(Model):
    resource: Resource
    status: str
    last_success_at: datetime | None
    last_attempt_at: datetime | None
    last_error_class: str | None
    failed_since_success: bool
    note: str | None


class Overview(Model):
    soldier: Soldier
    headline: Headline
    detailed_fetched_at: datetime | None
    profile_fetched_at: datetime | None
    freshness: list[Freshness]


class _Found(NamedTuple):
    soldier_id: int
    persona_id: int
    platform: str
    current_name: str

async def find(conn: Conn, platform: Platform, persona_id: int) -> Soldier | None:
    row = await one(conn, _Found, "web_soldier_by_persona",
                    {"persona_id": persona_id, "platform": platform.value})
    if row is None:
        return None
    pid, plat, name = row.persona_id, Platform(row.platform), row.current_name
    return Soldier(soldier_id=row.soldier_id, persona_id=pid, platform=plat, name=name,
                   url=f"/soldiers/{plat.value}/{pid}",
                   battlelog_url=f"https://battlelog.battlefield.com/bf4/soldier/{name}/stats/"
                                 f"{pid}/{plat.value}/")


def headline(ov: SoldierOverview) -> Headline:
    d = ov.detailed.stats if ov.detailed else None
    p = ov.profile.stats if ov.profile else None

    def pick(name: str) -> int | float | None:
        value = getattr(d, name, None) if d is not None else None
        return value if value is not None else getattr(p, name, None)

    kills, deaths, wins, losses = pick("kills"), pick("deaths"), pick("wins"), pick("losses")
    now = rank_titles.newest_rank(ov)  # one rank per page: the newest answer's
    detailed_only = {} if d is None else dict(
        revives=d.revives, heals=d.heals, repairs=d.repairs, resupplies=d.resupplies,
        kill_assists=d.kill_assists, headshots=d.headshots,
        longest_headshot=d.longest_headshot, highest_kill_streak=d.highest_kill_streak,
        rounds=d.num_rounds, vehicles_destroyed=d.vehicles_destroyed,
        dogtags_taken=d.dogtags_taken)
    return Headline(
        rank=now.level if now else None, skill=pick("skill"), score=pick("score"),
        kills=kills, deaths=deaths, kd=ratio(kills, deaths),
        kpm=pick("kills_per_minute"), spm=pick("score_per_minute"),
        accuracy_percent=pick("accuracy_percent"),
        headshot_percent=percent(getattr(d, "headshots", None), kills),
        wins=wins, losses=losses, wl=ratio(wins, losses),
        time_played_seconds=pick("time_played_seconds"),
        clan_tag=getattr(p, "clan_tag", None),
        rank_name=rank_titles.title(now.level) if now else None,
        classes=[ClassScore(name=c, score=getattr(d, f"{c}_score", None),
                            time_seconds=getattr(d, f"{c}_time_seconds", None))
                 for c in CLASSES], **detailed_only)


def freshness(ov: SoldierOverview) -> list[Freshness]:
    rows: list[Freshness] = []
    for resource in Resource:
        st = ov.states.get(resource)
        if st is None:
            rows.append(Freshness(resource=resource, status="never_attempted",
                                  last_success_at=None, last_attempt_at=None,
                                  last_error_class=None, failed_since_success=False, note=None))
            continue
        error = st.last_error_class.value if st.last_error_class else None
        failed = (st.last_attempt_at is not None and error is not None
                  and (st.last_success_at is None or st.last_attempt_at > st.last_success_at))
        note = None
        if failed:
            cause = ERROR_WORDS.get(error or "", "it failed")
            note = (f"the last attempt failed ({cause}); showing older data" if
                    st.last_success_at else f"the last attempt failed ({cause}); no data yet")
        rows.append(Freshness(resource=resource, status=st.status.value,
                              last_success_at=st.last_success_at,
                              last_attempt_at=st.last_attempt_at, last_error_class=error,
                              failed_since_success=failed, note=note))
    return rows


async def overview(conn: Conn, s: Soldier) -> Overview:
    return overview_of(s, await read.soldier_overview(conn, s.soldier_id))


def overview_of(s: Soldier, ov: SoldierOverview) -> Overview:
    return Overview(soldier=s, headline=headline(ov),
                    detailed_fetched_at=ov.detailed.fetched_at if ov.detailed else None,
                    profile_fetched_at=ov.profile.fetched_at if ov.profile else None,
                    freshness=freshness(ov))
