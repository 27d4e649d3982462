"""bf4stats.com's item sections of `playerInfo` (weapons, weaponCategory, vehicles,
vehicleCategory) from a soldier's stored weapons and vehicles. Image fields are paths relative
to the website's image folder, as that format has them (docs/api.md). Catalogue details BF4PS
does not collect (weapon data, unlock lists) are present and null, or empty lists."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from bf4ps.battlelog.models import VehicleItem, WeaponItem
from bf4ps.stats.read import StoredItem
from bf4ps.views.compat import div, image_name, per_minute
from bf4ps.views.soldier import item_name

Doc = dict[str, Any]
WEAPON_DATA = ("statHandling", "fireModeBurst", "statDamage", "statMobility", "fireModeSingle",
               "fireModeAuto", "statRange", "range", "rateOfFire", "altAmmoName", "ammoType",
               "ammo", "statAccuracy")
STAR_KILLS = 100  # a weapon's or vehicle's service star: 100 kills


def img(folder: str, name: str) -> str:
    return f"bf4/{folder}/{image_name(name)}.png"


def stars(kills: int | None, count: int | None) -> Doc:
    curr = kills or 0
    n = count if count is not None else curr // STAR_KILLS
    needed = (n + 1) * STAR_KILLS
    rel_curr = max(0, curr - n * STAR_KILLS)
    return {"count": n, "curr": curr, "needed": needed, "relNeeded": STAR_KILLS,
            "relCurr": rel_curr, "relProg": div(rel_curr, STAR_KILLS, 100)}


def weapon(w: StoredItem[WeaponItem]) -> Doc:
    i = w.item
    slug = (i.slug or i.guid).lower()
    name = item_name(i.name, i.slug)
    seconds = i.time_equipped_seconds
    return {
        "stat": {"id": slug, "shots": i.shots_fired, "hits": i.shots_hit, "hs": i.headshots,
                 "kills": i.kills, "time": seconds},
        "name": name,
        "detail": {"id": slug, "category": (i.code or "").upper() or None, "name": name,
                   "type": i.category, "image": image_name(slug), "desc": None,
                   "weaponData": dict.fromkeys(WEAPON_DATA), "code": i.code, "kits": [],
                   "unlockLicense": None, "unlock": {"code": None, "name": None,
                                                     "needed": None}},
        "extra": {"kpm": per_minute(i.kills, seconds), "sfpm": per_minute(i.shots_fired, seconds),
                  "hkp": div(i.headshots, i.kills, 100),
                  "accuracy": div(i.shots_hit, i.shots_fired, 100)},
        "stars": stars(i.kills, i.service_stars),
        "imgFancy": img("weapons_fancy", slug), "imgLineart": img("weapons_lineart", slug),
        "unlocks": [], "unlocksTotal": None, "unlocksCurr": None}


def vehicle(v: StoredItem[VehicleItem]) -> Doc:
    i = v.item
    slug = (i.slug or i.guid).lower()
    name = item_name(i.name, i.slug)
    return {
        "stat": {"id": slug, "destroys": i.destroy_x_in_y, "kills": i.kills,
                 "time": i.time_in_seconds},
        "name": name,
        "detail": {"id": slug, "name": name, "category": i.category,
                   "image": image_name(slug)},
        "extra": {"kpm": per_minute(i.kills, i.time_in_seconds)},
        "imgFancy": img("vehicles_fancy", slug), "imgLineart": img("vehicles_lineart", slug)}


def _sum(values: list[int | None]) -> int:
    return sum(v or 0 for v in values)


def weapon_categories(weapons: list[StoredItem[WeaponItem]]) -> list[Doc]:
    groups: dict[str, list[WeaponItem]] = defaultdict(list)
    for w in weapons:
        groups[w.item.category or "Other"].append(w.item)
    out = []
    for name, items in sorted(groups.items()):
        time = _sum([i.time_equipped_seconds for i in items])
        kills, hs = _sum([i.kills for i in items]), _sum([i.headshots for i in items])
        shots, hits = _sum([i.shots_fired for i in items]), _sum([i.shots_hit for i in items])
        out.append({"name": name.upper(),
                    "stat": {"score": None, "time": time, "kills": kills, "hs": hs,
                             "hits": hits, "shots": shots},
                    "extra": {"kpm": per_minute(kills, time), "spm": 0,
                              "sfpm": per_minute(shots, time), "hkp": div(hs, kills, 100),
                              "accuracy": div(hits, shots, 100)}})
    return out


def vehicle_categories(vehicles: list[StoredItem[VehicleItem]]) -> list[Doc]:
    groups: dict[str, list[VehicleItem]] = defaultdict(list)
    for v in vehicles:
        groups[v.item.category or "Other"].append(v.item)
    out: list[Doc] = []
    for category, items in sorted(groups.items()):
        name = category.removeprefix("Vehicle ")
        time, kills = _sum([i.time_in_seconds for i in items]), _sum([i.kills for i in items])
        out.append({"id": "vehicle" + image_name(name).replace("-", ""), "name": name,
                    "stat": {"destroys": _sum([i.destroy_x_in_y for i in items]),
                             "time": time, "kills": kills, "score": None},
                    "unlocks": [], "unlocksTotal": None, "unlocksCurr": None,
                    "extra": {"kpm": per_minute(kills, time), "spm": 0}})
    return out
