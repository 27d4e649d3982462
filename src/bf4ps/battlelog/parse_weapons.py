"""`warsawWeaponsPopulateStats/.../stats/` -> tuple[WeaponItem, ...].

``data.mainWeaponStats`` must be a list (else MALFORMED); an empty list is a valid answer.
Only the per-weapon counters are kept; the unlock/UI catalogue (``weaponsByCategory``,
``mainWeaponStatsMetadata``, ``unlocks`` ...) is ignored. ``accuracy`` is a 0-1 fraction in
weapon items and kept as such (no range clamp); melee/"Special" items send null
``headshots``/``shotsFired``/``shotsHit``/``accuracy``/``timeEquipped``, which stay None (never
0). Entries without a guid, and repeated guids, are dropped and counted
(``parse_weapon_batch(...).skipped``; the client records it in ``details["skipped_items"]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bf4ps.battlelog.coerce import to_float, to_int, to_str
from bf4ps.battlelog.envelope import ItemBatch, parse_item_batch
from bf4ps.battlelog.models import WeaponItem

LIST_KEY = "mainWeaponStats"


def parse_weapons(
    body: bytes, *, persona_id: int | None = None, platform_int: int | None = None
) -> tuple[WeaponItem, ...]:
    """Parse a weapons response; raises BattlelogParseError when it is not one."""
    return parse_weapon_batch(body, persona_id=persona_id, platform_int=platform_int).items


def parse_weapon_batch(
    body: bytes, *, persona_id: int | None = None, platform_int: int | None = None
) -> ItemBatch[WeaponItem]:
    """Like parse_weapons, and also says how many entries were dropped."""
    return parse_item_batch(body, LIST_KEY, weapon_item, persona_id, platform_int)


def weapon_item(guid: str, entry: Mapping[str, Any]) -> WeaponItem:
    return WeaponItem(
        guid=guid,
        name=to_str(entry.get("name")) or "",
        slug=to_str(entry.get("slug")),
        category=to_str(entry.get("category")),
        code=to_str(entry.get("code")),
        kills=to_int(entry.get("kills")),
        headshots=to_int(entry.get("headshots")),
        shots_fired=to_int(entry.get("shotsFired")),
        shots_hit=to_int(entry.get("shotsHit")),
        accuracy_fraction=to_float(entry.get("accuracy")),
        time_equipped_seconds=to_int(entry.get("timeEquipped")),
        service_stars=to_int(entry.get("serviceStars")),
        service_stars_progress=to_float(entry.get("serviceStarsProgress")),
    )
