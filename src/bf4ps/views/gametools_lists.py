"""gametools.network's `/bf4/all/` (the main stats with weapons, vehicles, classes, game modes,
progress and platoon) and `/bf4/statsarray/` (per-day history, from BF4PS's own detailed
history, which goes back further than gametools' month)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bf4ps.db.connect import Conn
from bf4ps.stats import history as history_series
from bf4ps.stats.read import HistoryPoint
from bf4ps.views.compat import KITS, Stored, div, duration, image, per_minute, rounded
from bf4ps.views.gametools import MainStats, Model, Percent, Vehicle, Weapon, percent, vehicle
from bf4ps.views.gametools import weapon as weapon_row
from bf4ps.views.soldier import Soldier

# A kit's service star: the kit score one star takes (gametools' arithmetic, checked on real
# values for these two kits: docs/api.md); the other kits' are not known here (null).
KIT_STAR_SCORE = {"assault": 155_000, "commander": 20_000}
# gametools' game-mode names, BF4PS's stored score of each (aliases carry the same score)
MODE_NAMES = (("Conquest", "conquest"), ("Conquestlarge", "conquest"),
              ("Conquestladder", "conquest"), ("Rush", "rush"),
              ("Obliteration", "obliteration"), ("Domination", "domination"),
              ("Teamdeathmatch", "team_deathmatch"), ("Sqdm", "squad_deathmatch"),
              ("Carrierassault", "carrier_assault"), ("Carrierassaultlarge", "carrier_assault"),
              ("Chainlink", "chain_link"), ("Capturetheflag", "capture_the_flag"),
              ("Elimination", "defuse"), ("Airsuperiority", "air_superiority"))
PROGRESS_NAMES = {"campaign": "Campaign", "assignments": "Assignments", "medals": "Medals",
                  "ribbons": "Ribbons", "weapons": "Weapons", "vehicles": "Vehicles",
                  "kititems": "Kits", "dogtags": "Dog tags"}
STATSARRAY_MAX_DAYS = 3650


class ClassStats(Model):
    className: str
    image: str
    altImage: str
    score: int | None
    timePlayed: str | None
    secondsPlayed: int | None
    serviceStarAmount: int | None
    serviceStarProgress: Percent
    serviceStarProgressAmount: float | None


class GameMode(Model):
    gamemodeName: str
    score: int


class ProgressBar(Model):
    progressName: str
    current: int | None
    total: int | None


class Platoon(Model):
    tag: str
    emblem: str
    type: str
    url: str


class All(MainStats):
    weapons: list[Weapon]
    vehicles: list[Vehicle]
    classes: list[ClassStats]
    gamemodes: list[GameMode]
    progress: list[ProgressBar]
    platoon: Platoon


def class_stats(s: Stored, base: str, format_values: bool) -> list[ClassStats]:
    d = s.detailed
    out = []
    for kit, _ in KITS:
        score = getattr(d, f"{kit}_score") if d else None
        seconds = getattr(d, f"{kit}_time_seconds") if d else None
        star = KIT_STAR_SCORE.get(kit)
        stars = score // star if score is not None and star else None
        progress = div(score % star, star, 100) if score is not None and star else None
        name = kit.capitalize()
        out.append(ClassStats(
            className=name, image=image(base, "classes", name),
            altImage=image(base, "classes-lineart", name), score=score,
            timePlayed=duration(seconds), secondsPlayed=seconds, serviceStarAmount=stars,
            serviceStarProgress=percent(progress, format_values),
            serviceStarProgressAmount=rounded(progress)))
    return out


def all_stats(s: Stored, main: MainStats, base: str, format_values: bool) -> All:
    d, p = s.detailed, s.profile
    modes = [GameMode(gamemodeName=name, score=score) for name, key in MODE_NAMES
             if d is not None and (score := getattr(d, f"{key}_score")) is not None]
    bars = [ProgressBar(progressName=PROGRESS_NAMES.get(b.slug, b.slug.capitalize()),
                        current=b.current, total=b.maximum) for b in (p.progress if p else ())]
    tag = (p.clan_tag if p else None) or ""
    return All(
        **dict(main), weapons=[weapon_row(w, base, format_values) for w in s.weapons],
        vehicles=[vehicle(v, base) for v in s.vehicles],
        classes=class_stats(s, base, format_values), gamemodes=modes, progress=bars,
        platoon=Platoon(tag=tag, emblem=image(base, "emblems", tag or s.soldier.name),
                        type="Platoon" if tag else "User", url=s.soldier.battlelog_url))


class StatsArray(Model):
    """Per day, the last collection of the day (oldest first)."""

    startTime: datetime
    endTime: datetime
    timeStamps: list[datetime]
    accuracy: list[float | None]
    headshots: list[float | None]
    infantryKillDeath: list[float | None]
    infantryKillsPerMinute: list[float | None]
    killDeath: list[float | None]
    killsPerMinute: list[float | None]
    scorePerMinute: list[float | None]
    skill: list[int | None]
    winPercent: list[float | None]


def daily(points: list[HistoryPoint], since: datetime) -> list[HistoryPoint]:
    """The last point of each UTC day since `since`, oldest first."""
    days: dict[object, HistoryPoint] = {}
    for p in sorted(points, key=lambda x: x.fetched_at):
        if p.fetched_at >= since:
            days[p.fetched_at.astimezone(UTC).date()] = p
    return list(days.values())


async def stats_array(conn: Conn, s: Soldier, days: int,
                      now: datetime | None = None) -> StatsArray:
    end = now or datetime.now(UTC)
    start = end - timedelta(days=days)
    points = daily(await history_series.detailed_series(conn, s.soldier_id, 500), start)
    return StatsArray(
        startTime=start, endTime=end, timeStamps=[p.fetched_at for p in points],
        accuracy=[rounded(div(p.shots_hit, p.shots_fired, 100)) for p in points],
        headshots=[rounded(div(p.headshots, p.kills, 100)) for p in points],
        infantryKillDeath=[None for _ in points], infantryKillsPerMinute=[None for _ in points],
        killDeath=[rounded(div(p.kills, p.deaths)) for p in points],
        killsPerMinute=[rounded(per_minute(p.kills, p.time_played_seconds)) for p in points],
        scorePerMinute=[rounded(per_minute(p.score, p.time_played_seconds)) for p in points],
        skill=[p.skill for p in points],
        winPercent=[rounded(div(p.wins, (p.wins or 0) + (p.losses or 0), 100))
                    if p.wins is not None else None for p in points])
