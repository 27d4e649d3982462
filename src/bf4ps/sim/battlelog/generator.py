"""The simulator's own answers: each resource's documented shape (shapes/*.json: key sets, JSON
types, nesting; docs/battlelog.md "The simulator's answers") filled with the simulator's values.

A shape node is {"t": the JSON kinds seen there, "k": key -> node (an object), "m": an entry's
node (an object keyed by data: GUIDs, numbers, categories), "i": an element's node (an array)}.
`Filler` makes a value for a node: the first time it meets a place it takes the richest kind
(a container before a scalar), later it takes null where null is allowed, so every key of the
shape appears at least once and the catalogue stays as small as the real one's bulk allows.
"""

from __future__ import annotations

import csv
import uuid
from dataclasses import dataclass
from functools import cache
from importlib import resources

import orjson

from bf4ps.sim.battlelog.jsonvalue import JsonObject, JsonValue, arr, obj, text

_NAMESPACE = uuid.UUID("6c1f0f55-8d7e-4a55-9a43-4b4650530001")
_PREFERENCE = ("obj", "map", "list", "str", "float", "int", "bool", "null")
_NUMERIC_TEXT = ("generalStats", "overviewStats")  # their strings are counters ("4836")
ENTRIES = 2  # entries of a map, elements of an array, where the simulator has no list of its own


def sim_guid(kind: str, key: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"{kind}:{key}")).upper()


@cache
def shape(resource: str) -> JsonObject:
    """The shape of a resource's `data` object (detailed, profile, weapons, vehicles, soldiers)."""
    raw = (resources.files("bf4ps.sim.battlelog") / "shapes" / f"{resource}.json").read_bytes()
    return obj(orjson.loads(raw))


def node_at(node: JsonObject, *path: str) -> JsonObject:
    """The node of a key path; "[]" steps into an array's element, "{}" into a map's entry."""
    for step in path:
        key = {"[]": "i", "{}": "m"}.get(step)
        node = obj(node[key]) if key else obj(obj(node["k"])[step])
    return node


class Filler:
    """Makes values for shape nodes, deterministic for a given `seed`."""

    def __init__(self, seed: str) -> None:
        self.seed = seed
        self.seen: set[str] = set()
        self.count = 0

    def kind(self, node: JsonObject, place: str) -> str:
        kinds = [text(k) for k in arr(node["t"])]
        ranked = sorted(kinds, key=_PREFERENCE.index)
        if place in self.seen and "null" in kinds:
            return "null"
        self.seen.add(place)
        return ranked[0]

    def fill(self, node: JsonObject, place: str = "", key: str = "") -> JsonValue:
        kind = self.kind(node, place)
        self.count += 1
        if kind == "obj":
            keys = obj(node.get("k") or {})
            return {k: self.fill(obj(child), f"{place}.{k}", k) for k, child in keys.items()}
        if kind == "map":
            entry = node.get("m")
            if entry is None:
                return {}
            return {self.guid(place, n): self.fill(obj(entry), place + "{}", key)
                    for n in range(ENTRIES)}
        if kind == "list":
            element = node.get("i")
            if element is None:
                return []
            return [self.fill(obj(element), place + "[]", key) for _ in range(ENTRIES)]
        return self.scalar(kind, node, place, key)

    def guid(self, place: str, n: int) -> str:
        return sim_guid(self.seed, f"{place}#{n}#{self.count}")

    def scalar(self, kind: str, node: JsonObject, place: str, key: str) -> JsonValue:
        n = self.count
        if kind == "int":
            return n % 97
        if kind == "float":
            return float(n % 89)
        if kind == "bool":
            return n % 3 == 0
        if kind == "str":
            return self.text(node, place, key, n)
        return None

    def text(self, node: JsonObject, place: str, key: str, n: int) -> str:
        if key == "guid":
            return self.guid(place, n)
        numeric = {"int", "float"} & set(map(text, arr(node["t"])))
        if numeric or any(part in place for part in _NUMERIC_TEXT):
            return str(n * 37 % 10_000)
        return f"sim-{key.lower() or 'value'}-{n % 1000}"


@dataclass(frozen=True, slots=True)
class Weapon:
    slug: str
    code: str
    category: str
    category_sid: str
    name_sid: str
    kits: tuple[int, ...]  # none for a battle pickup
    melee: bool


@dataclass(frozen=True, slots=True)
class Vehicle:
    slug: str
    code: str
    category: str
    name_sid: str
    unlocks: int


def _rows(name: str) -> list[list[str]]:
    raw = (resources.files("bf4ps.sim.battlelog") / "data" / name).read_text(encoding="utf-8")
    return [row for row in csv.reader(raw.splitlines()) if row and not row[0].startswith("#")]


@cache
def weapons() -> tuple[Weapon, ...]:
    """The simulator's catalogue of weapons and gadgets (data/weapons.csv)."""
    return tuple(
        Weapon(slug, code, category, cat_sid, name_sid,
               tuple(int(k) for k in kits.split("/") if k), melee == "1")
        for slug, code, category, cat_sid, name_sid, kits, melee in _rows("weapons.csv")
    )


@cache
def vehicles() -> tuple[Vehicle, ...]:
    """The simulator's catalogue of vehicles (data/vehicles.csv)."""
    return tuple(Vehicle(slug, code, category, name_sid, int(unlocks))
                 for slug, code, category, name_sid, unlocks in _rows("vehicles.csv"))
