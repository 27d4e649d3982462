"""Payload templates, built once per process from the simulator's own generated answers (build.py).

The weapons and vehicles bodies are mostly a constant unlock/UI catalogue. It is serialized once
to bytes; per request only the per-persona counters of each item are formatted and spliced in.
The catalogue is padded to the live bodies' sizes (~586 KB and ~453 KB) with more entries of its
own unlock catalogue under new GUIDs.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import cache

import orjson

from bf4ps.sim.battlelog import build
from bf4ps.sim.battlelog.career import RANK_SCORES
from bf4ps.sim.battlelog.generator import sim_guid, weapons
from bf4ps.sim.battlelog.jsonvalue import JsonObject, JsonValue, arr, obj, objs, text

WEAPON_VARS: tuple[str, ...] = ("kills", "headshots", "shotsFired", "shotsHit", "accuracy")
WEAPON_VARS += ("timeEquipped", "serviceStars", "serviceStarsProgress")
VEHICLE_VARS = ("kills", "timeIn", "destroyXinY", "serviceStars", "serviceStarsProgress")
WEAPONS_TARGET_BYTES = 586_000
VEHICLES_TARGET_BYTES = 453_000
_VAR_BYTES = {"mainWeaponStats": 150, "mainVehicleStats": 85}  # typical formatted counters


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


def _item(raw: JsonObject, variables: tuple[str, ...], melee: frozenset[str]) -> ItemTemplate:
    base = {k: v for k, v in raw.items() if k not in variables}
    return ItemTemplate(
        guid=text(raw["guid"]),
        slug=text(raw["slug"]),
        code=text(raw["code"]),
        category=text(raw["category"]),
        null_counters=text(raw["slug"]) in melee,
        base=base,
        tail=orjson.dumps(base)[1:-1],
    )


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
    melee = frozenset(w.slug for w in weapons() if w.melee)
    templates = tuple(_item(raw, variables, melee) for raw in items)
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
    data = build.weapons_data()
    return _bulk(data, "mainWeaponStats", objs(data["mainWeaponStats"]), WEAPONS_TARGET_BYTES)


@cache
def vehicles_template() -> BulkTemplate:
    data = build.vehicles_data()
    return _bulk(data, "mainVehicleStats", objs(data["mainVehicleStats"]), VEHICLES_TARGET_BYTES)


@cache
def detailed_template() -> JsonObject:
    return build.detailed_data()


@cache
def overview_template() -> JsonObject:
    return build.overview_data()


@cache
def soldier_box_template() -> JsonObject:
    return build.soldiers_data()


@cache
def rank_infos() -> tuple[JsonObject, ...]:
    """currentRankNeeded/nextRankNeeded objects for ranks 0..140."""
    return tuple(build.rank_info(n) for n in range(len(RANK_SCORES)))


def warm() -> None:
    """Build every template now (the first requests would otherwise pay for it)."""
    weapons_template()
    vehicles_template()
    rank_infos()
    soldier_box_template()
    detailed_template()
