"""The Battlelog simulator's bodies are a function of the persona and the growth alone, byte for
byte: pinned digests of a few soldiers' resources, searches and soldier boxes (a change of the
simulator's code that is meant to change them updates PINNED), and the JSON narrowing helpers."""

from __future__ import annotations

import hashlib

import orjson
import pytest

from bf4ps.domain import Platform
from bf4ps.sim.battlelog import detailed, distort, items, lookup, overview, snapshot
from bf4ps.sim.battlelog import jsonvalue as js
from bf4ps.sim.battlelog.config import ConfigError, SimConfig
from bf4ps.sim.personas import persona_id_for

NAMES = ("TheOnlyBond", "xX_Sniper_Xx", "Zed42")
PINNED = {
    "detailed": "bbca7036cd600f84",
    "profile": "d6bcdcabf7ff2153",
    "weapons": "088ee3b15c9dbac0",
    "vehicles": "52f6f85c27dab1ac",
    "distorted": "05d7f8c45bca7dd7",
    "search": "ebb66a8a1663a1ec",
    "soldiers": "7b864125d6f7f90e",
    "config": "90e5eecafcd86f80",
}


def _bodies() -> dict[str, list[bytes]]:
    bodies: dict[str, list[bytes]] = {key: [] for key in PINNED}
    registry = lookup.Registry()
    for name in NAMES:
        pid = persona_id_for(name, Platform.PC)
        for growth in (1.0, 1.5):
            snap = snapshot.take(pid, growth)
            bodies["detailed"].append(detailed.detailed_body(snap, 1))
            bodies["profile"].append(overview.overview_body(snap, 1, 77, growth > 1.0))
            bodies["weapons"].append(items.weapons_body(pid, 1, growth))
            bodies["vehicles"].append(items.vehicles_body(pid, 1, growth))
        bodies["distorted"].append(distort.distorted(bodies["detailed"][-1], "zeros", "detailed"))
        bodies["distorted"].append(distort.distorted(bodies["profile"][-1], "decrease", "profile"))
        bodies["search"].append(lookup.search_body(name))
        bodies["search"].append(lookup.search_body(name.replace("_", "\\_"), 3))
        registry.remember_name(name)
        user_id = lookup.user_id_for_name(name)
        bodies["soldiers"].append(
            lookup.soldiers_body(registry, user_id, lambda p: snapshot.take(p, 1.25)))
    config = SimConfig()
    bodies["config"].append(orjson.dumps(config.as_dict()))
    bodies["config"].append(orjson.dumps(config.update({"speed": "2", "search_cap": 5})))
    return bodies


def _digest(parts: list[bytes]) -> str:
    return hashlib.sha256(b"\0".join(parts)).hexdigest()[:16]


def test_the_bodies_of_a_seed_are_the_pinned_bytes() -> None:
    assert {key: _digest(parts) for key, parts in _bodies().items()} == PINNED


def test_narrowing_passes_the_value_itself_and_refuses_another_shape() -> None:
    value: js.JsonValue = {"a": [1, {"b": "c"}], "n": 2.5, "t": True}
    whole = js.obj(value)
    assert whole is value
    listed = js.arr(whole["a"])
    assert listed is whole["a"] and js.integer(listed[0]) == 1
    assert js.number(whole["n"]) == 2.5 and js.text(js.obj(listed[1])["b"]) == "c"
    assert js.array(range(3)) == [0, 1, 2]
    with pytest.raises(js.ShapeError, match="expected a JSON object, got list"):
        js.obj(whole["a"])
    with pytest.raises(js.ShapeError, match="array"):
        js.arr(whole)
    with pytest.raises(js.ShapeError, match="object, got int"):
        js.objs(whole["a"])
    with pytest.raises(js.ShapeError, match="string"):
        js.text(whole["n"])
    for wrong in (whole["t"], "3", None):  # a boolean is no number
        with pytest.raises(js.ShapeError):
            js.number(wrong)
    with pytest.raises(js.ShapeError):
        js.integer(whole["n"])


def test_a_refused_update_changes_no_knob() -> None:
    config = SimConfig()
    with pytest.raises(ConfigError, match="penalty must be >= 0"):
        config.update({"speed": 3, "penalty": -1})
    assert config == SimConfig()
    assert config.update({"speed": 3, "penalty": 60}) == {"speed": 3.0}
    assert config.speed == 3.0
