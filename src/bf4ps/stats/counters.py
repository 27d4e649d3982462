"""Which fields of the parsed answers are lifetime counters (never lower, never null once
stored): derived from the models, so a field added to a model is guarded by default and a
field that may go down must be named here with the reason.

``COUNTERS`` is what the plausibility guard (plausible.py) compares; ``NOT_COUNTERS`` the named
exceptions. Rank and service stars are counters: they never go down.
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

from bf4ps.battlelog.models import DetailedStats, ProfileStats, VehicleItem, WeaponItem
from bf4ps.domain import Resource

MODELS: dict[Resource, type] = {
    Resource.DETAILED: DetailedStats,
    Resource.PROFILE: ProfileStats,
    Resource.WEAPONS: WeaponItem,
    Resource.VEHICLES: VehicleItem,
}

_RATIO = "a ratio of counters: it goes down whenever a round is worse than the career"
_SKILL = "Battlelog's skill rating goes up and down with results"
_CATALOG = "the catalogue's identity of the item, not a statistic"
_STAR_PROGRESS = "the share of the next service star: back to 0 when a star is earned"

# field -> why it is not a lifetime counter (every other field of a model is one)
NOT_COUNTERS: MappingProxyType[Resource, MappingProxyType[str, str]] = MappingProxyType({
    Resource.DETAILED: MappingProxyType({
        "skill": _SKILL,
        "accuracy_percent": _RATIO,
        "score_per_minute": _RATIO,
        "kills_per_minute": _RATIO,
        "quit_percentage": _RATIO,
    }),
    Resource.PROFILE: MappingProxyType({
        "battlelog_user_id": "the owning account's id, not a statistic",
        "clan_tag": "a name the player changes at will",
        "rank_name": "the rank's localisation key, checked through the rank",
        "current_rank_score": "the rank's threshold: a fixed table, it moves with the rank",
        "next_rank_score": "the next rank's threshold: a fixed table, none at the top rank",
        "skill": _SKILL,
        "score_per_minute": _RATIO,
        "kills_per_minute": _RATIO,
        "accuracy_percent": _RATIO,
        "top_weapons": "a ranking of items, each kept per item by the weapons resource",
        "top_vehicles": "a ranking of items, each kept per item by the vehicles resource",
        "progress": "completion bars whose maximum Battlelog changes with the unlocks shown",
        "linked_soldiers": "the account's other soldiers, not a statistic",
    }),
    Resource.WEAPONS: MappingProxyType({
        "guid": _CATALOG, "name": _CATALOG, "slug": _CATALOG, "category": _CATALOG,
        "code": _CATALOG,
        "accuracy_fraction": _RATIO,
        "service_stars_progress": _STAR_PROGRESS,
    }),
    Resource.VEHICLES: MappingProxyType({
        "guid": _CATALOG, "name": _CATALOG, "slug": _CATALOG, "category": _CATALOG,
        "code": _CATALOG,
        "service_stars_progress": _STAR_PROGRESS,
    }),
})


def derived(resource: Resource) -> tuple[str, ...]:
    """The model's fields that are not named exceptions, in the model's order."""
    resource = Resource(resource)
    skipped = NOT_COUNTERS[resource]
    return tuple(f.name for f in dataclasses.fields(MODELS[resource]) if f.name not in skipped)


COUNTERS: MappingProxyType[Resource, tuple[str, ...]] = MappingProxyType(
    {resource: derived(resource) for resource in MODELS})
