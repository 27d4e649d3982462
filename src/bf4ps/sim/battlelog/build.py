"""Each resource's `data` object as the simulator builds it from its shape and its catalogue, before
any persona's values go in (templates.py turns them into the per-request templates)."""

from __future__ import annotations

from bf4ps.sim.battlelog.career import RANK_SCORES
from bf4ps.sim.battlelog.generator import (
    Filler,
    Vehicle,
    Weapon,
    node_at,
    shape,
    sim_guid,
    vehicles,
    weapons,
)
from bf4ps.sim.battlelog.jsonvalue import JsonObject, JsonValue, array, obj

GAME_BF4 = 2048
# the overview's completion bars: slug, maximum (the simulator's own list)
PROGRESS = (("campaign", 7), ("assignments", 64), ("medals", 50), ("ribbons", 48),
            ("weapons", 174), ("vehicles", 82), ("kititems", 60), ("dogtags", 320))
LEADERBOARDS = ("score", "sc_squad", "sc_recon", "kills", "killsPerMinute", "sc_vehicle")


def _data(resource: str, template: str) -> tuple[JsonObject, Filler]:
    filler = Filler(resource)
    data = obj(filler.fill(shape(resource)))
    data["statsTemplate"] = template
    data.update({k: v for k, v in (("mySoldier", False), ("gameInt", GAME_BF4)) if k in data})
    return data, Filler(f"{resource}-catalogue")  # a new one: its first item has every key


def _weapon(filler: Filler, weapon: Weapon) -> JsonObject:
    item = obj(filler.fill(node_at(shape("weapons"), "mainWeaponStats", "[]"), ".item[]"))
    item.update(guid=sim_guid("weapon", weapon.slug), slug=weapon.slug, code=weapon.code,
                category=weapon.category, categorySID=weapon.category_sid,
                name=weapon.name_sid, kit=list(weapon.kits))
    return item


def _unlock_entry(filler: Filler, weapon: Weapon) -> JsonObject:
    node = node_at(shape("weapons"), "weaponsByCategory", "{}", "[]")
    entry = obj(filler.fill(node, ".entry[]"))
    unlock = entry.get("weaponUnlock")
    if isinstance(unlock, dict):
        unlock.update(guid=sim_guid("weapon", weapon.slug), slug=weapon.slug)
    entry["kit"] = weapon.kits[0] if weapon.kits else 0
    return entry


def weapons_data() -> JsonObject:
    """warsawWeaponsPopulateStats' data: the catalogue's items and its unlock catalogue."""
    data, filler = _data("weapons", "profile.warsawweaponsstats")
    data["mainWeaponStats"] = [_weapon(filler, w) for w in weapons()]
    by_code: dict[str, list[JsonValue]] = {}
    for weapon in weapons():
        by_code.setdefault(weapon.code, []).append(_unlock_entry(filler, weapon))
    data["weaponsByCategory"] = {code: entries for code, entries in by_code.items()}
    return data


def _vehicle(filler: Filler, vehicle: Vehicle) -> JsonObject:
    node = node_at(shape("vehicles"), "mainVehicleStats", "[]")
    item = obj(filler.fill(node, ".item[]"))
    unlock = node_at(node, "unlocks", "[]")
    item.update(guid=sim_guid("vehicle", vehicle.slug), slug=vehicle.slug, code=vehicle.code,
                category=vehicle.category, name=vehicle.name_sid,
                unlocks=[filler.fill(unlock, ".item[].unlocks[]") for _ in range(vehicle.unlocks)])
    return item


def vehicles_data() -> JsonObject:
    """warsawvehiclesPopulateStats' data: the catalogue's items, unlock trees per category."""
    data, filler = _data("vehicles", "profile.warsawvehiclesstats")
    data["mainVehicleStats"] = [_vehicle(filler, v) for v in vehicles()]
    trees: dict[str, int] = {}
    for vehicle in vehicles():
        trees[vehicle.category] = max(trees.get(vehicle.category, 0), vehicle.unlocks)
    node = node_at(shape("vehicles"), "unlockProgression", "{}", "[]")
    data["unlockProgression"] = {
        category: [filler.fill(node, ".progression[]") for _ in range(n)]
        for category, n in trees.items() if n
    }
    data["unlockProgressionAmount"] = {
        category: {"taken": n, "total": n} for category, n in trees.items() if n
    }
    return data


def detailed_data() -> JsonObject:
    return _data("detailed", "profile.warsawdetailedstatspopulate")[0]


def overview_data() -> JsonObject:
    """warsawoverviewpopulate's data: completion bars and leaderboard entries of its own."""
    data, filler = _data("profile", "profile.warsawoverviewpopulate")
    bar = node_at(shape("profile"), "gameProgress", "[]")
    data["gameProgress"] = [
        {**obj(filler.fill(bar, ".bar")), "slug": slug, "name": f"SIM_PROGRESS_{slug.upper()}",
         "max": maximum, "current": 0, "percent": 0}
        for slug, maximum in PROGRESS
    ]
    board = node_at(shape("profile"), "geolbTopPerformance", "[]")
    entries = []
    for stat in LEADERBOARDS:
        entry = obj(filler.fill(board, ".board"))
        item = entry.get("leaderboardItem")
        if isinstance(item, dict):
            item["statKey"] = stat
        entry["score"] = 0.0
        entries.append(entry)
    data["geolbTopPerformance"] = array(entries)
    return data


def rank_info(rank: int) -> JsonObject:
    """currentRankNeeded / nextRankNeeded of one rank."""
    info = obj(Filler(f"rank{rank}").fill(node_at(shape("profile"), "currentRankNeeded")))
    info.update(name=f"WARSAW_ID_P_RANK{rank}_NAME", level=rank, pointsNeeded=RANK_SCORES[rank],
                guid=sim_guid("rank", str(rank)))
    return info


def soldiers_data() -> JsonObject:
    """overviewBoxStats' data: one soldier's entry (lookup.py makes one per soldier)."""
    return obj(Filler("soldiers").fill(shape("soldiers")))
