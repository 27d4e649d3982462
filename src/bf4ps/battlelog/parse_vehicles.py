"""`warsawvehiclesPopulateStats/.../stats/` -> tuple[VehicleItem, ...].

``data.mainVehicleStats`` must be a list (else MALFORMED); an empty list is a valid answer.
The unlock progression catalogue is ignored. Categories are kept verbatim, typos and trailing
spaces included ("Weapon Stationary "), because they are Battlelog's identifiers.
Entries without a guid, and repeated guids, are dropped and counted
(``parse_vehicle_batch(...).skipped``), exactly as for weapons.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bf4ps.battlelog.coerce import to_float, to_int, to_str
from bf4ps.battlelog.envelope import ItemBatch, parse_item_batch
from bf4ps.battlelog.models import VehicleItem

LIST_KEY = "mainVehicleStats"


def parse_vehicles(
    body: bytes, *, persona_id: int | None = None, platform_int: int | None = None
) -> tuple[VehicleItem, ...]:
    """Parse a vehicles response; raises BattlelogParseError when it is not one."""
    return parse_vehicle_batch(body, persona_id=persona_id, platform_int=platform_int).items


def parse_vehicle_batch(
    body: bytes, *, persona_id: int | None = None, platform_int: int | None = None
) -> ItemBatch[VehicleItem]:
    """Like parse_vehicles, and also says how many entries were dropped."""
    return parse_item_batch(body, LIST_KEY, vehicle_item, persona_id, platform_int)


def vehicle_item(guid: str, entry: Mapping[str, Any]) -> VehicleItem:
    return VehicleItem(
        guid=guid,
        name=to_str(entry.get("name")) or "",
        slug=to_str(entry.get("slug")),
        category=to_str(entry.get("category")),
        code=to_str(entry.get("code")),
        kills=to_int(entry.get("kills")),
        time_in_seconds=to_int(entry.get("timeIn")),
        destroy_x_in_y=to_int(entry.get("destroyXinY")),
        service_stars=to_int(entry.get("serviceStars")),
        service_stars_progress=to_float(entry.get("serviceStarsProgress")),
    )
