"""Is this answer BF4's, of the endpoint asked, of the soldier asked, with BF4's values?

Battlelog serves BF3 and Hardline from the same host in the same envelope, with the same
``personaId`` and ``platformInt``; only ``data.statsTemplate`` (and values out of BF4's ranges,
e.g. Hardline's rank 150) tells them apart. Anything that is not what was asked is
``unrecognized`` with a signal naming what it was (``other_game:hardline``,
``other_endpoint:profile``, ``other_soldier``, ``out_of_range:rank``): retried, never stored,
never parked, archived for replay, and not a throttle (docs/battlelog.md, "Identity").

An answer without ``statsTemplate`` is judged by the endpoint's game marker (``gameInt`` of
the item lists, ``game`` of the overview: 2048 is BF4) when it has one, else accepted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from bf4ps.battlelog.coerce import to_id
from bf4ps.battlelog.models import BattlelogParseError, CatalogItem, DetailedStats, ProfileStats
from bf4ps.domain import ErrorClass, Resource

# each stats endpoint's statsTemplate (every BF4 capture has one)
TEMPLATES: dict[Resource, str] = {
    Resource.DETAILED: "profile.warsawdetailedstatspopulate",
    Resource.PROFILE: "profile.warsawoverviewpopulate",
    Resource.WEAPONS: "profile.warsawweaponsstats",
    Resource.VEHICLES: "profile.warsawvehiclesstats",
}
_RESOURCE_OF = {template: resource for resource, template in TEMPLATES.items()}
BF4_GAME = 2048  # Battlelog's game number of BF4 (gameInt / game)
GAME_MARKERS = ("gameInt", "game")
# a template's game prefix -> the signal's name for the game (signals hold [a-z_] only)
GAMES = {"bf3": "battlefield_three", "bfh": "hardline", "bf1": "battlefield_one",
         "bfv": "battlefield_five", "bf4": "battlefield_four", "mohw": "warfighter"}
_GAME_PREFIX = re.compile(r"^(?:profile\.)?(bf[0-9a-z]|mohw)")
MAX_RANK = 140
OTHER_GAME = "other_game"
OTHER_ENDPOINT = "other_endpoint"
OTHER_SOLDIER = "other_soldier"
OUT_OF_RANGE = "out_of_range"


def unrecognized(message: str, signal: str) -> BattlelogParseError:
    return BattlelogParseError(message, ErrorClass.UNRECOGNIZED, signal)


def check_template(data: Mapping[str, Any], resource: Resource) -> None:
    """The answer is the requested endpoint's, of BF4; else unrecognized, naming what it is."""
    template = data.get("statsTemplate")
    if template is None:
        _check_game_marker(data, resource)
        return
    expected = TEMPLATES[resource]
    if template == expected:
        return
    text = str(template)[:60]
    other = _RESOURCE_OF.get(text)
    if other is not None:
        raise unrecognized(f"statsTemplate {text}: BF4's {other.value} answer, not "
                           f"{resource.value}", f"{OTHER_ENDPOINT}:{other.value}")
    game = _game_of(text)
    raise unrecognized(f"statsTemplate {text}: another game's answer ({game}), not BF4's "
                       f"{resource.value}", f"{OTHER_GAME}:{game}")


def _game_of(template: str) -> str:
    found = _GAME_PREFIX.match(template.lower())
    return GAMES.get(found.group(1), "unknown") if found else "unknown"


def _check_game_marker(data: Mapping[str, Any], resource: Resource) -> None:
    for key in GAME_MARKERS:
        if data.get(key) is not None and to_id(data[key]) != BF4_GAME:
            raise unrecognized(f"{key} {str(data[key])[:20]} is not BF4's {BF4_GAME} "
                               f"({resource.value} without statsTemplate)",
                               f"{OTHER_GAME}:unknown")


def check_soldier(data: Mapping[str, Any], persona_id: int | None,
                  platform_int: int | None) -> None:
    """A present ``personaId`` / ``platformInt`` that is not the one asked for (or not an id)
    is another soldier's answer; an absent or null one cannot be checked and is accepted."""
    for key, expected in (("personaId", persona_id), ("platformInt", platform_int)):
        if expected is None or data.get(key) is None:
            continue
        if to_id(data[key]) != expected:
            raise unrecognized(f"{key} {str(data[key])[:30]} does not match the requested "
                               f"{expected}", OTHER_SOLDIER)


def check_ranges(parsed: DetailedStats | ProfileStats | CatalogItem) -> None:
    """BF4's ranges: rank 0-140, no number below 0 (but the skill rating)."""
    rank = getattr(parsed, "rank", None)
    if rank is not None and not 0 <= rank <= MAX_RANK:
        raise unrecognized(f"rank {rank} is outside BF4's 0-{MAX_RANK}", f"{OUT_OF_RANGE}:rank")
    for name in parsed.__dataclass_fields__:
        value = getattr(parsed, name)
        if name != "skill" and isinstance(value, int | float) and value < 0:
            raise unrecognized(f"{name} {value} is below 0", f"{OUT_OF_RANGE}:{name}")
