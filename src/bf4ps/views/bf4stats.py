"""bf4stats.com's `playerInfo` document from a soldier's stored statistics: the `player` and
`stats` sections (derived `extra` figures at full precision, as that format has them), the
item sections (views/bf4stats_items.py), and empty lists for what BF4PS does not collect
(awards, assignments, kit items, upcoming unlocks: docs/api.md). `opt` selects sections; the
`player` section is always there. Timestamps are epoch milliseconds, durations seconds."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bf4ps.battlelog.models import DetailedStats, ProfileStats
from bf4ps.domain import Platform
from bf4ps.stats import rank_titles
from bf4ps.views import bf4stats_items as items
from bf4ps.views.career import MODES
from bf4ps.views.compat import KITS, Stored, div, per_minute

Doc = dict[str, Any]
PLAT_CODES = {"pc": Platform.PC, "xbox": Platform.XBOX360, "ps3": Platform.PS3,
              "xone": Platform.XBOXONE, "ps4": Platform.PS4}
CODE_OF = {platform: code for code, platform in PLAT_CODES.items()}
SECTIONS = ("stats", "dogtags", "weapons", "weaponCategory", "kititems", "vehicles",
            "vehicleCategory", "awards", "assignments", "upcomingUnlocks")
# opt words that name parts inside the sections: accepted, and their sections given whole
OPT_PARTS = {"extra": "stats", "details": "weapons", "weaponUnlocks": "weapons",
             "vehicleUnlocks": "vehicles", "imagePaths": None, "names": None,
             "progress": None, "urls": None}
MODE_IDS = {"conquest": 1, "rush": 2, "squad_deathmatch": 8, "team_deathmatch": 32,
            "domination": 1024, "capture_the_flag": 524288, "obliteration": 2097152,
            "air_superiority": 8388608, "defuse": 16777216, "carrier_assault": 134217728,
            "chain_link": 34359738368}
DOGTAG_KEYS = ("id", "image", "name", "desc", "license", "category", "img")
AWARD_BARS = ("ribbons", "medals", "assignments")


def selected(opt: str | None) -> tuple[str, ...]:
    """The sections `opt` (a comma list) asks for; every one without it. Unknown words are
    ignored, as that service did."""
    if opt is None or not opt.strip():
        return SECTIONS
    words = {w.strip() for w in opt.split(",")}
    chosen = {w for w in words if w in SECTIONS}
    chosen |= {s for w in words if (s := OPT_PARTS.get(w))}
    return tuple(s for s in SECTIONS if s in chosen)


def ms(when: datetime | None) -> int | None:
    return None if when is None else int(when.timestamp() * 1000)


def rank(d: DetailedStats | None, p: ProfileStats | None) -> Doc:
    level = (p.rank if p else None) or (d.rank if d else None)
    name = rank_titles.title(level)
    nr = level or 0
    doc: Doc = {"nr": level, "imgLarge": f"bf4/ranks/r{nr}.png", "img": f"r{nr}",
                "name": name, "needed": None, "next": None}
    if p is not None and p.next_rank_score is not None:
        doc["next"] = {"nr": nr + 1, "imgLarge": f"bf4/ranks/r{nr + 1}.png",
                       "img": f"r{nr + 1}", "name": rank_titles.title(nr + 1),
                       "needed": p.next_rank_score, "curr": p.rank_score, "relNeeded": None,
                       "relCurr": None, "relProg": div(p.rank_score, p.next_rank_score, 100)}
    return doc


def player(s: Stored) -> Doc:
    d, p, sol = s.detailed, s.profile, s.soldier
    collected = ms(s.collected_at)
    return {
        "id": sol.persona_id, "game": "bf4", "plat": CODE_OF[sol.platform], "name": sol.name,
        "tag": (p.clan_tag if p else None) or "", "dateCheck": collected,
        "dateUpdate": collected, "dateCreate": None, "dateStreak": None, "lastDay": None,
        "country": None, "countryName": None, "rank": rank(d, p),
        "score": d.score if d else None, "timePlayed": d.time_played_seconds if d else None,
        "uId": str(p.battlelog_user_id) if p and p.battlelog_user_id else None,
        "uName": None, "uGava": None, "udCreate": None, "privacy": "all",
        "blPlayer": sol.battlelog_url, "blUser": None, "editable": False, "viewable": True,
        "adminable": False, "linked": False}


def kits(d: DetailedStats) -> Doc:
    out = {}
    for kit, kit_id in KITS:
        score, time = getattr(d, f"{kit}_score"), getattr(d, f"{kit}_time_seconds")
        out[kit] = {"id": kit_id, "score": score, "time": time, "stars": None,
                    "spm": per_minute(score, time), "name": kit.capitalize()}
    return out


def scores(d: DetailedStats) -> Doc:
    return {"score": d.score, "award": d.award_score, "bonus": None, "unlock": d.unlock_score,
            "vehicle": d.vehicle_score, "team": None, "objective": None,
            "squad": d.squad_score, "general": None, "totalScore": d.total_score,
            "rankScore": d.rank_score, "combatScore": d.combat_score}


def extra(s: Stored, d: DetailedStats) -> Doc:
    t = d.time_played_seconds
    wea_kills = sum(w.item.kills or 0 for w in s.weapons)
    wea_time = sum(w.item.time_equipped_seconds or 0 for w in s.weapons)
    veh_kills = sum(v.item.kills or 0 for v in s.vehicles)
    veh_time = sum(v.item.time_in_seconds or 0 for v in s.vehicles)
    bars = {b.slug: b for b in (s.profile.progress if s.profile else ())}
    doc: Doc = {
        "kdr": div(d.kills, d.deaths), "wlr": div(d.wins, d.losses),
        "spm": per_minute(d.score, t), "gspm": None, "kpm": per_minute(d.kills, t),
        "sfpm": per_minute(d.shots_fired, t), "hkp": div(d.headshots, d.kills, 100),
        "khp": None, "accuracy": div(d.shots_hit, d.shots_fired, 100),
        "roundsFinished": (d.wins or 0) + (d.losses or 0) if d.wins is not None else None,
        "vehicleTime": veh_time, "vehicleKills": veh_kills, "weaponTime": wea_time,
        "weaponKills": wea_kills,
        "unknownKills": max(0, d.kills - wea_kills - veh_kills) if d.kills is not None
        else None,
        "weaTimeP": div(wea_time, t, 100), "weaKillsP": div(wea_kills, d.kills, 100),
        "weaKpm": per_minute(wea_kills, wea_time), "vehTimeP": div(veh_time, t, 100),
        "vehKillsP": div(veh_kills, d.kills, 100), "vehKpm": per_minute(veh_kills, veh_time),
        "ribpr": None}
    for slug in AWARD_BARS:
        bar = bars.get(slug)
        doc[slug] = bar.current if bar else None
        doc[f"{slug}Total"] = bar.maximum if bar else None
        if slug != "assignments":
            doc[f"{slug}Unique"] = None
    return doc


def stats(s: Stored) -> Doc | None:
    d = s.detailed
    if d is None:
        return None
    return {
        "skill": d.skill, "elo": 0, "rank": d.rank, "timePlayed": d.time_played_seconds,
        "kills": d.kills, "deaths": d.deaths, "headshots": d.headshots,
        "shotsFired": d.shots_fired, "shotsHit": d.shots_hit,
        "suppressionAssists": d.suppression_assists, "avengerKills": d.avenger_kills,
        "saviorKills": d.savior_kills, "nemesisKills": d.nemesis_kills,
        "numRounds": d.num_rounds, "numLosses": d.losses, "numWins": d.wins,
        "killStreakBonus": d.highest_kill_streak, "nemesisStreak": d.highest_nemesis_streak,
        "mcomDefendKills": None, "resupplies": d.resupplies, "repairs": d.repairs,
        "heals": d.heals, "revives": d.revives, "longestHeadshot": d.longest_headshot,
        "longestWinStreak": None, "flagDefend": d.flags_defended,
        "flagCaptures": d.flags_captured, "killAssists": d.kill_assists,
        "vehiclesDestroyed": d.vehicles_destroyed, "vehicleDamage": d.vehicle_damage,
        "dogtagsTaken": d.dogtags_taken, "streak": None, "bestStreak": None,
        "reset": dict.fromkeys(("lastReset", "score", "timePlayed", "timePlayedSinceLastReset",
                                "kills", "deaths", "shotsFired", "shotsHit", "numLosses",
                                "numWins")),
        "scores": scores(d),
        "modes": [{"id": MODE_IDS[key], "score": score, "name": name} for key, name in MODES
                  if (score := getattr(d, f"{key}_score")) is not None],
        "kits": kits(d), "extra": extra(s, d)}


def dogtags() -> Doc:
    return {"advanced": dict.fromkeys(DOGTAG_KEYS), "basic": dict.fromkeys(DOGTAG_KEYS)}


def player_info(s: Stored, opt: str | None) -> Doc:
    """The document, with the sections `opt` selects (all without it)."""
    parts: dict[str, Any] = {
        "stats": lambda: stats(s), "dogtags": dogtags,
        "weapons": lambda: [items.weapon(w) for w in s.weapons],
        "weaponCategory": lambda: items.weapon_categories(s.weapons),
        "vehicles": lambda: [items.vehicle(v) for v in s.vehicles],
        "vehicleCategory": lambda: items.vehicle_categories(s.vehicles),
        "kititems": list, "awards": list, "assignments": list, "upcomingUnlocks": list}
    doc: Doc = {"player": player(s)}
    for section in selected(opt):
        doc[section] = parts[section]()
    return doc
