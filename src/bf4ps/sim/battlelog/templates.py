"""Payload templates, built once per process from the real responses shipped in data/.

The weapons and vehicles bodies are mostly a constant unlock/UI catalogue. It is serialized once
to bytes; per request only the per-persona counters of each item are formatted and spliced in.
The 2013 fixtures are inflated to the live catalogue (174 weapons, 82 vehicles in 27 categories,
~586 KB and ~453 KB bodies) by cloning real entries under new slugs and GUIDs.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass
from functools import cache
from importlib import resources

import orjson

from bf4ps.sim.battlelog.career import RANK_SCORES
from bf4ps.sim.battlelog.catalogue import NEW_VEHICLES, NEW_WEAPONS
from bf4ps.sim.battlelog.jsonvalue import JsonObject, JsonValue, arr, obj, objs, text

WEAPON_VARS: tuple[str, ...] = ("kills", "headshots", "shotsFired", "shotsHit", "accuracy")
WEAPON_VARS += ("timeEquipped", "serviceStars", "serviceStarsProgress")
VEHICLE_VARS = ("kills", "timeIn", "destroyXinY", "serviceStars", "serviceStarsProgress")
WEAPONS_TARGET_BYTES = 586_000
VEHICLES_TARGET_BYTES = 453_000
_VAR_BYTES = {"mainWeaponStats": 150, "mainVehicleStats": 85}  # typical formatted counters
_NAMESPACE = uuid.UUID("6c1f0f55-8d7e-4a55-9a43-4b4650530001")


def sim_guid(kind: str, key: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"{kind}:{key}")).upper()


def load_fixture(name: str) -> JsonObject:
    """The `data` object of a captured response."""
    raw = (resources.files("bf4ps.sim.battlelog") / "data" / name).read_bytes()
    return obj(obj(orjson.loads(raw))["data"])


@dataclass(frozen=True, slots=True)
class ItemTemplate:
    guid: str
    slug: str
    code: str
    category: str
    null_counters: bool  # melee: headshots/shots/accuracy/time are null
    base: JsonObject  # constant keys (for the overview's top items)
    tail: bytes  # the constant keys serialized, without braces


@dataclass(frozen=True, slots=True)
class BulkTemplate:
    list_key: str
    items: tuple[ItemTemplate, ...]
    rest: bytes  # every other constant key of data, serialized, each preceded by a comma


def _item(raw: JsonObject, variables: tuple[str, ...]) -> ItemTemplate:
    base = {k: v for k, v in raw.items() if k not in variables}
    return ItemTemplate(
        guid=text(raw["guid"]),
        slug=text(raw["slug"]),
        code=text(raw["code"]),
        category=text(raw["category"]),
        null_counters=raw.get("headshots", 0) is None,
        base=base,
        tail=orjson.dumps(base)[1:-1],
    )


def _sid(slug: str) -> str:
    return "".join(ch for ch in slug.upper() if ch.isalnum())


def _clone_items(
    items: list[JsonObject], kind: str, new: tuple[tuple[str, str, str | None], ...]
) -> list[JsonObject]:
    by_slug = {text(item["slug"]): item for item in items}
    clones = []
    for slug, source_slug, category in new:
        clone = copy.deepcopy(by_slug[source_slug])
        clone["guid"] = sim_guid(kind, slug)
        clone["slug"] = slug
        if kind == "weapon":
            clone["name"] = f"WARSAW_ID_P_WNAME_{_sid(slug)}"
        else:
            clone["name"] = f"WARSAW_ID_P_VNAME_{_sid(slug)}"
            prefix = "".join(ch for ch in text(clone["code"]) if ch.islower())
            clone["code"] = prefix + _sid(slug)
            if category != clone["category"]:
                clone["unlocks"] = []  # a new category has no unlock tree of its own
            clone["category"] = category
        clones.append(clone)
    return clones


def _weapon_catalogue(data: JsonObject, items: list[JsonObject]) -> None:
    """Give the cloned weapons their unlock entries, as the real catalogue has for each."""
    guids = {text(item["slug"]): text(item["guid"]) for item in items}
    unlocks = obj(obj(data["mainWeaponStatsMetadata"])["unlockProgression"])
    for slug, source_slug, _ in NEW_WEAPONS:
        guid, source_guid = guids[slug], guids[source_slug]
        for table in map(obj, unlocks.values()):
            if source_guid in table:
                table[guid] = copy.deepcopy(table[source_guid])
        for entries in map(arr, obj(data["weaponsByCategory"]).values()):
            for entry in objs(entries):
                unlock = entry.get("weaponUnlock")
                if unlock and obj(unlock).get("slug") == source_slug:
                    clone = copy.deepcopy(entry)
                    obj(clone["weaponUnlock"]).update(guid=guid, slug=slug)
                    entries.append(clone)


def _pad(pool: JsonObject | list[JsonValue], sources: list[JsonValue], kind: str,
         missing: int) -> None:
    """Clone `sources` entries into `pool` (a dict keyed by GUID or a list) until ~`missing`
    more bytes of catalogue exist: the live catalogue is bigger than the 2013 one."""
    n = 0
    while missing > 0:
        clone = copy.deepcopy(sources[n % len(sources)])
        guid = sim_guid(kind, str(n))
        if isinstance(pool, dict):
            pool[guid] = clone
            missing -= len(guid) + 4
        else:
            obj(clone)["guid"] = guid
            pool.append(clone)
        missing -= len(orjson.dumps(clone)) + 1
        n += 1


def _bulk(data: JsonObject, list_key: str, items: list[JsonObject], target: int) -> BulkTemplate:
    variables = WEAPON_VARS if list_key == "mainWeaponStats" else VEHICLE_VARS
    templates = tuple(_item(raw, variables) for raw in items)
    constant = {k: v for k, v in data.items() if k not in (list_key, "personaId", "platformInt")}
    items_bytes = sum(len(t.tail) + 3 + _VAR_BYTES[list_key] for t in templates)
    missing = target - items_bytes - len(orjson.dumps(constant)) - 120
    if list_key == "mainWeaponStats":
        pool = obj(constant["selectedWeaponAccessory"])
        _pad(pool, list(pool.values()), "accessory", missing)
    else:
        lists = [arr(v) for v in obj(constant["unlockProgression"]).values() if v]
        sources = [entry for entries in lists for entry in entries]
        _pad(lists[-1], sources, "vehicle-unlock-extra", missing)
    rest = b"".join(b"," + orjson.dumps({k: v})[1:-1] for k, v in constant.items())
    return BulkTemplate(list_key=list_key, items=templates, rest=rest)


@cache
def weapons_template() -> BulkTemplate:
    data = load_fixture("weapon-stats.json")
    items = objs(data["mainWeaponStats"])
    items = items + _clone_items(items, "weapon", NEW_WEAPONS)
    _weapon_catalogue(data, items)
    return _bulk(data, "mainWeaponStats", items, WEAPONS_TARGET_BYTES)


@cache
def vehicles_template() -> BulkTemplate:
    data = load_fixture("vehicles-stats.json")
    items = objs(data["mainVehicleStats"])
    items = items + _clone_items(items, "vehicle", NEW_VEHICLES)
    return _bulk(data, "mainVehicleStats", items, VEHICLES_TARGET_BYTES)


@cache
def detailed_template() -> JsonObject:
    return load_fixture("detailed-TheOnlyBond.json")


@cache
def overview_template() -> JsonObject:
    return load_fixture("soldieroverview.json")


@cache
def soldier_box_template() -> JsonObject:
    return load_fixture("soldier_listing.json")


@cache
def rank_infos() -> tuple[JsonObject, ...]:
    """currentRankNeeded/nextRankNeeded objects for ranks 0..140, from the rank-12 fixture."""
    rank12 = obj(overview_template()["currentRankNeeded"])
    raw = orjson.dumps(rank12).decode()
    guid = text(rank12["guid"])
    infos = []
    for n, points in enumerate(RANK_SCORES):
        rank_json = (
            raw.replace("RANK12_", f"RANK{n}_")
            .replace("Rank012", f"Rank{n:03d}")
            .replace("r012", f"r{n:03d}")
            .replace('"r12"', f'"r{n}"')
            .replace("/r12.png", f"/r{n}.png")
            .replace('"level":12', f'"level":{n}')
            .replace('"pointsNeeded":229000', f'"pointsNeeded":{points}')
            .replace(guid, sim_guid("rank", str(n)))
        )
        infos.append(obj(orjson.loads(rank_json)))
    return tuple(infos)


def warm() -> None:
    """Build every template now (the first requests would otherwise pay for it)."""
    weapons_template()
    vehicles_template()
    rank_infos()
    soldier_box_template()
    detailed_template()
