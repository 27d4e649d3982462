"""BF4's display names for Battlelog items (weapons, vehicles, gadgets) and their categories,
as the game and Battlelog show them ("SCAR-H", "MARE'S LEG", "F-35"), looked up by Battlelog's
item slug (data/item_names.toml). An item the catalogue lacks (a later Battlelog addition) is
reported by `missing_name` so a test can list it; the page then shows its slug upper-cased."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources


@dataclass(frozen=True, slots=True)
class NameCatalogue:
    weapons: dict[str, str]
    vehicles: dict[str, str]
    by_sid: dict[str, str]
    categories: dict[str, str]


@cache
def catalogue() -> NameCatalogue:
    raw = (resources.files("bf4ps.stats") / "data" / "item_names.toml").read_text("utf-8")
    data = tomllib.loads(raw)
    return NameCatalogue(weapons=dict(data["weapons"]), vehicles=dict(data["vehicles"]),
                         by_sid=dict(data["sid"]), categories=dict(data["categories"]))


def known_name(sid: str | None, slug: str | None) -> str | None:
    """The display name of an item, or None when the catalogue does not know it."""
    cat = catalogue()
    if sid and sid.strip() in cat.by_sid:
        return cat.by_sid[sid.strip()]
    key = (slug or "").strip().lower()
    if not key:
        return None
    return cat.weapons.get(key) or cat.vehicles.get(key)


def missing_name(sid: str | None, slug: str | None) -> bool:
    return known_name(sid, slug) is None


def display_name(sid: str | None, slug: str | None) -> str:
    """Known name; else the slug as the game would write it ('new-gun' -> 'NEW GUN'); else the
    localisation id without its prefix; else 'unknown'."""
    found = known_name(sid, slug)
    if found:
        return found
    if slug and slug.strip():
        return slug.strip().upper().replace("-", " ")
    if sid and sid.strip():
        return sid.strip().rsplit("NAME_", 1)[-1].replace("_", " ")
    return "unknown"


def category_display(category: str | None) -> str:
    """Battlelog's category string as players read it: 'Vehicle Air Jet Stealth' -> 'Stealth
    Jets'; an unknown one loses its 'Vehicle ' prefix."""
    if not category or not category.strip():
        return "Other"
    text = category.strip()
    known = catalogue().categories.get(text)
    if known:
        return known
    return text[len("Vehicle "):] if text.startswith("Vehicle ") else text
