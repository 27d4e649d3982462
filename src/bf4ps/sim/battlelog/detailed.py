"""`warsawdetailedstatspopulate`: data.generalStats, the 191 keys of its shape (2020).

Type quirks of the real answers: counters are JSON strings ("4836") when non-zero and 0 / 0.0
(0.0 where the shape has a float) when zero; kdRatio, killsPerMinute, accuracy (a percent)
are floats; per-category accuracies are 0-1 fractions; wlRatio is always 0.0 and gunmaster
always 0.
"""

from __future__ import annotations

from functools import cache

import orjson

from bf4ps.sim.battlelog.career import KITS
from bf4ps.sim.battlelog.generator import node_at, shape
from bf4ps.sim.battlelog.jsonvalue import JsonObject, arr, obj
from bf4ps.sim.battlelog.snapshot import MODE_ALIASES, MODES, Snapshot
from bf4ps.sim.battlelog.templates import detailed_template

STATS_TEMPLATE = "profile.warsawdetailedstatspopulate"
KIT_NAMES = dict(zip(KITS, ("assault", "engineer", "support", "recon", "commander"), strict=True))
SCORE_PER_KIT_STAR = {"1": 155_000, "2": 131_000, "32": 134_000, "8": 104_000, "2048": 20_000}
MODE_STARS = (  # serviceStarsGameModes: code, detailed key, score per star
    ("sc_conquest", "conquest", 21_000),
    ("sc_chainlink", "chainlink", 10_000),
    ("sc_rush", "rush", 15_000),
    ("sc_deathmatch", "teamdeathmatch", 6_000),
)
VEHICLE_SCORE_KEYS = ("1", "2", "4", "8", "16", "32")


@cache
def _zeros() -> dict[str, int | float]:
    """How Battlelog writes a zero for each key: 0.0 where the shape has floats and no ints."""
    keys = obj(node_at(shape("detailed"), "generalStats")["k"])
    kinds = {key: set(arr(obj(node)["t"])) for key, node in keys.items()}
    return {k: 0.0 if "float" in t and "int" not in t else 0 for k, t in kinds.items()}


def _general() -> JsonObject:
    return obj(detailed_template()["generalStats"])


def counter(value: float, zero: int | float = 0) -> str | int | float:
    number = round(value)
    return str(number) if number else zero


def _ratio(numerator: float, denominator: float) -> float:
    return round(numerator / denominator, 10) if denominator >= 1 else 0.0


def counters(snap: Snapshot) -> dict[str, float]:
    career, minutes, kills, rounds = snap.career, snap.minutes, snap.kills, snap.rounds
    kit_share = dict(zip(KITS, career.kit_shares, strict=True))
    vehicle_destroyed = snap.loadout.vehicles_destroyed * snap.growth + kills * 0.01
    score = snap.score
    values = {
        "kills": kills,
        "deaths": snap.deaths,
        "headshots": snap.headshots,
        "shotsFired": snap.fired,
        "shotsHit": snap.hit,
        "timePlayed": snap.time_played,
        "score": score,
        "totalScore": score,
        "rankScore": score,
        "rank": snap.rank,
        "skill": career.skill,
        "numRounds": rounds,
        "numWins": snap.wins,
        "numLosses": snap.losses,
        "killAssists": kills * 0.12,
        "nemesisKills": kills * 0.015,
        "revives": minutes * kit_share["1"] * 0.12,
        "heals": minutes * kit_share["1"] * 0.8,
        "repairs": minutes * kit_share["2"] * 0.25,
        "resupplies": minutes * kit_share["32"] * 0.6,
        "avengerKills": kills * 0.11,
        "saviorKills": kills * 0.12,
        "suppressionAssists": kills * 0.06,
        "flagCaptures": rounds * 2.2,
        "flagDefend": rounds * 2.4,
        "dogtagsTaken": kills * 0.013,
        "vehiclesDestroyed": vehicle_destroyed,
        "vehicleDamage": vehicle_destroyed * 1.3,
        "mcomDefendKills": rounds * 0.01,
        "sc_vehicle": score * (0.02 + 0.5 * career.vehicle_kill_share),
        "sc_award": score * 0.44,
        "sc_unlock": snap.rank * 1500,
        "sc_bonus": score * 0.02,
        "sc_team": score * 0.048,
        "sc_squad": score * 0.068,
        "sc_general": score * 0.22,
    }
    values["combatScore"] = sum(snap.kit_scores.values()) + values["sc_vehicle"]
    streak = 3 + 6 * career.kd + 2 * len(str(round(kills)))
    values["killStreakBonus"] = values["nemesisStreak"] = min(streak, kills)
    for kit, name in KIT_NAMES.items():
        values[name] = snap.kit_scores[kit]
        if kit != "2048":
            values[f"kills_{name}"] = kills * (1 - career.vehicle_kill_share) * kit_share[kit]
    for name, _, _ in MODES:
        values[name] = snap.mode_scores[name]
        for alias in MODE_ALIASES.get(name, ()):
            values[alias] = snap.mode_scores[name]
    return values


def _groups(snap: Snapshot, stats: JsonObject) -> None:
    zeros, growth = _zeros(), snap.growth
    for prefix in ("assaultRifle", "LMG", "PDW", "sniperRifle", "rocketLauncher"):
        kills, headshots, fired, hit = snap.loadout.groups.get(prefix, (0.0, 0.0, 0.0, 0.0))
        stats[f"{prefix}Accuracy"] = _ratio(hit, fired)
        if prefix != "rocketLauncher":
            stats[f"{prefix}Kills"] = counter(kills * growth, zeros[f"{prefix}Kills"])
            stats[f"{prefix}Headshots"] = counter(headshots * growth, zeros[f"{prefix}Headshots"])
    launcher_kills = snap.loadout.groups.get("rocketLauncher", (0.0,))[0] * growth
    stats["antiAirSoldier"] = float(round(launcher_kills * 0.05))
    stats["antiGroundSoldier"] = float(round(launcher_kills * 0.95))


def _nested(snap: Snapshot, stats: JsonObject) -> None:
    stats["kitScores"] = {k: counter(v) for k, v in snap.kit_scores.items()}
    stats["kitTimes"] = {k: counter(v) for k, v in snap.kit_times.items()}
    total_time = sum(snap.kit_times.values()) or 1.0
    stats["kitTimesInPercentage"] = {
        k: round(100 * v / total_time, 10) for k, v in snap.kit_times.items()
    }
    stars = {k: divmod(v, SCORE_PER_KIT_STAR[k]) for k, v in snap.kit_scores.items()}
    stats["serviceStars"] = {k: int(q) for k, (q, _) in stars.items()}
    stats["serviceStarsProgress"] = {
        k: round(100 * r / SCORE_PER_KIT_STAR[k], 10) for k, (_, r) in stars.items()
    }
    modes: JsonObject = {
        bit: counter(snap.mode_scores[name]) for name, bits, _ in MODES for bit in bits
    }
    modes["512"] = 0  # gunmaster: always 0 on the live service
    stats["gameModesScore"] = modes
    vehicle = snap.score * (0.02 + 0.5 * snap.career.vehicle_kill_share)
    shares = (0.0, 0.3, 0.25, 0.05, 0.1, 0.3) if vehicle else (0.0,) * 6
    stats["vehicleScores"] = {
        k: counter(vehicle * s) for k, s in zip(VEHICLE_SCORE_KEYS, shares, strict=True)
    }
    stats["serviceStarsGameModes"] = [_mode_stars(snap, *m) for m in MODE_STARS]


def _mode_stars(snap: Snapshot, code: str, key: str, per_star: int) -> JsonObject:
    actual = round(snap.mode_scores[key])
    stars, rest = divmod(actual, per_star)
    return {
        "serviceStars": stars,
        "serviceStarsProgress": round(100 * rest / per_star, 10),
        "actualValue": str(actual),
        "progressCodeNeeded": None,
        "codeNeeded": code,
        "tier": None,
        "valueNeeded": (stars + 1) * per_star,
        "name": None,
    }


def general_stats(snap: Snapshot) -> JsonObject:
    stats = dict(_general())
    zeros = _zeros()
    for key, value in counters(snap).items():
        stats[key] = counter(value, zeros.get(key, 0))
    stats.update(
        kdRatio=snap.kd,
        killsPerMinute=snap.kpm,
        scorePerMinute=snap.spm,
        accuracy=snap.accuracy_percent,
        longestHeadshot=snap.career.longest_headshot if snap.headshots >= 1 else 0.0,
        quitPercentage=snap.career.quit_percentage,
        wlRatio=0.0,
    )
    _groups(snap, stats)
    _nested(snap, stats)
    return stats


def detailed_body(snap: Snapshot, platform_int: int) -> bytes:
    data: JsonObject = {"personaId": snap.persona_id, "platformInt": platform_int}
    data.update(generalStats=general_stats(snap), statsTemplate=STATS_TEMPLATE, mySoldier=False)
    return orjson.dumps({"type": "success", "message": "OK", "data": data})


def missing_general_body(persona_id: int, platform_int: int, *, null: bool) -> bytes:
    """The transient bad payload seen live: HTTP 200, success, but no generalStats object."""
    data: JsonObject = {"personaId": persona_id, "platformInt": platform_int}
    if null:
        data["generalStats"] = None
    data.update(statsTemplate=STATS_TEMPLATE, mySoldier=False)
    return orjson.dumps({"type": "success", "message": "OK", "data": data})
