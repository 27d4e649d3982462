"""Per-persona weapon and vehicle counters, and the spliced weapons/vehicles bodies.

A Loadout is the base (EPOCH) split of a career over the catalogue, cached per persona. Each
request scales it by the growth factor, formats ~8 numbers per item and splices them in front
of the item's pre-serialized constant keys; the catalogue is spliced in as one bytes object.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import orjson

from bf4ps.sim.battlelog.career import Career, career_for
from bf4ps.sim.battlelog.catalogue import DEFAULT_CLASS, LAUNCHER_CODES, WEAPON_CLASSES
from bf4ps.sim.battlelog.jsonvalue import JsonObject, JsonValue
from bf4ps.sim.battlelog.templates import (
    BulkTemplate,
    ItemTemplate,
    vehicles_template,
    weapons_template,
)

_LOW_KILL_VEHICLES = ("Transport", "Equi", "Stationary", "Hovercraft", "Snowmobile")


@dataclass(frozen=True, slots=True)
class Row:
    """Base counters of one catalogue item (floats; rounded after scaling)."""

    index: int  # into the template's items
    kills: float = 0.0
    headshots: float = 0.0
    fired: float = 0.0
    hit: float = 0.0
    time: float = 0.0
    destroys: float = 0.0

    @property
    def used(self) -> bool:
        return self.kills > 0 or self.time > 0


@dataclass(frozen=True, slots=True)
class Loadout:
    career: Career
    weapons: tuple[Row, ...]  # payload order: kills, descending
    vehicles: tuple[Row, ...]  # catalogue order
    top_vehicles: tuple[Row, ...]
    kills: float
    headshots: float
    fired: float
    hit: float
    vehicle_kills: float
    vehicles_destroyed: float
    groups: dict[str, tuple[float, float, float, float]]  # prefix: kills, headshots, fired, hit


@lru_cache(maxsize=1_024)  # ~30 KB each; a persona's resources are fetched close together
def loadout_for(persona_id: int) -> Loadout:
    career = career_for(persona_id)
    rng = random.Random(career.seed ^ 0x5EED)
    kills = career.kpm * career.time_played / 60.0
    vehicle_kills = kills * career.vehicle_kill_share
    weapons = _weapon_rows(career, rng, kills - vehicle_kills)
    vehicles = _vehicle_rows(career, rng, vehicle_kills)
    return Loadout(
        career=career,
        weapons=tuple(sorted(weapons, key=lambda r: (-r.kills, r.index))),
        vehicles=tuple(vehicles),
        top_vehicles=_top_vehicles(vehicles),
        kills=kills,
        headshots=sum(r.headshots for r in weapons),
        fired=sum(r.fired for r in weapons),
        hit=sum(r.hit for r in weapons),
        vehicle_kills=vehicle_kills,
        vehicles_destroyed=sum(r.destroys for r in vehicles),
        groups=_groups(weapons),
    )


def _top_vehicles(rows: list[Row]) -> tuple[Row, ...]:
    """The overview's top 3: the most kills among vehicles with an unlock tree (as captured)."""
    items = vehicles_template().items
    ranked = [r for r in rows if items[r.index].base.get("unlocks")]
    return tuple(sorted(ranked, key=lambda r: (-r.kills, -r.time, r.index))[:3])


@lru_cache(maxsize=512)
def _unused(index: int) -> Row:
    """Unused items share one Row per catalogue index (most of a soldier's catalogue)."""
    return Row(index)


def _weights(rng: random.Random, probability: float, scales: list[float]) -> list[float]:
    weights = [rng.paretovariate(1.1) * s if rng.random() < probability else 0.0 for s in scales]
    if not any(weights):
        weights[0] = 1.0
    return weights


def _weapon_rows(career: Career, rng: random.Random, kills: float) -> list[Row]:
    items = weapons_template().items
    breadth = min(0.8, 0.1 + 0.09 * math.log1p(career.time_played / 3600.0))
    scales = [WEAPON_CLASSES.get(t.code, DEFAULT_CLASS).weight for t in items]
    scales = [s * (0.3 if t.null_counters else 1.0) for s, t in zip(scales, items, strict=True)]
    weights = _weights(rng, breadth, scales)
    total = sum(weights)
    infantry_time = career.time_played * (1.0 - career.vehicle_time_share) * 0.92
    rows = []
    for index, (item, weight) in enumerate(zip(items, weights, strict=True)):
        if weight == 0.0:
            rows.append(_unused(index))
            continue
        share = weight / total
        rows.append(_weapon_row(career, rng, item, index, kills * share, infantry_time * share))
    return rows


def _weapon_row(
    career: Career, rng: random.Random, item: ItemTemplate, index: int, kills: float, time: float
) -> Row:
    time *= rng.uniform(0.7, 1.3)
    if item.null_counters:
        return Row(index, kills=kills, time=time)
    cls = WEAPON_CLASSES.get(item.code, DEFAULT_CLASS)
    fired = kills * cls.shots_per_kill * rng.uniform(0.8, 1.25) + rng.uniform(0, 20)
    accuracy = min(0.95, career.accuracy * cls.accuracy * rng.uniform(0.85, 1.15))
    headshots = kills * min(0.9, career.headshot_rate * cls.headshots * rng.uniform(0.8, 1.2))
    return Row(index, kills, headshots, fired, fired * accuracy, time)


def _vehicle_rows(career: Career, rng: random.Random, kills: float) -> list[Row]:
    items = vehicles_template().items
    probability = min(0.75, 0.15 + 2.0 * career.vehicle_time_share)
    low = [any(word in t.category for word in _LOW_KILL_VEHICLES) for t in items]
    kill_weights = _weights(rng, probability, [0.15 if x else 1.0 for x in low])
    time_weights = [
        w * rng.uniform(0.5, 1.5) * (4.0 if x else 1.0)
        for w, x in zip(kill_weights, low, strict=True)
    ]
    kill_total, time_total = sum(kill_weights), sum(time_weights)
    vehicle_time = career.time_played * career.vehicle_time_share
    rows = []
    for index, (kw, tw) in enumerate(zip(kill_weights, time_weights, strict=True)):
        if kw == 0.0:
            rows.append(_unused(index))
            continue
        k = kills * kw / kill_total
        rows.append(
            Row(
                index,
                kills=k,
                time=vehicle_time * tw / time_total,
                destroys=k * rng.uniform(0.15, 0.45),
            )
        )
    return rows


def _groups(rows: list[Row]) -> dict[str, tuple[float, float, float, float]]:
    items = weapons_template().items
    groups: dict[str, tuple[float, float, float, float]] = {}
    for row in rows:
        code = items[row.index].code
        prefix = (
            "rocketLauncher"
            if code in LAUNCHER_CODES
            else WEAPON_CLASSES.get(code, DEFAULT_CLASS).detailed
        )
        if prefix is None:
            continue
        k, h, f, t = groups.get(prefix, (0.0, 0.0, 0.0, 0.0))
        groups[prefix] = (k + row.kills, h + row.headshots, f + row.fired, t + row.hit)
    return groups


def _n(value: float) -> int | float:
    """Battlelog's quirk: a zero counter in an item is the float 0.0, others are ints."""
    return round(value) or 0.0


def weapon_values(row: Row, item: ItemTemplate, growth: float) -> JsonObject:
    kills = round(row.kills * growth)
    stars: JsonObject = {
        "serviceStars": float(kills // 100),
        "serviceStarsProgress": float(kills % 100),
    }
    if not row.used:
        stars = {"serviceStars": 0, "serviceStarsProgress": 0}
    if item.null_counters:
        return {
            "kills": kills or 0.0,
            "headshots": None,
            "shotsFired": None,
            "shotsHit": None,
            "accuracy": None,
            "timeEquipped": None,
            **stars,
        }
    fired = round(row.fired * growth)
    hit = min(fired, round(row.hit * growth))
    return {
        "kills": kills or 0.0,
        "headshots": _n(min(kills, row.headshots * growth)),
        "shotsFired": fired or 0.0,
        "shotsHit": hit or 0.0,
        "accuracy": round(hit / fired, 10) if fired else 0.0,
        "timeEquipped": _n(row.time * growth),
        **stars,
    }


def vehicle_values(row: Row, item: ItemTemplate, growth: float) -> JsonObject:
    kills = round(row.kills * growth)
    used = kills > 0
    return {
        "kills": kills or 0.0,
        "timeIn": _n(row.time * growth),
        "destroyXinY": _n(row.destroys * growth),
        "serviceStars": float(kills // 25) if used else 0,
        "serviceStarsProgress": float(kills % 25 * 4) if used else 0,
    }


Formatter = Callable[[Row, ItemTemplate, float], JsonObject]  # an item's per-persona keys


def bulk_body(
    template: BulkTemplate,
    rows: tuple[Row, ...],
    values: Formatter,
    growth: float,
    persona_id: int,
    platform_int: int,
) -> bytes:
    head = b'{"type":"success","message":"OK","data":{"personaId":%d,"platformInt":%d,"%s":[' % (
        persona_id,
        platform_int,
        template.list_key.encode(),
    )
    items = template.items
    parts = [
        orjson.dumps(values(row, items[row.index], growth))[:-1] + b"," + items[row.index].tail
        for row in rows
    ]
    return b"".join((head, b"},".join(parts), b"}]", template.rest, b"}}"))


def weapons_body(persona_id: int, platform_int: int, growth: float) -> bytes:
    rows = loadout_for(persona_id).weapons
    return bulk_body(weapons_template(), rows, weapon_values, growth, persona_id, platform_int)


def vehicles_body(persona_id: int, platform_int: int, growth: float) -> bytes:
    rows = loadout_for(persona_id).vehicles
    return bulk_body(vehicles_template(), rows, vehicle_values, growth, persona_id, platform_int)


def item_dicts(
    template: BulkTemplate, rows: tuple[Row, ...], values: Formatter, growth: float
) -> list[JsonValue]:
    """Whole item objects (the overview's top weapons/vehicles), as a JSON array."""
    return [
        {**template.items[r.index].base, **values(r, template.items[r.index], growth)} for r in rows
    ]
