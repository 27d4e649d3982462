"""Every weapon, vehicle and gadget in the real Battlelog captures (tests/captures.py) and the
simulator's catalogue has a BF4 display name; the test lists any that would fall back
to its slug."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from bf4ps.sim.battlelog.templates import vehicles_template, weapons_template
from bf4ps.stats.item_names import catalogue, category_display, display_name, missing_name
from bf4ps.web.format import category_name, item_name
from tests import captures

ITEM_LISTS = ("mainWeaponStats", "mainVehicleStats", "topWeapons", "topVehicles")


def fixture_items() -> Iterator[tuple[str, dict[str, Any]]]:
    # the folders whose items the names were checked against (the unlock captures added later
    # list items without a name here yet: an-94, rpk-74m, knives, ...)
    for path in captures.json_files("2013-bf4intel") + captures.json_files("2020-battlelog-net"):
        data = orjson.loads(path.read_bytes()).get("data") or {}
        for key in ITEM_LISTS:
            for item in data.get(key) or []:
                yield f"{path.name}:{key}", item


def test_the_fixtures_hold_items() -> None:
    captures.require()
    assert sum(1 for _ in fixture_items()) > 190  # 136 weapons, 53 vehicles, top lists


def test_no_fixture_item_falls_back_to_its_slug() -> None:
    missing = sorted({f"{where} {item.get('slug')} ({item.get('name')})"
                      for where, item in fixture_items()
                      if missing_name(item.get("name"), item.get("slug"))})
    assert missing == [], "items without a BF4 display name:\n" + "\n".join(missing)


def test_no_simulator_item_falls_back_to_its_slug() -> None:
    items = weapons_template().items + vehicles_template().items
    assert len(items) > 250
    missing = sorted(f"{t.slug} ({t.base.get('name')})" for t in items
                     if missing_name(t.base.get("name"), t.slug))
    assert missing == [], "items without a BF4 display name:\n" + "\n".join(missing)


def test_every_category_has_a_display_name() -> None:
    cats = {str(item.get("category")).strip() for _, item in fixture_items()}
    cats |= {t.category.strip() for t in weapons_template().items + vehicles_template().items}
    assert sorted(c for c in cats if c not in catalogue().categories) == []


@pytest.mark.parametrize(("sid", "slug", "shown"), [
    ("WARSAW_ID_P_WNAME_FAMAS", "famas", "FAMAS"),
    ("WARSAW_ID_P_WNAME_SCARH", "scar-h", "SCAR-H"),
    ("WARSAW_ID_P_WNAME_SPAS12", "spas-12", "SPAS-12"),
    ("WARSAW_ID_P_WNAME_MARESLEG", "mares-leg", "MARE'S LEG"),
    ("WARSAW_ID_P_WNAME_PHANTOMBOW", "phantom-bow", "PHANTOM BOW"),
    ("WARSAW_ID_P_SP_WNAME_USAS12NV", "usas-12-flir", "USAS-12 FLIR"),
    ("WARSAW_ID_P_XP1_VNAME_F35", "f35", "F-35"),
    ("WARSAW_ID_P_XP1_VNAME_UCAV", "ucav1", "UCAV"),
    ("WARSAW_ID_P_VNAME_Z11", "z-11w1", "Z-11W"),
    ("WARSAW_ID_P_VNAME_CENTURION", "hj-8-launcher", "CENTURION C-RAM"),
    (None, "Scar-H ", "SCAR-H"),
])
def test_names_as_the_game_shows_them(sid: str | None, slug: str, shown: str) -> None:
    assert item_name(sid, slug) == shown


def test_an_unknown_item_is_written_from_its_slug_or_id() -> None:
    assert missing_name("WARSAW_ID_P_WNAME_NEWGUN", "new-gun")
    assert display_name("WARSAW_ID_P_WNAME_NEWGUN", "new-gun") == "NEW GUN"
    assert display_name("WARSAW_ID_P_XP4_WNAME_NEWGUN", None) == "NEWGUN"
    assert display_name(None, None) == "unknown"


def test_categories_as_players_read_them() -> None:
    assert category_name("Vehicle Air Jet Stealth") == "Stealth Jets"
    assert category_name("Gadgets Explosives") == "Explosives"
    assert category_name("Weapon Stationary ") == "Stationary Weapons"
    assert category_display("Vehicle Something New") == "Something New"
    assert category_display(None) == "Other"
