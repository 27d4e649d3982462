"""`warsawoverviewpopulate` (resource "profile"): the soldier overview on the Dec 2013 template.

overviewStats carries plain ints (not strings) and many nulls, as in the capture; the clan tag
is viewedPersonaInfo.tag; top weapons/vehicles are whole items of the weapons/vehicles shapes.
"""

from __future__ import annotations

import random

import orjson

from bf4ps.sim.battlelog.career import RANK_SCORES
from bf4ps.sim.battlelog.detailed import SCORE_PER_KIT_STAR, counter, counters
from bf4ps.sim.battlelog.items import item_dicts, vehicle_values, weapon_values
from bf4ps.sim.battlelog.jsonvalue import (
    JsonObject,
    JsonValue,
    array,
    integer,
    number,
    obj,
    objs,
    text,
)
from bf4ps.sim.battlelog.snapshot import Snapshot
from bf4ps.sim.battlelog.templates import (
    overview_template,
    rank_infos,
    vehicles_template,
    weapons_template,
)

STATS_TEMPLATE = "profile.warsawoverviewpopulate"
INT_STATS = (
    "rank",
    "skill",
    "kills",
    "deaths",
    "timePlayed",
    "score",
    "totalScore",
    "rankScore",
    "combatScore",
    "numRounds",
    "numWins",
    "numLosses",
    "sc_award",
    "sc_squad",
    "sc_unlock",
    "sc_vehicle",
)
MODE_STARS = (
    ("sc_conquest", "conquest", 21_000),
    ("sc_capturetheflag", "capturetheflag", 7_500),
    ("sc_airsuperiority", "airsuperiority", 12_000),
)
PICTURES = ("us-assault", "us-engineer", "us-support", "us-recon", "ru-recon-berezka")


def _overview_stats(snap: Snapshot) -> JsonObject:
    stats = dict(obj(overview_template()["overviewStats"]))
    values = counters(snap)
    stats.update({key: round(values[key]) for key in INT_STATS})
    stats.update(
        kdRatio=snap.kd,
        scorePerMinute=snap.spm,
        accuracy=snap.accuracy_percent,
        kitScores={k: counter(v) for k, v in snap.kit_scores.items()},
    )
    stars = {k: divmod(v, SCORE_PER_KIT_STAR[k]) for k, v in snap.kit_scores.items()}
    stats["serviceStars"] = {k: int(q) for k, (q, _) in stars.items()}
    stats["serviceStarsProgress"] = {
        k: round(100 * r / SCORE_PER_KIT_STAR[k], 10) for k, (_, r) in stars.items()
    }
    stats["serviceStarsGameModes"] = [
        {
            "serviceStars": round(snap.mode_scores[key]) // per_star,
            "serviceStarsProgress": round(100 * (snap.mode_scores[key] % per_star) / per_star, 10),
            "valueNeeded": (round(snap.mode_scores[key]) // per_star + 1) * per_star,
            "actualValue": round(snap.mode_scores[key]),
            "codeNeeded": code,
        }
        for code, key, per_star in MODE_STARS
    ]
    return stats


def _progress(snap: Snapshot) -> list[JsonValue]:
    rng = random.Random(snap.career.seed ^ 0x9806)
    base = min(1.0, snap.time_played / 3_000_000)
    progress: list[JsonValue] = []
    for entry in objs(overview_template()["gameProgress"]):
        maximum = integer(entry["max"])
        current = min(maximum, round(maximum * base * rng.uniform(0.6, 1.2)))
        progress.append({**entry, "current": current, "percent": 100 * current // maximum})
    return progress


def _leaderboards(snap: Snapshot) -> list[JsonValue]:
    values = counters(snap)
    scores = {"sc_recon": snap.kit_scores["8"], "score": snap.score, "sc_squad": values["sc_squad"]}
    return [
        {**entry, "score": float(round(scores.get(_stat_key(entry), number(entry["score"]))))}
        for entry in objs(overview_template()["geolbTopPerformance"])
    ]


def _stat_key(entry: JsonObject) -> str:
    return text(obj(entry["leaderboardItem"])["statKey"])


def overview_body(snap: Snapshot, platform_int: int, user_id: int, active: bool) -> bytes:
    data = dict(overview_template())
    ranks = rank_infos()
    loadout = snap.loadout
    data.update(
        viewedPersonaInfo={
            "picture": PICTURES[snap.career.seed % len(PICTURES)],
            "personaId": str(snap.persona_id),
            "userId": str(user_id),
            "platform": platform_int,
            "game": 2048,
            "tag": snap.career.clan_tag or "",
            "loadoutId": None,
        },
        personaId=snap.persona_id,
        platform=platform_int,
        platformInt=platform_int,
        currentUserId=str(user_id),
        isActiveUser=active,
        overviewStats=_overview_stats(snap),
        currentRankNeeded=ranks[snap.rank],
        nextRankNeeded=ranks[min(snap.rank + 1, len(ranks) - 1)],
        rankScoreNeeded=array(RANK_SCORES[: snap.rank + 2]),
        topWeapons=item_dicts(weapons_template(), loadout.weapons[:3], weapon_values, snap.growth),
        topVehicles=item_dicts(
            vehicles_template(), loadout.top_vehicles, vehicle_values, snap.growth
        ),
        gameProgress=_progress(snap),
        geolbTopPerformance=_leaderboards(snap),
        statsTemplate=STATS_TEMPLATE,
    )
    return orjson.dumps({"type": "success", "message": "OK", "data": data})
