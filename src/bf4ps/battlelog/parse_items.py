"""`warsawWeaponsPopulateStats/...` and `warsawvehiclesPopulateStats/...` -> tuple of items:
one parse for both item kinds, each described by its list key and its counters.

``data.<list key>`` (``mainWeaponStats``, ``mainVehicleStats``) must be a list (else
MALFORMED); an empty list is a valid answer. Only the per-item counters are kept; the
unlock/UI catalogue (``weaponsByCategory``, ``unlocks`` ...) is ignored. Categories are kept
verbatim, typos and trailing spaces included ("Weapon Stationary "): they are Battlelog's
identifiers. ``accuracy`` is a 0-1 fraction in weapon items, kept as such; melee/"Special"
weapons send null counters, which stay None (never 0). Entries without a guid, and repeated
guids, are dropped and counted (``ItemBatch.skipped``; the client records it in
``details["skipped_items"]``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from bf4ps.battlelog.coerce import to_float, to_int, to_str
from bf4ps.battlelog.envelope import ItemBatch, parse_item_batch
from bf4ps.battlelog.models import VehicleItem, WeaponItem
from bf4ps.domain import Resource

ItemT = TypeVar("ItemT", WeaponItem, VehicleItem)


@dataclass(frozen=True, slots=True)
class ItemShape(Generic[ItemT]):
    """One item kind's answer: its list key, its item type and its counters (item field,
    Battlelog's key, coercion) after the catalog fields every kind has."""

    resource: Resource
    list_key: str
    item: type[ItemT]
    counters: tuple[tuple[str, str, Callable[[object], Any]], ...]

    def build(self, guid: str, entry: Mapping[str, Any]) -> ItemT:
        return self.item(guid=guid, name=to_str(entry.get("name")) or "",
                         slug=to_str(entry.get("slug")), category=to_str(entry.get("category")),
                         code=to_str(entry.get("code")),
                         **{field: coerce(entry.get(key)) for field, key, coerce in self.counters})

    def batch(self, body: bytes, *, persona_id: int | None = None,
              platform_int: int | None = None) -> ItemBatch[ItemT]:
        """The items, and how many entries were dropped; raises BattlelogParseError when the
        body is not such an answer."""
        return parse_item_batch(body, self.resource, self.list_key, self.build, persona_id,
                                platform_int)

    def parse(self, body: bytes, *, persona_id: int | None = None,
              platform_int: int | None = None) -> tuple[ItemT, ...]:
        return self.batch(body, persona_id=persona_id, platform_int=platform_int).items


_STARS = (("service_stars", "serviceStars", to_int),
          ("service_stars_progress", "serviceStarsProgress", to_float))
WEAPONS: ItemShape[WeaponItem] = ItemShape(Resource.WEAPONS, "mainWeaponStats", WeaponItem, (
    ("kills", "kills", to_int), ("headshots", "headshots", to_int),
    ("shots_fired", "shotsFired", to_int), ("shots_hit", "shotsHit", to_int),
    ("accuracy_fraction", "accuracy", to_float),
    ("time_equipped_seconds", "timeEquipped", to_int), *_STARS))
VEHICLES: ItemShape[VehicleItem] = ItemShape(Resource.VEHICLES, "mainVehicleStats", VehicleItem, (
    ("kills", "kills", to_int), ("time_in_seconds", "timeIn", to_int),
    ("destroy_x_in_y", "destroyXinY", to_int), *_STARS))

parse_weapons = WEAPONS.parse
parse_weapon_batch = WEAPONS.batch
parse_vehicles = VEHICLES.parse
parse_vehicle_batch = VEHICLES.batch
