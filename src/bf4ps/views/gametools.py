"""gametools.network's BF4 player answers (`/bf4/stats/`, `/bf4/all/`, `/bf4/weapons/`,
`/bf4/vehicles/`) from a soldier's stored statistics, computed as that format defines them
(docs/api.md): ratios rounded to 2 places, percentages 0-100 and, with format_values, strings
such as "13.1%", `timePlayed` as Python's timedelta text, `headShots` the count and
`headshots` the percentage, weapon slugs lower-case and vehicle slugs upper-case. Its lists
(classes, game modes, progress, platoon): views/gametools_lists.py."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from bf4ps.battlelog.models import VehicleItem, WeaponItem
from bf4ps.stats import rank_titles
from bf4ps.stats.read import StoredItem
from bf4ps.views.compat import (
    Stored,
    best_class,
    div,
    duration,
    image,
    per_minute,
    rounded,
)

Percent = float | str | None  # a number, or with format_values its "13.1%" text


class Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def percent(value: float | None, format_values: bool) -> Percent:
    """gametools' format_percentage_value: round(x, 2), then f"{x}%" when formatting."""
    if value is None:
        return None
    x = round(value, 2)
    return f"{x}%" if format_values else x


class MainStats(Model):
    """`/bf4/stats/` (and the top of `/bf4/all/`)."""

    avatar: str
    userName: str
    id: int
    userId: int
    rank: int | None
    rankName: str
    rankImg: str
    skill: int | None
    scorePerMinute: float | None
    killsPerMinute: float | None
    killDeath: float | None
    winPercent: Percent
    accuracy: Percent
    headshots: Percent
    quits: Percent
    bestClass: str | None
    timePlayed: str | None
    secondsPlayed: int | None
    kills: int | None
    deaths: int | None
    wins: int | None
    loses: int | None
    headShots: int | None
    longestHeadShot: float | None
    highestKillStreak: int | None
    killAssists: int | None
    revives: int | None
    heals: int | None
    repairs: int | None
    resupplies: int | None
    avengerKills: int | None
    saviorKills: int | None
    dogtagsTaken: int | None
    roundsPlayed: int | None
    awardScore: int | None
    bonusScore: int | None
    squadScore: int | None
    currentRankProgress: int | None
    totalRankProgress: int | None


class Weapon(Model):
    weaponName: str
    type: str
    image: str
    altImage: str
    kills: int | None
    killsPerMinute: float | None
    accuracy: Percent
    headshots: Percent


class Vehicle(Model):
    vehicleName: str
    type: str
    image: str
    altImage: str
    kills: int | None
    killsPerMinute: float | None
    destroyed: int | None
    timeIn: int | None


class Weapons(Model):
    avatar: str
    id: int
    userName: str
    userId: int
    weapons: list[Weapon]


class Vehicles(Model):
    avatar: str
    id: int
    userName: str
    userId: int
    vehicles: list[Vehicle]


def main_stats(s: Stored, base: str, format_values: bool) -> MainStats:
    d, p = s.detailed, s.profile
    if d is None:
        raise ValueError("no detailed statistics stored")
    level = d.rank if d.rank is not None else (p.rank if p else None)
    seconds = d.time_played_seconds
    played = (d.wins or 0) + (d.losses or 0) if d.wins is not None else None
    quits = (d.num_rounds - (d.wins or 0) - (d.losses or 0)
             if d.num_rounds is not None else None)
    return MainStats(
        avatar=avatar(s, base), userName=s.soldier.name, id=s.soldier.persona_id,
        userId=user_id(s), rank=level, rankName=rank_titles.title(level),
        rankImg=image(base, "ranks", f"r{level or 0}"), skill=d.skill,
        scorePerMinute=rounded(per_minute(d.score, seconds)),
        killsPerMinute=rounded(per_minute(d.kills, seconds)),
        killDeath=rounded(div(d.kills, d.deaths)),
        winPercent=percent(div(d.wins, played, 100), format_values),
        accuracy=percent(div(d.shots_hit, d.shots_fired, 100), format_values),
        headshots=percent(div(d.headshots, d.kills, 100), format_values),
        quits=percent(div(quits, d.num_rounds, 100), format_values),
        bestClass=best_class(d), timePlayed=duration(seconds), secondsPlayed=seconds,
        kills=d.kills, deaths=d.deaths, wins=d.wins, loses=d.losses, headShots=d.headshots,
        longestHeadShot=d.longest_headshot, highestKillStreak=d.highest_kill_streak,
        killAssists=d.kill_assists, revives=d.revives, heals=d.heals, repairs=d.repairs,
        resupplies=d.resupplies, avengerKills=d.avenger_kills, saviorKills=d.savior_kills,
        dogtagsTaken=d.dogtags_taken, roundsPlayed=d.num_rounds, awardScore=d.award_score,
        bonusScore=None, squadScore=d.squad_score,
        currentRankProgress=p.rank_score if p else None,
        totalRankProgress=p.next_rank_score if p else None)


def avatar(s: Stored, base: str) -> str:
    return image(base, "avatars", s.soldier.name)


def user_id(s: Stored) -> int:
    p = s.profile
    return p.battlelog_user_id if p is not None and p.battlelog_user_id else 0


def weapon(w: StoredItem[WeaponItem], base: str, format_values: bool) -> Weapon:
    i = w.item
    slug = (i.slug or i.guid).lower()
    return Weapon(
        weaponName=slug, type=i.category or "", image=image(base, "weapons", slug),
        altImage=image(base, "weapons-lineart", slug), kills=i.kills,
        killsPerMinute=rounded(per_minute(i.kills, i.time_equipped_seconds)),
        accuracy=percent(div(i.shots_hit, i.shots_fired, 100), format_values),
        headshots=percent(div(i.headshots, i.kills, 100), format_values))


def vehicle(v: StoredItem[VehicleItem], base: str) -> Vehicle:
    i = v.item
    slug = (i.slug or i.guid).upper()
    return Vehicle(
        vehicleName=slug, type=vehicle_type(i.category), image=image(base, "vehicles", slug),
        altImage=image(base, "vehicles-lineart", slug), kills=i.kills,
        killsPerMinute=rounded(per_minute(i.kills, i.time_in_seconds)),
        destroyed=i.destroy_x_in_y, timeIn=i.time_in_seconds)


def vehicle_type(category: str | None) -> str:
    """Battlelog's category less its 'Vehicle ' / 'Weapon ' prefix (a trailing space kept)."""
    text = category or ""
    for prefix in ("Vehicle ", "Weapon "):
        if text.startswith(prefix):
            return text[len(prefix):]
    return text


def weapons(s: Stored, base: str, format_values: bool) -> Weapons:
    return Weapons(avatar=avatar(s, base), id=s.soldier.persona_id, userName=s.soldier.name,
                   userId=user_id(s),
                   weapons=[weapon(w, base, format_values) for w in s.weapons])


def vehicles(s: Stored, base: str) -> Vehicles:
    return Vehicles(avatar=avatar(s, base), id=s.soldier.persona_id, userName=s.soldier.name,
                    userId=user_id(s), vehicles=[vehicle(v, base) for v in s.vehicles])
